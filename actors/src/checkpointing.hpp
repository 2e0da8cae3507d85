// The driver's side of checkpoints: starts one every interval (the caller sends its barrier to
// the source stages: local actors, or nodes on a cluster), stores the pieces the stage instances
// send back, and records the checkpoint once every instance sent its piece (the caller then tells
// every stage to commit). It also finds the checkpoint a resumed run starts from. Pieces and
// records are written in order on a writer thread of the driver's, never on a stage's nor on the
// driver's own thread, so neither processing nor the driver's loop (the coordinator's heartbeats)
// waits for a synced write. The embedded driver and the cluster coordinator share it; on a
// cluster every piece is also copied to other nodes (ship_copies), and a checkpoint is recorded
// only once those copies are durable too.
//
// A checkpoint whose piece or record cannot be written (a full or failing disk) fails: it is
// counted with its error, never recorded, the job goes on and the next one starts at the next
// interval; the previous completed checkpoint stays the one to restore. A store whose WiredTiger
// connection panicked (what a failed log write does) is reopened for the next attempt.
// `checkpoint_options::max_consecutive_failures` failures in a row fail the job.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "deploy.hpp"
#include "tidemark/persistence/checkpoint_store.hpp"
#include "tidemark/core/metrics.hpp"
#include "tidemark/runtime/runtime.hpp"

namespace tidemark::detail {

class write_queue;

class checkpoint_driver {
 public:
  /// Checkpoints of job `job` with plan text `plan` (its fingerprint must match on resume);
  /// `instances` stage instances each send a piece. Does nothing when `opts` is not enabled.
  checkpoint_driver(const checkpoint_options& opts, std::string job, const std::string& plan,
                    std::size_t instances);
  ~checkpoint_driver();
  checkpoint_driver(const checkpoint_driver&) = delete;
  checkpoint_driver& operator=(const checkpoint_driver&) = delete;

  bool enabled() const noexcept { return enabled_; }
  /// The fingerprint of the job's plan and settings that its checkpoints carry.
  const std::string& plan_fingerprint() const noexcept { return plan_; }

  /// Copies on other nodes (cluster file `checkpoint: {copies: N}`): how the coordinator sends
  /// them. A checkpoint then completes (its record written, collect() reporting it) only once
  /// the driver's own pieces and every holder's copies are durable.
  struct copy_shipping {
    /// Sends the piece of (stage, instance) of checkpoint `id` to the nodes that keep a copy of
    /// it; returns their names.
    std::function<std::vector<std::string>(std::uint64_t id, std::uint32_t stage,
                                           std::uint32_t instance, const std::string& bytes)>
        piece;
    /// Every piece of checkpoint `id` was sent: `holder` is to record the `pieces` it got.
    std::function<void(std::uint64_t id, const std::string& holder, std::uint32_t pieces)> record;
  };
  /// Ships every piece from now on; a checkpoint whose copies are not all durable within
  /// `timeout` after its last piece fails (a slow holder delays the checkpoints, never the job).
  void ship_copies(copy_shipping shipping, std::chrono::milliseconds timeout);
  /// Holder `holder` answered for its copies of checkpoint `id`: durable (`error` empty) or not,
  /// which fails the checkpoint.
  void on_copy_durable(std::uint64_t id, const std::string& holder, const std::string& error);
  /// Holder `holder` is gone: the checkpoints still waiting for its copies fail (the next one
  /// ships to the holders left).
  void holder_lost(const std::string& holder);
  /// With `resume`, whether the store holds no checkpoint at all (its host was lost): the
  /// coordinator then looks for copies on the nodes and adopt()s one.
  bool nothing_to_resume();
  /// Stores checkpoint `record` with its `pieces` (fetched from the nodes' copies) as completed,
  /// before start_point(); synced on return. Throws persistence::storage_error.
  void adopt(const persistence::checkpoint_record& record,
             const std::map<std::pair<std::uint32_t, std::uint32_t>, std::string>& pieces);

  /// The state a run starts from: with `resume`, the newest usable checkpoint (rejected newer ones
  /// are logged, naming the piece); otherwise nothing. Throws job_error when the directory holds
  /// checkpoints and `resume` is off, or when it holds some but none is usable.
  restore_point start_point();

  /// The state to restart from after a failure mid-run (a lost node): the newest completed
  /// checkpoint of this job and plan — of this run or of the one it resumed from — or nothing
  /// when none completed, so the job starts from the beginning. Abandons the checkpoint in
  /// progress.
  restore_point recover();

  /// The newest completed checkpoint with its pieces, from memory, without abandoning anything
  /// (a copy restored after a takeover starts from it); checkpoint 0 when none completed. Needs
  /// keep_latest() (std::logic_error otherwise).
  restore_point latest() const;
  /// Keeps the pieces of the newest completed checkpoint in memory (shared with the writer, not
  /// copied), so latest() never waits for the disk: the coordinator calls it, whose control loop
  /// must not stall while a restore reads its state. Costs one checkpoint's state in memory.
  void keep_latest() noexcept { keep_latest_ = true; }

