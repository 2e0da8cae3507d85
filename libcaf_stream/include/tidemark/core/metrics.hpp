// What a run reports: counters per operator instance and per stage instance, and the job's result
// with its summary table and JSON report. Plain data, so tools (replication's measured annotations)
// read run results without linking the runtime.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tidemark {

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
  std::uint64_t queued_batches = 0;         ///< input batches waiting now (live views)
  /// Sealed batches waiting for credit on the outputs now: above zero, a receiver holds the stage
  /// back (backpressure).
  std::uint64_t blocked_batches = 0;
  /// The highest watermark the stage passed on (for a stage without outputs, the one its inputs
  /// agreed on); INT64_MIN before the first.
  std::int64_t watermark = INT64_MIN;
};

/// One completed checkpoint of a run.
struct checkpoint_metrics {
  std::uint64_t id = 0;
  double duration_ms = 0;   ///< from the barriers' injection to the last piece being durable
  double alignment_ms = 0;  ///< longest barrier alignment of a stage instance
  std::uint64_t bytes = 0;  ///< state written, over all pieces
  std::uint32_t pieces = 0;
};

struct job_result {
  std::string job;
  double seconds = 0;
  std::string plan;  ///< to_text of the physical plan
  std::vector<instance_metrics> instances;
  /// Most batches alive in the process at once during the run (see batch_gauge).
  std::int64_t peak_live_batches = 0;
  /// The checkpoint this run resumed from (0: it started from the beginning).
  std::uint64_t restored_from = 0;
  /// Times a cluster run restarted from its latest checkpoint after losing a node.
  std::uint32_t recoveries = 0;
  /// Per replica copy a cluster run restored after a takeover, or made again after it was dropped
  /// for lagging (docs/replication.md, "Restoring the replication level"): seconds from noticing
  /// the loss to the new copy having caught up at every receiver.
  std::vector<double> restores;
  /// Checkpoints completed during the run, in order.
  std::vector<checkpoint_metrics> checkpoints;
  /// Checkpoints that failed because their state could not be written (a full or failing disk),
  /// and the first one's error, which names the directory and the system's error text.
  std::uint32_t failed_checkpoints = 0;
  std::string checkpoint_failure;
  /// What weakens the run's guarantees (a source that cannot replay makes it at-least-once).
  std::vector<std::string> warnings;
  /// A cluster run's node reports (job_spec::node_report) by node id; empty when embedded.
  std::map<std::string, std::string> node_reports;

  /// Totals per operator name, summed over its instances, in plan order.
  std::vector<operator_metrics> per_operator() const;
  /// A readable table: per operator, instances, events in/out, batches, busy time, queue.
  std::string summary() const;
  /// The full report as JSON.
  std::string to_json() const;
};

}  // namespace tidemark
