// A test fixture for users' jobs under faults: a local cluster of node processes for the test's
// lifetime and one call that runs a registered job under a schedule and returns the checker's
// report. Works as a Boost.Test fixture (BOOST_FIXTURE_TEST_CASE) or as a plain object.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include "tidemark/chaos/checker.hpp"
#include "tidemark/chaos/local_cluster.hpp"
#include "tidemark/chaos/runner.hpp"
#include "tidemark/runtime/job_registry.hpp"

namespace tidemark::chaos {

/// How one chaos run of the fixture goes.
struct run_settings {
  std::uint64_t seed = 1;
  /// Faults start within this long; the job then runs to its end.
  std::chrono::milliseconds duration{30000};
  /// 0: no checkpoints (every lost node fails the job).
  std::chrono::milliseconds checkpoint_interval{250};
  /// The run's directory; empty: `run-<n>` in the cluster's folder (removed with it).
  std::filesystem::path out;
  /// Options of the run under faults (threads, batch size, ...).
  run_options run;
  /// Operator name -> node id pins for this run (cluster_config::pins).
  std::map<std::string, std::string> pins;
  /// Gets a progress line every 5 s (chaos_options::progress); null: silent.
  std::function<void(const std::string&)> progress;
};

/// `nodes` local node processes (n1, n2, ...) from `node_binary`, which must serve the jobs the
/// test runs (tidemark-node for the built-in ones, the application's own node binary for its
/// jobs). With an empty `node_binary` the TIDEMARK_NODE_BIN environment variable names it, else
/// `tidemark-node` beside the test binary or on the PATH.
class cluster_fixture {
 public:
  explicit cluster_fixture(std::size_t nodes = 3, std::string node_binary = "");

  /// Runs `spec` with `options` under `schedule_yaml` (a schedule as text,
  /// docs/fault-injection.md) and returns the report; see run_chaos. Nodes killed or paused by
  /// the schedule are running again when it returns, so runs can follow each other.
  report run(const job_spec& spec, const job_options& options, const std::string& schedule_yaml,
             const run_settings& settings = {});

  local_cluster& nodes() noexcept { return cluster_; }

 private:
  local_cluster cluster_;
  int runs_ = 0;
};

}  // namespace tidemark::chaos
