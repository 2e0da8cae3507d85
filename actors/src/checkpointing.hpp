// The driver's side of checkpoints: starts one every interval (the caller sends its barrier to
// the source stages: local actors, or nodes on a cluster), stores the pieces the stage instances
// send back, and records the checkpoint once every instance sent its piece (the caller then tells
// every stage to commit). It also finds the checkpoint a resumed run starts from. Pieces are
// written on the driver's thread, never on a stage's, so writing a snapshot does not stall
// processing. The embedded driver and the cluster coordinator share it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "deploy.hpp"
#include "tidemark/core/metrics.hpp"
#include "tidemark/runtime/runtime.hpp"

namespace tidemark::persistence {
class checkpoint_store;
}

namespace tidemark::detail {

class checkpoint_driver {
 public:
  /// Checkpoints of job `job` with plan text `plan` (its fingerprint must match on resume);
  /// `instances` stage instances each send a piece. Does nothing when `opts` is not enabled.
  checkpoint_driver(const checkpoint_options& opts, std::string job, const std::string& plan,
                    std::size_t instances);
  ~checkpoint_driver();
  checkpoint_driver(const checkpoint_driver&) = delete;
  checkpoint_driver& operator=(const checkpoint_driver&) = delete;

  bool enabled() const noexcept { return store_ != nullptr; }

  /// The state a run starts from: with `resume`, the newest usable checkpoint (rejected newer ones
  /// are logged, naming the piece); otherwise nothing. Throws job_error when the directory holds
  /// checkpoints and `resume` is off, or when it holds some but none is usable.
  restore_point start_point();

  /// The state to restart from after a failure mid-run (a lost node): the newest completed
  /// checkpoint of this job and plan — of this run or of the one it resumed from — or nothing
  /// when none completed, so the job starts from the beginning. Abandons the checkpoint in
  /// progress; checkpoints start again (the restarted instances have not finished).
  restore_point recover();

  /// Starts the next checkpoint when it is due: `inject(id)` sends its barrier to the sources.
  /// Returns how long until the next one is due.
  std::chrono::milliseconds poll(const std::function<void(std::uint64_t id)>& inject);
  /// Stores the piece of (stage, instance) for checkpoint `id`. Returns true when it was the last
  /// one: the checkpoint is recorded, and the caller tells every stage to commit `id`.
  bool on_piece(std::uint32_t stage, std::uint32_t instance, std::uint64_t id,
                std::string_view state, double alignment_ms);
  /// An instance finished: checkpoints can no longer include it, so none starts any more, and the
  /// one in progress is abandoned unless the instance sent its piece already.
  void on_done(std::uint32_t stage, std::uint32_t instance);
  /// The run ended successfully: its checkpoints are no longer needed and are removed.
  void finished();

  /// Checkpoints completed so far.
  const std::vector<checkpoint_metrics>& completed() const noexcept { return completed_; }

 private:
  using clock = std::chrono::steady_clock;
  checkpoint_options opts_;
  std::string job_;
  std::string plan_;  // fingerprint
  std::size_t instances_;
  std::unique_ptr<persistence::checkpoint_store> store_;
  clock::time_point next_;
  bool stopped_ = false;  // an instance finished
  // the checkpoint in progress (id 0: none)
  std::uint64_t current_ = 0;
  clock::time_point started_;
  std::set<std::pair<std::uint32_t, std::uint32_t>> received_;
  checkpoint_metrics progress_;
  std::vector<checkpoint_metrics> completed_;
};

}  // namespace tidemark::detail
