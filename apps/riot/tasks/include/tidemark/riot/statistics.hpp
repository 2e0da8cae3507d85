// RIoTBench statistics tasks: block (count) average (AVG), accumulator (ACC), LogLog distinct
// count (DAC), Kalman filter (KAL), second-order moment (SOM) and interpolation (INP).
// Stateful tasks keep their state per key in a small `state` struct with a const `step`, so a keyed
// stream operator can hold the state; `process` is the keyed form that owns one state per
// sensor id + field, as the RIoTBench bolts did.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tidemark/core/codec.hpp"
#include "tidemark/core/error.hpp"
#include "tidemark/riot/dataset.hpp"
#include "tidemark/riot/detail/keyed_states.hpp"
#include "tidemark/riot/observation.hpp"
#include "tidemark/riot/rejecting_task.hpp"

namespace tidemark::riot {

/// The observables RIoTBench's statistics tasks use per dataset (USE_MSG_FIELD lists): CITY's 5,
/// TAXI's 8 numeric fare/trip fields, FIT's 11 channels, GRID's energyconsumed.
std::vector<std::string> statistics_fields(dataset d);

// ---- block average ---------------------------------------------------------------------------

struct block_average_config {
  /// AGGREGATE.BLOCK_COUNT.WINDOW_SIZE: CITY 5, others 10.
  std::size_t window_size = 10;
  /// AGGREGATE.BLOCK_AVERAGE.USE_MSG_FIELD.
  std::vector<std::string> fields;
  static block_average_config for_dataset(dataset d);
};

/// Mean of each tumbling block of `window_size` values.
class block_average {
 public:
  struct state {
    double sum = 0;
    std::size_t count = 0;
  };

  explicit block_average(block_average_config config);

  state initial() const { return {}; }
  /// Adds `x`; returns the block's mean when this value completes it (and starts the next block).
  std::optional<double> step(state& s, double x) const;
  /// Whether `o` is one of the averaged fields and has a usable value.
  bool accepts(const observation& o) const;
  /// The "AVG" observation (the block's mean as value, meta "<meta>,<field>") when `o` completes
  /// the block held in `s`; made from `o` itself (a caller that is done with it moves it in).
  std::optional<observation> process(state& s, observation o) const;
  /// The same, keyed by sensor id + field.
  std::optional<observation> process(const observation& o);

 private:
  block_average_config config_;
  detail::keyed_states<state> states_;
};

// ---- accumulator -----------------------------------------------------------------------------

struct accumulator_config {
  /// AGGREGATE.ACCUMLATOR.TUPLE_WINDOW_SIZE: inputs per emitted window (CITY 20, TAXI 10, FIT 20,
  /// GRID 8000).
  std::size_t window_size = 20;
  /// AGGREGATE.ACCUMLATOR.MULTIVALUE_OBSTYPE: obs types whose value is a '#'-joined list.
  std::vector<std::string> multivalue_types{"SLR"};
  static accumulator_config for_dataset(dataset d);
};

struct timed_value {
  std::int64_t time = 0;
  double value = 0;
  TIDEMARK_FIELDS(time, value)
  friend bool operator==(const timed_value& a, const timed_value& b) {
    return a.time == b.time && a.value == b.value;
  }
};

/// One emitted window: sensor id + obs type -> original field (last meta element) -> values in
/// time order (stable for equal times). Ordered maps with transparent lookup by string_view.
using accumulated =
    std::map<std::string, std::map<std::string, std::vector<timed_value>, std::less<>>, std::less<>>;

/// Collects observations and emits them grouped every `window_size` inputs.
class accumulator : public rejecting_task {
 public:
  explicit accumulator(accumulator_config config);

  /// Adds `o`; returns the window when it completes. A non-numeric value is an error (the input
  /// still counts towards the window).
  expected<std::optional<accumulated>> process(const observation& o);

 private:
  accumulator_config config_;
  accumulated current_;
  std::size_t count_ = 0;
  std::string key_;  // scratch: sensor id + obs type
  std::vector<std::string_view> parts_;  // scratch: multi-value elements
};

// ---- distinct approximate count ---------------------------------------------------------------

struct distinct_count_config {
  /// AGGREGATE.DISTINCT_APPROX_COUNT.BUCKETS: k, for 2^k buckets (10 in every dataset).
  unsigned bucket_bits = 10;
  static distinct_count_config for_dataset(dataset d);
};

/// Durand-Flajolet LogLog over 64-bit XXH3 hashes: bucket = low k bits, rank = 1 + trailing zeros
/// of the rest; estimate alpha_m * m * 2^(mean rank). Below 2.5 m distinct items, while buckets
/// are still empty, it uses linear counting m ln(m / empty) instead (LogLog alone is biased there).
class distinct_count {
 public:
  explicit distinct_count(distinct_count_config config);

