// An actor system whose scheduler is CAF's test_coordinator: nothing runs until a test says so
// (sched.run() or run_once()), so actor protocols are stepped one message at a time.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scheduler/test_coordinator.hpp>

namespace tidemark::test {

struct testing_config : caf::actor_system_config {
  testing_config() { set("scheduler.policy", caf::atom("testing")); }
};

/// Derive a fixture from it: `sys` for spawning, `sched` for running.
struct stepped_actor_system {
  testing_config cfg;
  caf::actor_system sys{cfg};
  caf::scheduler::test_coordinator& sched =
      dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
};

}  // namespace tidemark::test
