// The synchronizer of a timezone as an actor (docs/timezones.md): the gates and exits of an
// embedded run send it their reports as messages, and it hands every bound it admits to the
// gates through their timezone_link. On a cluster the coordinator runs the same state machine.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/allowed_unsafe_message_type.hpp>

#include "tidemark/core/synchronizer.hpp"

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidemark::sync_report)

namespace tidemark::detail {

/// Spawns the synchronizer of one timezone: it applies every sync_report message to `logic` in
/// arrival order and calls `publish` with each new bound (from the actor's thread).
caf::actor spawn_synchronizer(caf::actor_system& sys, synchronizer_logic logic,
                              std::function<void(const sync_bound&)> publish);

/// One synchronizer actor per timezone of a run, connected to the graph's links: reports go to
/// the actor, bounds to the link. Construct it before the stages (a restored gate reports at
/// once); destroying it cuts the links and stops the actors, before the actor system goes.
class local_synchronizers {
 public:
  local_synchronizers(caf::actor_system& sys, const synchronized_graph& g);
  ~local_synchronizers();
  local_synchronizers(const local_synchronizers&) = delete;
  local_synchronizers& operator=(const local_synchronizers&) = delete;

 private:
  std::vector<std::shared_ptr<timezone_link>> links_;
  std::vector<caf::actor> actors_;
};

}  // namespace tidemark::detail
