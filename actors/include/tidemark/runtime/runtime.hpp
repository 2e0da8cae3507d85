// Runs a job: validates its graph, compiles the physical plan, and executes it on a CAF actor
// system in this process (the embedded default), one actor per stage instance.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tidemark/core/job.hpp"
#include "tidemark/core/metrics.hpp"
#include "tidemark/persistence/storage_service.hpp"
#include "tidemark/core/plan.hpp"
#include "tidemark/core/synchronizer.hpp"

namespace tidemark {

class live_view;

/// Periodic checkpoints of a run and resuming from them (docs/fault-tolerance.md).
struct checkpoint_options {
  /// The checkpoint database (a WiredTiger home, created when missing); empty: no checkpoints.
  std::string dir;
  /// Time between the start of one checkpoint and the next; 0: no checkpoints.
  std::chrono::milliseconds interval{1000};
  /// Continue from the newest usable checkpoint in `dir` (from the beginning when there is none).
  /// Without it, a run refuses a `dir` that holds checkpoints, so that one is never overwritten
  /// by accident.
  bool resume = false;
  /// Completed checkpoints kept.
  std::uint32_t retain = 3;
  /// Unaligned checkpoints: a stage takes its part when the first barrier reaches it, the barrier
  /// overtakes the batches queued in front of it (on the stage's inputs and outputs) and those are
  /// stored with the piece, so a checkpoint completes under backpressure in the time a barrier
  /// takes to cross the job, not the time the queues take to drain. Every stream must have a
  /// tidemark::codec; refused with replicas and the deterministic merge (fault-tolerance.md).
  bool unaligned = false;
  /// A checkpoint that cannot be written (a full or failing disk) fails and the job goes on;
  /// this many failures in a row fail the job (0: never). Ten: ten seconds at the default
  /// interval, long enough to ride out a transient fault, short enough that a full disk is not
  /// left unattended while the replay after a crash grows.
  std::uint32_t max_consecutive_failures = 10;
  /// What decides the job's content besides its plan (a registered job's option values, set by
  /// run_registered and run_on_cluster). Part of the checkpoints' fingerprint, so a resume with
  /// other options (say, other `--events`) is refused instead of mixing two inputs.
  std::string job_settings;

  bool enabled() const noexcept { return !dir.empty() && interval.count() > 0; }
};

struct run_options {
  /// Elements per batch on channels between actors (4096 moved 40 % more events per second than
  /// 1024 in the pipeline and window benchmarks; adaptive batching and the linger time bound the
  /// latency cost).
  std::size_t batch_size = 4096;
  /// How long a partly filled output batch may wait before it is sent anyway.
  std::chrono::milliseconds linger{5};
  /// Adaptive batching: a partly filled output batch goes out as soon as its stage has nothing
  /// more to do right now (its mailbox is empty, or its source's pull emitted fewer than
  /// `batch_size`) while fewer than `credit/2` batches of its channel are in flight, instead of
  /// waiting for `linger`. Under load a stage has more input waiting or its receiver is busy, so
  /// batches fill; a trickle goes on element by element, at once. A full batch to a receiver in
  /// the same process then holds at most what the receiver works through in `linger / credit`
  /// (at least 1 ms / credit), learnt from the pace of its credit, so a flood queues about
  /// `linger` of work in front of each receiver however slow its elements. `linger` still bounds
  /// a stage that is never idle (a source whose filter drops most of each full pull). false:
  /// fixed batching, a batch is sent at `batch_size`, after `linger` or in front of a signal.
  bool adaptive_batching = true;
  /// Batches in flight per channel (sent, not yet processed by the receiver); 0: as many as hold
  /// `credit_elements` elements of `batch_size`, at least 2 and at most 128 (channel_credit()).
  std::uint32_t credit = 0;
  /// With `credit` 0, the elements in flight per channel: 8 batches at the default batch size,
  /// 128 at batch 1. Credit counted in batches alone would either starve small batches (8
  /// one-element batches in flight: a round trip of credit per 8 elements) or hold much memory
  /// in flight with large ones.
  std::uint64_t credit_elements = 8 * 4096;
  /// The credit of every channel in batches: `credit`, or derived from `credit_elements`.
  std::uint32_t channel_credit() const noexcept;
  /// Fuse forward chains of equal parallelism into one actor per instance.
  bool fuse = true;
  /// Stages with several inputs hand them to their operators in an order that depends only on
  /// what each input carries, never on arrival timing (docs/replication.md, "Deterministic
  /// merge"): what a replica of a multi-input operator needs to emit what its primary emits. Every
  /// input of such a stage must carry watermarks or end: an idle input holds the merge.
  bool deterministic_merge = false;
  /// Items (batches and signals) a sender keeps waiting for a receiver's replica when the replica
  /// has no credit left. The sender never waits for a replica: one that falls further behind is
  /// dropped for good, named in the log and the result's warnings (docs/replication.md).
  std::uint32_t replica_lag = 256;
  /// Elements a sender keeps, per output slot towards a replicated receiver, of what it sent since
  /// the last completed checkpoint's barrier, to catch up a copy of the receiver restored from
  /// that checkpoint after a takeover (docs/replication.md, "Restoring the replication level").
  /// Kept only on a cluster run with checkpoints. Past the bound the slot's log is dropped until
  /// its next barrier: a restore from before then is given up with a warning.
  std::uint64_t replay_limit = 1'000'000;
  /// Scheduler threads; 0 means one per core.
  std::size_t threads = 0;
  /// Tune glibc's heap at the start of the run (tidemark::tune_heap, runtime/heap.hpp): batch
  /// buffers freed on another thread stay in the heap, and one malloc arena per core bounds it.
  bool tune_malloc = true;
  /// Synchronizers in front of timezones (docs/timezones.md): the time slice they admit at once,
  /// their buffer, and a debug switch to turn them off.
  synchronizer_options synchronizers;
  /// Print the metrics summary to standard output at the end.
  bool print_summary = false;
  /// Write the JSON metrics report here at the end (empty: no report).
  std::string report_path;
  /// Refreshed with every stage instance's counters every `live_period` while the job runs (for
  /// the progress line, /metrics and the dashboard); null: no live view, no polling.
  std::shared_ptr<live_view> live;
  std::chrono::milliseconds live_period{500};
  /// Set to true from any thread to end the run early (within about 100 ms): the job is stopped
  /// and the result holds the counters of the instances that had finished, with a warning that it
  /// was stopped; the live view holds the latest of all. Null: the job runs to its end.
  std::shared_ptr<const std::atomic<bool>> stop;
  /// The node's storage service for tiered window state; null: the run starts one with
  /// `storage` (it opens WiredTiger only when a window asks for tiered state).
  std::shared_ptr<block_storage> state_storage;
  /// Settings of the storage service the run starts (data directory, memory budget, threads).
  persistence::storage_config storage;
  /// Checkpoints (off unless `checkpoints.dir` is set).
  checkpoint_options checkpoints;
};

/// Validates, compiles and runs `j` to completion in this process. Throws job_error when the graph
/// is invalid (the message names the operator) or when an operator fails.
job_result run(const job& j, const run_options& opts = {});

}  // namespace tidemark
