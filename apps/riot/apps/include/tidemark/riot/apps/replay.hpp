// Stream replay for the RIoTBench applications: SenML messages of a dataset (CITY and TAXI from
// the sample files, FIT and GRID from seeded synthetic generators) replayed with temporal scaling
// (a speed factor on the recorded timing) or at a target rate shaped by the paper's rate profiles,
// and spatially scaled to N copies of every sensor with distinct ids, each shifted in time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tidemark/riot/dataset.hpp"

namespace tidemark::riot::apps {

/// How the input rate moves over time when a target rate is given (`rate` is the peak).
enum class rate_profile {
  constant,  ///< always the target rate
  paper,     ///< the dataset's shape in the paper (Fig. 5), see rate_factor()
};

/// "constant" or "paper"; throws std::invalid_argument naming the choices.
rate_profile parse_rate_profile(std::string_view name);

struct replay_config {
  riot::dataset dataset = riot::dataset::city;
  std::string data_dir = default_data_dir();
  /// Spatial scaling: copies of every sensor; copy k > 0 renames each id to "<id>-k" and shifts
  /// its messages by k/scale of the data's period (so the copies interleave instead of bursting).
  std::uint32_t scale = 1;
  /// Temporal scaling, used when `rate` is 0: the recorded gaps divided by `speed` (1 = real time).
  double speed = 1;
  /// Target (peak) rate in messages per second; 0 replays the recorded timing scaled by `speed`.
  double rate = 0;
  rate_profile profile = rate_profile::constant;
  /// Stop after this many messages, cycling through the data (each cycle shifted by one period);
  /// 0 = one pass over every copy.
  std::uint64_t messages = 0;
  /// Seed of the FIT and GRID generators.
  std::uint64_t seed = 42;
};

/// The dataset's SenML lines ("<epoch-ms>,<json>"), sorted by time: CITY and TAXI read from the
/// sample files; FIT and GRID generated (see synthetic_fit / synthetic_grid).
std::vector<std::string> dataset_lines(const replay_config& config);

/// FIT (synthetic): 10 subjects ("subject1".."subject10") at 50 Hz for `seconds`, every mhealth
/// schema channel around the sample's values with per-subject phase, motion and noise.
std::vector<std::string> synthetic_fit(const std::string& data_dir, std::uint64_t seed, double seconds = 20);
/// GRID (synthetic): `meters` smart meters ("meter-0".."meter-<n-1>"), one half-hourly reading each
/// per half hour for `half_hours`, times normally distributed (sd 3 min) around each half hour,
/// consumption log-normal within the range filter's 1.8..36.7 kWh.
std::vector<std::string> synthetic_grid(std::uint64_t seed, std::uint32_t meters = 6435, std::uint32_t half_hours = 1);

/// The rate factor in (0, 1] of the paper's profile of `d` at `seconds` into the run (one cycle
/// of the shape every 10 s): CITY narrow around the peak, FIT constant, GRID a normal burst per
/// (compressed) half hour, TAXI bimodal (night 300/4000, day around 3200/4000 up to the peak).
double rate_factor(riot::dataset d, double seconds);

/// One message to emit.
struct scheduled_message {
  std::int64_t msg_id = 0;  ///< 1, 2, ...
  std::int64_t due_ns = 0;  ///< when to emit it, after the start of the replay
  std::int64_t time = 0;    ///< its event time (SenML base time), epoch ms
  std::string line;         ///< "<time>,<json>" with the copy's id and time
};

/// The replay order and timing: copies merged by event time, cycles appended. Pure: no clock.
class replay_schedule {
 public:
  explicit replay_schedule(const replay_config& config);

  /// Messages it produces in total.
  std::uint64_t size() const noexcept { return total_; }
  /// Copies of each sensor id ("<id>" for copy 0, "<id>-k" for the others).
  static std::string copy_id(std::string_view id, std::uint32_t copy);
  /// The distinct sensor ids of the base data (before scaling).
  const std::vector<std::string>& base_ids() const noexcept { return base_ids_; }
  /// The data's period: span of the event times plus one mean gap (ms).
  std::int64_t period_ms() const noexcept { return period_; }

  /// The next message, or nullopt after size() messages.
  std::optional<scheduled_message> next();

  /// Where the schedule stands (for checkpoints): a schedule built from the same config and
  /// moved there with seek() continues with the same messages at the same due times.
  struct position {
    std::uint64_t emitted = 0;  ///< messages produced so far
    std::int64_t due_ns = 0;    ///< due time of the next message under a target rate
    /// (copy, index across cycles) of the next record of every copy that has one
    std::vector<std::pair<std::uint32_t, std::uint64_t>> cursors;
  };
  position tell() const;
  /// Throws std::invalid_argument when `p` cannot come from a schedule of this config.
  void seek(const position& p);

 private:
  struct record {
    std::int64_t time;
    std::string head, id, middle, tail;  // json = head + id + middle + bt + tail
  };
  struct cursor {
    std::int64_t time;
    std::uint32_t copy;
    std::uint64_t index;  // cycle * records + record
  };

  std::int64_t time_of(const cursor& c) const;
  static bool later(const cursor& a, const cursor& b) noexcept;

  replay_config config_;
  std::vector<record> records_;
  std::vector<std::string> base_ids_;
  std::vector<cursor> heap_;
  std::int64_t first_ = 0, period_ = 1;
  std::uint64_t total_ = 0, emitted_ = 0;
  std::int64_t due_ns_ = 0;
};

}  // namespace tidemark::riot::apps
