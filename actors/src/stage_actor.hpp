// The actor of one stage instance: a thin shell that feeds channel messages and timers into a
// stage_core and turns what the core asks for into CAF messages.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include "stage_core.hpp"
#include "tidemark/core/async.hpp"

namespace tidemark::detail {

struct output_channel {
  caf::actor target;
  std::uint32_t in = 0;  ///< the receiver's input slot
};

/// One thread of low priority per deployment (a run, or a node's part of it) on which the stages
/// write the checkpoint state they captured (asynchronous snapshots, stage_core::take_checkpoint),
/// started on first use. A write waits behind the one before: a node writes one state at a time,
/// below everything that processes events (pre-staging tiered state included).
class snapshot_writer {
 public:
  void post(std::function<void()> write);

 private:
  std::once_flag started_;
  std::unique_ptr<worker_pool> thread_;
};

struct stage_setup {
  stage_config core;
  std::vector<output_channel> outputs;  ///< one per output slot of the core
  caf::actor driver;                    ///< receives done_msg or failed_msg
  /// Writes the captured checkpoint state; null: the stage writes it at the barrier.
  std::shared_ptr<snapshot_writer> snapshots;
};

caf::actor spawn_stage(caf::actor_system& sys, stage_setup setup);

}  // namespace tidemark::detail
