// The synchronizer actor and the synchronizers of an embedded run.
#include "synchronizer_actor.hpp"

#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

#include "tidemark/core/annotated_actor.hpp"

namespace tidemark::detail {
namespace {

class synchronizer_actor final : public annotated_actor {
 public:
  synchronizer_actor(caf::actor_config& cfg, synchronizer_logic logic,
                     std::function<void(const sync_bound&)> publish)
      : annotated_actor(cfg), logic_(std::move(logic)), publish_(std::move(publish)) {}

  caf::behavior make_behavior() override {
    return {[this](const sync_report& r) {
      if (logic_.apply(r)) publish_(logic_.current());
    }};
  }

 private:
  synchronizer_logic logic_;
  std::function<void(const sync_bound&)> publish_;
};

}  // namespace

caf::actor spawn_synchronizer(caf::actor_system& sys, synchronizer_logic logic,
                              std::function<void(const sync_bound&)> publish) {
  return sys.spawn<synchronizer_actor>(std::move(logic), std::move(publish));
}

local_synchronizers::local_synchronizers(caf::actor_system& sys, const synchronized_graph& g)
    : links_(g.links) {
  for (const auto& link : links_) {
    // the actor holds its link weakly: the link holds the actor (its sender) until we cut it
    auto actor = spawn_synchronizer(
        sys, synchronizer_logic{link->gates(), link->exits(), link->time_slice()},
        [weak = std::weak_ptr<timezone_link>{link}](const sync_bound& b) {
          if (auto l = weak.lock()) l->deliver(b);
        });
    link->set_sender([actor](const sync_report& r) { caf::anon_send(actor, r); });
    actors_.push_back(std::move(actor));
  }
}

local_synchronizers::~local_synchronizers() {
  for (const auto& link : links_) link->set_sender(nullptr);
  for (const auto& actor : actors_) caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
}

}  // namespace tidemark::detail
