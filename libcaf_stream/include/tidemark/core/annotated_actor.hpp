// An event-based actor whose mailbox ThreadSanitizer can follow. Debian's CAF is not built with
// TSan: its mailboxes and reference counts use atomics TSan does not observe, so every message
// handed from one worker thread to another would look like a data race. annotated_actor tells TSan
// what the mailbox guarantees: an enqueue happens before the message is consumed, and what an actor
// did happens before it is destroyed. scoped_driver.hpp does the same for the embedded driver.
#pragma once

#include <caf/event_based_actor.hpp>

#include "tidemark/core/tsan.hpp"

namespace tidemark::detail {

/// An event-based actor whose mailbox hand-over and destruction ThreadSanitizer can follow (see
/// the top of this file). Tidemark's own actors derive from it, or use it as the base of their
/// caf::stateful_actor.
class annotated_actor : public caf::event_based_actor {
 public:
  using caf::event_based_actor::event_based_actor;
  using caf::event_based_actor::enqueue;

  /// What the actor did, and every enqueue to it, happen before it is destroyed (CAF calls this
  /// before the destructors of the derived classes run).
  void on_destroy() override {
    tsan_acquire(this);
    caf::event_based_actor::on_destroy();
  }

  /// Every enqueue happens before the actor exits. CAF handles an exit message outside consume()
  /// and destroys it, with what is left in the mailbox, in finalize(), which calls this first.
  /// Actors that override on_exit() call this one first.
  void on_exit() override {
    tsan_acquire(this);
    caf::event_based_actor::on_exit();
  }

  /// The same for messages that arrive while the actor exits: cleanup() closes the mailbox and
  /// destroys them.
  bool cleanup(caf::error&& fail_state, caf::execution_unit* host) override {
    tsan_acquire(this);
    return caf::event_based_actor::cleanup(std::move(fail_state), host);
  }

  /// Construction (in the spawning thread) happens before the actor first runs.
  void launch(caf::execution_unit* eu, bool lazy, bool hide) override {
    tsan_release(this);
    caf::event_based_actor::launch(eu, lazy, hide);
  }

  caf::resumable::resume_result resume(caf::execution_unit* eu, std::size_t max_throughput) override {
    tsan_acquire(this);
    auto result = caf::event_based_actor::resume(eu, max_throughput);
    tsan_release(this);  // finalize() may run here, after the last consume
    return result;
  }

  void enqueue(caf::mailbox_element_ptr what, caf::execution_unit* host) override {
    tsan_release(this);
    caf::event_based_actor::enqueue(std::move(what), host);
  }

  caf::invoke_message_result consume(caf::mailbox_element& x) override {
    tsan_acquire(this);
    auto result = caf::event_based_actor::consume(x);
    // before the mailbox may block: the next message can run on another worker before this
    // resume() returns
    tsan_release(this);
    return result;
  }
};

}  // namespace tidemark::detail