  /// Starts the next checkpoint when it is due and the last one's record is durable:
  /// `inject(id)` sends its barrier to the sources. Returns how long until the caller should call
  /// again: a few ms while the writer works (collect() then reports what became durable).
  std::chrono::milliseconds poll(const std::function<void(std::uint64_t id)>& inject);
  /// Hands the piece of (stage, instance) for checkpoint `id` to the writer (the first one: the
  /// copies of a replicated instance each send one, identical). After the last piece the
  /// checkpoint's record follows; collect() reports when it is durable.
  void on_piece(std::uint32_t stage, std::uint32_t instance, std::uint64_t id, std::string state,
                double alignment_ms);
  /// The checkpoints whose pieces and record became durable since the last call, in order: the
  /// caller tells every stage to commit each. A piece or record that could not be written fails
  /// its checkpoint; when that makes `max_consecutive_failures` in a row, throws job_error naming
  /// the last error.
  std::vector<std::uint64_t> collect();
  /// With checkpoints on, a warning in `result` (and the log) for each of `sources` (sources that
  /// cannot replay their input): after a restore, what they read since the checkpoint is lost.
  void warn_unreplayable(const std::vector<std::string>& sources, job_result& result) const;
  /// The run ended successfully: its checkpoints are no longer needed and are removed (a store
  /// that cannot be written is left as it is, with a warning).
  void finished();

  /// Checkpoints completed so far.
  const std::vector<checkpoint_metrics>& completed() const noexcept { return completed_; }
  /// Checkpoints that failed because the store could not be written, and the first such error.
  std::uint32_t failed() const noexcept { return failed_; }
  const std::string& first_failure() const noexcept { return first_failure_; }

 private:
  using clock = std::chrono::steady_clock;
  /// What the writer did with a checkpoint: its record is durable (no error), or it failed.
  struct outcome {
    std::uint64_t id;
    std::string error;
  };
  /// The store, reopened when a failure left its connection unusable (writer thread, or the
  /// driver's after settle()).
  persistence::checkpoint_store& store();
  /// Runs `f` on the writer for checkpoint `id`, unless an earlier write of `id` failed; a
  /// storage_error it throws fails `id` with `what` and the error's text.
  void write(std::uint64_t id, std::string what, std::function<void()> f);
  /// Waits for the writer, then collect(): the store is the driver's thread's until the next
  /// write. What became durable meanwhile is not committed (the caller restores instead).
  void settle();
  /// Checkpoint `id` failed with `why`: counted, abandoned; throws job_error past the bound.
  void fail(std::uint64_t id, const std::string& why);

  checkpoint_options opts_;
  std::string job_;
  std::string plan_;  // fingerprint
  std::size_t instances_;
  std::unique_ptr<persistence::checkpoint_store> store_;
  clock::time_point next_;
  // the checkpoint in progress (id 0: none)
  std::uint64_t current_ = 0;
  clock::time_point started_;
  std::set<std::pair<std::uint32_t, std::uint32_t>> received_;
  checkpoint_metrics progress_;
  std::vector<checkpoint_metrics> completed_;
  bool enabled_ = false;
  std::uint64_t last_id_ = 0;  // ids stay increasing when a reopened store lost a failed one's
  std::uint32_t failed_ = 0;
  std::uint32_t failed_in_a_row_ = 0;
  std::string first_failure_;
  using shared_pieces =
      std::map<std::pair<std::uint32_t, std::uint32_t>, std::shared_ptr<const std::string>>;
  /// Keeps `from` as the newest completed checkpoint (keep_latest).
  void remember(const restore_point& from);
  // checkpoints whose pieces all came, until their record is durable (pieces with keep_latest);
  // with copies, the record is written once `awaiting` (holders) is empty
  struct writing {
    checkpoint_metrics metrics;
    shared_pieces pieces;
    persistence::checkpoint_record record;
    std::set<std::string> awaiting;
    clock::time_point deadline;
  };
  /// Posts the record of `w` (every piece and copy of it is durable or on its way to the disk).
  void write_record(const writing& w);
  std::optional<copy_shipping> shipping_;
  std::chrono::milliseconds copy_timeout_{0};
  std::map<std::string, std::uint32_t> shipped_;  // holder -> pieces of current_ sent to it
  std::map<std::uint64_t, writing> writing_;
  bool keep_latest_ = false;
  shared_pieces collecting_;  // the pieces of current_ so far, with keep_latest
  std::uint64_t latest_id_ = 0;
  shared_pieces latest_;
  std::uint64_t write_failed_ = 0;  // writer thread: the last checkpoint a write of failed
  std::mutex outcomes_mutex_;
  std::vector<outcome> outcomes_;
  std::unique_ptr<write_queue> writer_;  // last: stops (and stops touching the rest) first
};

}  // namespace tidemark::detail
