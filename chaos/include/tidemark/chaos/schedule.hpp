// Fault schedules of `tidemark chaos run` and the chaos fixture: scripted faults (at t, fault,
// targets, duration) and random ones drawn from a seed, read from YAML and expanded into one
// time-ordered list. docs/fault-injection.md describes the file.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tidemark::chaos {

/// What a fault does. Process faults (kill, pause, restart) need nodes the tool started itself;
/// the others go to the nodes as fault commands (tidemark/runtime/faults.hpp).
enum class fault_kind {
  kill,         ///< SIGKILL; started again after `duration` (none: it stays down)
  pause,        ///< SIGSTOP, SIGCONT after `duration`
  restart,      ///< SIGTERM (an orderly stop), started again after `duration`
  partition,    ///< the sides cannot reach each other for `duration`
  drop,         ///< frames the targets send are dropped with `probability`
  delay,        ///< frames the targets send wait `delay` plus up to `jitter`
  duplicate,    ///< frames the targets send are sent twice with `probability`
  reorder,      ///< frames the targets send are held back behind the next with `probability`
  slow_disk,    ///< every store write of the targets waits `delay`
  disk_errors,  ///< store writes of the targets fail (EIO) with `probability`
  /// tc netem on the targets' network device (nodes in network namespaces): `delay`, `jitter`
  /// and a loss (`probability`) on everything they send
  netem,
};

/// The schedule's name of a kind: "kill", ..., "slow-disk", "disk-errors", "netem".
std::string_view to_string(fault_kind k) noexcept;
/// The kind of a schedule name, or nullopt.
std::optional<fault_kind> parse_fault_kind(std::string_view name) noexcept;
/// kill, pause and restart: signals to local processes.
bool is_process_fault(fault_kind k) noexcept;

/// One fault of a schedule: applied `at` after the run started, healed `duration` later.
struct fault {
  fault_kind kind = fault_kind::kill;
  std::chrono::milliseconds at{0};
  /// 0: a kill stays down; every other kind needs a duration.
  std::chrono::milliseconds duration{0};
  /// The nodes it happens to; for a partition without `sides`, these nodes are cut off from
  /// everyone else (the coordinator included).
  std::vector<std::string> targets;
  /// Partition only: groups of node ids ("coordinator" for the coordinator) that cannot reach the
  /// other groups; nodes in no group still reach everyone.
  std::vector<std::vector<std::string>> sides;
  /// Link faults only: the peers whose links are affected (empty: every peer).
  std::vector<std::string> peers;
  double probability = 0;               ///< drop, duplicate, reorder, disk-errors; netem's loss
  std::chrono::milliseconds delay{0};   ///< delay, slow-disk, netem
  std::chrono::milliseconds jitter{0};  ///< delay, netem
  /// Where it comes from, for messages and the report: "faults[3]" or "random #4".
  std::string origin;
};

/// Random faults drawn from a seed over chosen kinds.
struct random_faults {
  std::vector<fault_kind> kinds;
  /// Time between the starts of two random faults, drawn uniformly from [min, max].
  std::chrono::milliseconds every_min{4000}, every_max{8000};
  /// Duration of each, drawn uniformly from [min, max].
  std::chrono::milliseconds duration_min{1000}, duration_max{3000};
  /// When the first may start.
  std::chrono::milliseconds start{0};
  /// Nodes to choose from (empty: every node of the cluster).
  std::vector<std::string> targets;
  /// Overrides the seed of the run.
  std::optional<std::uint64_t> seed;
  double probability = 0.2;              ///< of drop, duplicate, reorder, disk-errors; netem loss
  std::chrono::milliseconds delay{100};  ///< of delay, slow-disk and netem
  std::chrono::milliseconds jitter{50};  ///< of delay and netem
};

struct schedule {
  std::string source;  ///< the file name (or what the text was called) for messages
  std::vector<fault> scripted;
  std::optional<random_faults> random;
};

/// "250ms", "5s", "1.5s", "2m" (a bare number is milliseconds). Throws std::invalid_argument.
std::chrono::milliseconds parse_duration(std::string_view text);

/// Reads a schedule from YAML text; `source` names it in errors. Throws std::runtime_error
/// naming the source, the entry (`faults[2]`, `random`) and the field.
schedule parse_schedule(const std::string& yaml, const std::string& source);
/// Reads a schedule file; errors as parse_schedule, naming the file.
schedule load_schedule(const std::string& path);

/// The faults of `s` that start within [0, length), ordered by start: the scripted ones and the
/// random ones drawn from `seed` (or the schedule's own seed). The same arguments always give
/// the same list. Throws std::runtime_error naming the entry when a target or side names a node
/// that is not in `nodes`, or a random schedule has no node to choose from.
std::vector<fault> expand(const schedule& s, std::uint64_t seed, std::chrono::milliseconds length,
                          const std::vector<std::string>& nodes);

/// One line: "12.5s kill n2 for 2s (faults[1])".
std::string describe(const fault& f);

}  // namespace tidemark::chaos
