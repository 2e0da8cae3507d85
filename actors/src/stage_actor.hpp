// The actor of one stage instance: a thin shell that feeds channel messages and timers into a
// stage_core and turns what the core asks for into CAF messages.
#pragma once

#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include "stage_core.hpp"

namespace tidemark::detail {

struct output_channel {
  caf::actor target;
  std::uint32_t in = 0;  ///< the receiver's input slot
};

struct stage_setup {
  stage_config core;
  std::vector<output_channel> outputs;  ///< one per output slot of the core
  caf::actor driver;                    ///< receives done_msg or failed_msg
};

caf::actor spawn_stage(caf::actor_system& sys, stage_setup setup);

}  // namespace tidemark::detail
