// Where the stages' reports reach the embedded driver, which runs in the caller's thread: an
// actor that moves each report into a queue the driver's thread waits on. (A blocking actor would
// receive in the caller's thread too, but CAF's blocking receive hands messages over through
// atomics ThreadSanitizer cannot see and offers no hook to annotate; this actor is an
// annotated_actor and the queue is guarded by a mutex, so TSan follows every hand-over.)
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <variant>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/system_messages.hpp>

#include "messages.hpp"

namespace tidemark::detail {

/// What a stage tells the driver, or the exit of a stage the driver watches.
using driver_message =
    std::variant<done_msg, checkpointed_msg, live_metrics_msg, failed_msg, caf::down_msg>;

class driver_inbox {
 public:
  explicit driver_inbox(caf::actor_system& sys);
  /// Stops the actor.
  ~driver_inbox();
  driver_inbox(const driver_inbox&) = delete;
  driver_inbox& operator=(const driver_inbox&) = delete;

  /// The actor that stages send their reports to (their `driver`).
  const caf::actor& actor() const noexcept { return actor_; }
  /// Watches `stage`: its exit arrives as a down_msg.
  void monitor(const caf::actor& stage);
  /// The next message, after waiting at most `wait` for one; nothing when none came.
  std::optional<driver_message> pop(std::chrono::milliseconds wait);

  struct queue {
    std::mutex mutex;
    std::condition_variable arrived;
    std::deque<driver_message> items;  // guarded by mutex
  };

 private:
  std::shared_ptr<queue> queue_;
  caf::actor actor_;
};

}  // namespace tidemark::detail