  /// Adds `item`; returns the running estimate of distinct items seen.
  double process(std::string_view item);
  double estimate() const;
  /// The relative standard error of the LogLog estimate, 1.30 / sqrt(m).
  double standard_error() const;

 private:
  unsigned bits_;
  std::vector<std::uint8_t> ranks_;
  std::uint64_t rank_sum_ = 0;
  std::size_t empty_;
  double alpha_;
};

// ---- Kalman filter -----------------------------------------------------------------------------

struct kalman_config {
  double process_noise = 0.125;  ///< q
  double sensor_noise = 0.32;    ///< r
  double initial_error = 30;     ///< p0 (ESTIMATED_ERROR)
  double initial_estimate = 0;   ///< x0
  /// STATISTICS.KALMAN_FILTER.USE_MSG_FIELDLIST.
  std::vector<std::string> fields;
  static kalman_config for_dataset(dataset d);
};

/// Scalar random-walk Kalman filter: p += q; K = p / (p + r); x += K (z - x); p *= 1 - K.
class kalman_filter {
 public:
  struct state {
    double estimate;
    double error;
  };

  explicit kalman_filter(kalman_config config);

  state initial() const { return {config_.initial_estimate, config_.initial_error}; }
  /// Folds measurement `z` into `s`; returns the new estimate.
  double step(state& s, double z) const;
  bool accepts(const observation& o) const;
  /// The observation with its value replaced by the estimate (configured fields only); `o` itself
  /// (a caller that is done with it moves it in).
  std::optional<observation> process(state& s, observation o) const;
  /// Keyed by sensor id + field, in place: replaces the value of a configured field by its
  /// estimate and returns true; returns false and leaves other fields alone (a 1:1 transform
  /// needs no copy).
  bool process(observation& o);

 private:
  kalman_config config_;
  detail::keyed_states<state> states_;
};

// ---- second-order moment -----------------------------------------------------------------------

struct second_order_moment_config {
  /// STATISTICS.MOMENT.MAX_HASHMAPSIZE: the number of AMS estimators (10).
  std::size_t estimators = 10;
  /// Seed of the position sampling, so runs are repeatable.
  std::uint64_t seed = 1;
  static second_order_moment_config for_dataset(dataset d);
};

/// Alon-Matias-Szegedy estimate of the second frequency moment F2 = sum of squared value counts:
/// each estimator samples a uniformly random stream position (reservoir sampling), counts r, the
/// occurrences of that position's value from there on, and contributes n (2r - 1); the output is
/// the mean over the estimators.
class second_order_moment {
 public:
  explicit second_order_moment(second_order_moment_config config);

  /// Adds `value`; returns the running F2 estimate.
  double process(std::string_view value);

 private:
  struct estimator {
    std::string value;
    std::uint64_t count = 0;
  };
  std::vector<estimator> estimators_;
  std::uint64_t n_ = 0;
  std::mt19937_64 rng_;
};

// ---- interpolation -----------------------------------------------------------------------------

struct interpolation_config {
  /// STATISTICS.INTERPOLATION.USE_MSG_FIELD(_LIST): fields whose missing values are filled.
  std::vector<std::string> fields;
  /// STATISTICS.INTERPOLATION.WINDOW_SIZE: valid values remembered per sensor and field.
  std::size_t window_size = 5;
  static interpolation_config for_dataset(dataset d);
};

/// Fills a missing value with the mean of the last `window_size` valid values of the same sensor
/// and field; valid values pass unchanged and enter the window.
class interpolation {
 public:
  /// The last valid values in a ring. A vector, not a deque: an empty one allocates nothing, and
  /// a keyed table holds an empty state in every free slot (libstdc++'s deque allocates ~600
  /// bytes even when empty, so a table of 100,000s of sensor fields spent most of its time and
  /// memory on empty deques).
  struct state {
    std::vector<double> window;
    std::uint32_t next = 0;  // the slot the next value overwrites once the window is full
  };

  explicit interpolation(interpolation_config config);

  state initial() const { return {}; }
  /// Fills or records `o` in `s`. Returns false when `o` is missing and `s` has no history (it stays
  /// missing).
  bool step(state& s, observation& o) const;
  /// Whether `o` is of a configured field (others pass unchanged).
  bool accepts(const observation& o) const;
  /// Keyed by sensor id + field; observations of other fields pass unchanged.
  bool process(observation& o);

 private:
  interpolation_config config_;
  detail::keyed_states<state> states_;
};

}  // namespace tidemark::riot
