// The chaos runner behind `tidemark chaos run` and the chaos fixture: a fault-free reference run
// of a job, then the same job on a cluster while a schedule's faults are applied, both recording
// histories, then the checker. Everything lands in one output directory that
// `tidemark chaos check DIR` can check again.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tidemark/chaos/checker.hpp"
#include "tidemark/chaos/local_cluster.hpp"
#include "tidemark/chaos/netem.hpp"
#include "tidemark/chaos/schedule.hpp"
#include "tidemark/runtime/cluster.hpp"
#include "tidemark/runtime/faults.hpp"
#include "tidemark/runtime/job_registry.hpp"

namespace tidemark::chaos {

/// Sends a fault command to one node (tidemark::inject_faults in production; tests may record).
using fault_injector =
    std::function<void(const cluster_config&, const std::string& node, const fault_command&)>;

/// tidemark::inject_faults: the coordinator's key sends the command, the node applies it to its
/// links and stores (it must run with --allow-faults, the cluster file say `faults: allow`).
fault_injector default_injector();

struct chaos_options {
  /// The run's directory: reference/ and history/ (the histories), checkpoints/, faults.json,
  /// report.json, timeline.png. Must not hold an earlier run.
  std::filesystem::path out;
  /// Seed of the random faults and of the nodes' fault draws.
  std::uint64_t seed = 0;
  /// Faults start within [0, duration) of the run; afterwards every fault is healed and the run
  /// goes on until the job ends.
  std::chrono::milliseconds duration{60000};
  /// Checkpoints of the run under faults (0: none, so every lost node fails the job).
  std::chrono::milliseconds checkpoint_interval{1000};
  /// Options of the run under faults (batch size, threads, ...); checkpoints are set from above.
  run_options run;
  /// Process faults (kill, pause, restart) act on these nodes; null: they are refused.
  local_cluster* processes = nullptr;
  /// Network and storage faults go through this; null: they are refused.
  fault_injector inject;
  /// Nodes in network namespaces: node id -> the device its traffic leaves by, where netem
  /// faults act. A netem fault on a node without one is refused, and so is a schedule with netem
  /// faults when netem_unavailable says why it cannot work here.
  std::map<std::string, netns_device> netns;
  /// Runs the tc commands of netem faults (tests may record them instead).
  command_runner run_tc = run_command;
  /// Gets a progress line every `progress_period` (elapsed, faults applied, results so far).
  std::function<void(const std::string&)> progress;
  std::chrono::milliseconds progress_period{5000};
};

/// Runs the reference (`spec` embedded with `options`, its `rate` option set to 0 when it has
/// one, no faults) and then the run under `faults` on `cluster`, with the job's `history` option
/// pointing into `opts.out`; writes faults.json, report.json and timeline.png there and returns
/// the checker's report. A run that fails is reported (its error, the results it lost), not
/// thrown. Throws std::runtime_error before anything runs when the job has no `history` option
/// (naming the job), when `out` holds an earlier run, or when a fault cannot be applied here
/// (process faults without `processes`, network or storage faults without `inject` or on a
/// cluster without `faults: allow`, netem faults on nodes without a namespace or where netem does
/// not work), naming it; and when the reference run fails.
report run_chaos(const job_spec& spec, const job_options& options, const cluster_config& cluster,
                 const std::vector<fault>& faults, const chaos_options& opts);

/// Checks the run recorded in `out` again (its histories and faults.json), rewrites report.json
/// and timeline.png, and returns the report.
report check_run(const std::filesystem::path& out);

/// The fault command node `node` must have while the faults `active` hold (their union: the
/// highest probability and delay of each link, every unreachable peer, the slowest disk).
fault_command command_for(const std::string& node, const std::vector<const fault*>& active,
                          const cluster_config& cluster, std::uint64_t seed);

}  // namespace tidemark::chaos
