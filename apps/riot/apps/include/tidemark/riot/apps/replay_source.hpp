// The source of the RIoTBench applications: the replay schedule's lines emitted when they are due,
// each message's emit time recorded in the run's metrics. Replayable from a checkpoint.
#pragma once

#include <memory>
#include <optional>

#include "tidemark/core/operator.hpp"
#include "tidemark/riot/apps/metrics.hpp"
#include "tidemark/riot/apps/replay.hpp"
#include "tidemark/riot/streams.hpp"

namespace tidemark::riot::apps {

/// Emits the replay schedule's lines (as numbered_line) when they are due; when none is, the stage
/// pulls again when the next one is due. A checkpoint saves the schedule's position (every copy's
/// cursor, the message count, the rate profile's clock) and the message drawn but not emitted yet;
/// after a restore the replay continues with the same messages, paced from the restore: the first
/// one is due at once, the next ones keep their original gaps.
class replay_source final : public source_logic {
 public:
  replay_source(const replay_config& config, std::shared_ptr<run_metrics> metrics);
  void open() override;
  bool pull(std::size_t max, emitter& out) override;
  std::chrono::nanoseconds idle_for() const override;
  bool replayable() const override { return true; }
  void snapshot(state_writer& out) override;
  void restore(state_reader& in) override;

 private:
  replay_schedule schedule_;
  std::shared_ptr<run_metrics> metrics_;
  std::optional<scheduled_message> pending_;
  /// Subtracted from due times: 0, or the restored schedule's due time at the restore.
  std::int64_t paced_from_ns_ = 0;
};

}  // namespace tidemark::riot::apps
