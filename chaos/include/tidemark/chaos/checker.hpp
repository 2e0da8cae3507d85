// The chaos checker: compares the history of a run under faults with the history of a
// fault-free reference run of the same job, and measures what each fault did to the output.
// Pure: it reads only what it is given, so tests feed it hand-built histories.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tidemark/chaos/history.hpp"
#include "tidemark/chaos/schedule.hpp"

namespace tidemark::chaos {

/// A fault as it was applied: its schedule entry and wall-clock times (ms since the epoch).
struct applied_fault {
  fault planned;
  std::int64_t started_ms = 0;
  std::int64_t healed_ms = 0;  ///< 0: never healed (the run ended first)
  std::string note;            ///< what went wrong applying it, if anything
};

/// What the checker knows about the run besides its history.
struct run_facts {
  std::int64_t started_ms = 0;  ///< wall clock when the run started
  std::int64_t ended_ms = 0;
  std::optional<std::string> error;  ///< the job's error when the run failed
  std::uint32_t recoveries = 0;
};

enum class violation_kind {
  lost,            ///< in the reference, missing from the run (or fewer copies)
  repeated,        ///< more copies than in the reference
  wrong,           ///< same id and revision, another value (or a result the reference lacks)
  out_of_order,    ///< a revision committed after a higher revision of the same id
  watermark_back,  ///< a sink instance committed a watermark below one it committed before
};
const char* to_string(violation_kind k) noexcept;

struct violation {
  violation_kind kind = violation_kind::lost;
  std::string id;
  std::uint32_t revision = 0;
  std::string detail;
};

/// Emission-to-commit latency (history_entry::commit_ms - received_ms) of the results committed
/// within some interval: how many, and the nearest-rank percentiles (0 when there are none).
struct latency_summary {
  std::size_t results = 0;
  double p50_s = 0;
  double p99_s = 0;
};

/// What one fault did to the output.
struct fault_effect {
  applied_fault fault;
  double rate_before = 0;  ///< results committed per second in the 5 s before the fault
  double rate_during = 0;
  double rate_after = 0;            ///< in the 5 s after it was healed
  double longest_commit_gap_s = 0;  ///< between two commits, from its start to 5 s after it healed
  /// From healing until a 1 s window reaches half the rate before; nullopt: it never did (or
  /// there was no output before to compare with).
  std::optional<double> recovery_s;
  latency_summary latency_during;  ///< results committed from its start until it healed
  latency_summary latency_after;   ///< results committed in the 5 s after it healed
  /// From its start (from its healing) to the first result committed at or after it; nullopt:
  /// none was.
  std::optional<double> first_result_after_start_s;
  std::optional<double> first_result_after_heal_s;
};

/// Per second of the run: results committed, the longest wait between two commits and the
/// latency of the results committed in that second (0 when there were none).
struct timeline_point {
  double t_s = 0;
  double results = 0;
  double commit_gap_s = 0;
  double latency_p50_s = 0;
  double latency_p99_s = 0;
};

struct report {
  std::size_t reference_results = 0;
  std::size_t run_results = 0;
  std::size_t lost = 0, repeated = 0, wrong = 0, out_of_order = 0, watermark_back = 0;
  /// The first violations of each kind (at most `max_listed` each), in the order found.
  std::vector<violation> violations;
  std::vector<fault_effect> faults;
  std::vector<timeline_point> timeline;
  latency_summary latency;  ///< over every result of the run
  run_facts run;

  std::size_t violation_count() const noexcept {
    return lost + repeated + wrong + out_of_order + watermark_back;
  }
  /// No violation and the run did not fail.
  bool passed() const noexcept { return violation_count() == 0 && !run.error; }
  /// A few lines: counts, the run's error, the first violations, one line per fault.
  std::string summary(std::size_t first = 5) const;
  /// The whole report as JSON (docs/fault-injection.md lists the fields).
  std::string to_json() const;
};

/// Compares `run` with `reference` (both in commit order, as read_history returns them).
report check(const std::vector<history_entry>& reference, const std::vector<history_entry>& run,
             const std::vector<applied_fault>& faults, const run_facts& facts,
             std::size_t max_listed = 100);

/// Writes the report's timeline as a PNG: results per second, the commit gap and the latency,
/// faults as shaded bands with their names. Throws std::runtime_error naming `path` when it cannot.
void write_timeline_png(const report& r, const std::string& path);

/// The faults applied in a run, as JSON (what `tidemark chaos check` reads back), and back.
std::string faults_to_json(const std::vector<applied_fault>& faults, const run_facts& facts);
std::pair<std::vector<applied_fault>, run_facts> faults_from_json(const std::string& json);

}  // namespace tidemark::chaos
