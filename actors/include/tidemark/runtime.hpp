// Runs a job: validates its graph, compiles the physical plan, and executes it on a CAF actor
// system in this process (the embedded default), one actor per stage instance.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tidemark/job.hpp"
#include "tidemark/persistence/storage_service.hpp"
#include "tidemark/plan.hpp"
#include "tidemark/synchronizer.hpp"

namespace tidemark {

struct run_options {
  /// Elements per batch on channels between actors (4096 moved 40 % more events per second than
  /// 1024 in the pipeline and window benchmarks; the linger time bounds the latency cost).
  std::size_t batch_size = 4096;
  /// How long a partly filled output batch may wait before it is sent anyway.
  std::chrono::milliseconds linger{5};
  /// Batches in flight per channel (sent, not yet processed by the receiver).
  std::uint32_t credit = 8;
  /// Fuse forward chains of equal parallelism into one actor per instance.
  bool fuse = true;
  /// Scheduler threads; 0 means one per core.
  std::size_t threads = 0;
  /// Raise glibc's mmap and trim thresholds (process-wide, once) so that batch buffers freed on
  /// another thread stay in the heap instead of returning to the kernel.
  bool tune_malloc = true;
  /// Synchronizers in front of timezones (docs/timezones.md): the time slice they admit at once,
  /// their buffer, and a debug switch to turn them off.
  synchronizer_options synchronizers;
  /// Print the metrics summary to standard output at the end.
  bool print_summary = false;
  /// Write the JSON metrics report here at the end (empty: no report).
  std::string report_path;
  /// The node's storage service for tiered window state; null: the run starts one with
  /// `storage` (it opens WiredTiger only when a window asks for tiered state).
  std::shared_ptr<block_storage> state_storage;
  /// Settings of the storage service the run starts (data directory, memory budget, threads).
  persistence::storage_config storage;
};

/// Counters of one operator instance.
struct operator_metrics {
  std::string name;
  std::string op;
  std::uint32_t instance = 0;
  std::uint64_t events_in = 0;
  std::uint64_t events_out = 0;
  std::uint64_t batches_in = 0;
  std::uint64_t batches_out = 0;
  std::uint64_t skipped = 0;
  std::map<std::string, double> extra;  ///< operator-specific (operator_logic::add_metrics)
};

/// Counters of one stage instance (one actor running a fused chain of operators).
struct instance_metrics {
  std::uint32_t stage = 0;
  std::uint32_t instance = 0;
  std::vector<operator_metrics> operators;  ///< in chain order
  std::int64_t busy_ns = 0;                 ///< time spent running operator code
  std::uint64_t max_queued_batches = 0;     ///< most input batches waiting at once
};

struct job_result {
  std::string job;
  double seconds = 0;
  std::string plan;  ///< to_text of the physical plan
  std::vector<instance_metrics> instances;
  /// Most batches alive in the process at once during the run (see batch_gauge).
  std::int64_t peak_live_batches = 0;

  /// Totals per operator name, summed over its instances, in plan order.
  std::vector<operator_metrics> per_operator() const;
  /// A readable table: per operator, instances, events in/out, batches, busy time, queue.
  std::string summary() const;
  /// The full report as JSON.
  std::string to_json() const;
};

/// Validates, compiles and runs `j` to completion in this process. Throws job_error when the graph
/// is invalid (the message names the operator) or when an operator fails.
job_result run(const job& j, const run_options& opts = {});

}  // namespace tidemark
