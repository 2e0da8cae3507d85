// The canary of `scripts/dev sanitize tsan`: two actors write one plain counter without a lock.
// The sanitize step runs it and requires TSan to report the race, which proves that the
// annotations (annotated_actor.hpp) and the suppressions (tsan.supp) that quiet CAF's
// uninstrumented mailboxes do not also hide a real race between actors.
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>

#include "tidemark/core/annotated_actor.hpp"

namespace {

int shared_count = 0;  // the race: both actors write it with no order between them

caf::behavior writer(tidemark::detail::annotated_actor* self) {
  return {[self](int n) {
    for (int i = 0; i < n; ++i) ++shared_count;
    self->quit();
  }};
}

}  // namespace

int main() {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  // detached: each on a thread of its own, so the two writes are always on different threads
  auto a = sys.spawn<caf::detached>(writer);
  auto b = sys.spawn<caf::detached>(writer);
  caf::anon_send(a, 100000);
  caf::anon_send(b, 100000);
  return 0;  // the actor system waits for both writers
}
