// The embedded driver's inbox (see driver_inbox.hpp).
#include "driver_inbox.hpp"

#include <utility>

#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

#include "tidemark/core/annotated_actor.hpp"

namespace tidemark::detail {
namespace {

using watch_atom = caf::atom_constant<caf::atom("watch")>;

void push(driver_inbox::queue& q, driver_message m) {
  {
    std::lock_guard<std::mutex> lock{q.mutex};
    q.items.push_back(std::move(m));
  }
  q.arrived.notify_one();
}

caf::behavior inbox(annotated_actor* self, std::shared_ptr<driver_inbox::queue> q) {
  self->set_down_handler([q](caf::down_msg& m) { push(*q, std::move(m)); });
  return {
      [self](watch_atom, const caf::actor& stage) { self->monitor(stage); },
      [q](done_msg& m) { push(*q, std::move(m)); },
      [q](checkpointed_msg& m) { push(*q, std::move(m)); },
      [q](live_metrics_msg& m) { push(*q, std::move(m)); },
      [q](failed_msg& m) { push(*q, std::move(m)); },
  };
}

}  // namespace

driver_inbox::driver_inbox(caf::actor_system& sys)
    : queue_(std::make_shared<queue>()), actor_(sys.spawn(inbox, queue_)) {}

driver_inbox::~driver_inbox() { caf::anon_send_exit(actor_, caf::exit_reason::user_shutdown); }

void driver_inbox::monitor(const caf::actor& stage) {
  caf::anon_send(actor_, watch_atom::value, stage);
}

std::optional<driver_message> driver_inbox::pop(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock{queue_->mutex};
  if (!queue_->arrived.wait_for(lock, wait, [&] { return !queue_->items.empty(); }))
    return std::nullopt;
  auto m = std::move(queue_->items.front());
  queue_->items.pop_front();
  return m;
}

}  // namespace tidemark::detail
