// Injected link faults of a node (see link_fault_injector.hpp).
#include "link_fault_injector.hpp"

namespace tidemark::net {

void link_fault_injector::set(const fault_command& cmd) {
  cmd_ = cmd;
  rng_.seed(cmd.seed);
}

const link_faults* link_fault_injector::faults_of(const std::string& peer_id) const {
  if (auto it = cmd_.links.find(peer_id); it != cmd_.links.end()) return &it->second;
  if (auto it = cmd_.links.find("*"); it != cmd_.links.end()) return &it->second;
  return nullptr;
}

void link_fault_injector::send(std::uint32_t peer, const std::string& peer_id, zmq::message_t msg,
                               time_point now) {
  if (unreachable(peer_id)) {
    ++dropped_;
    return;
  }
  const auto* f = faults_of(peer_id);
  if (!f || !f->any()) {
    queue_.emplace(std::make_pair(now, order_++), item{peer, std::move(msg), false});
    return;
  }
  std::uniform_real_distribution<double> draw{0, 1};
  if (draw(rng_) < f->drop) {
    ++dropped_;
    return;
  }
  const bool twice = draw(rng_) < f->duplicate;
  for (int copy = 0; copy < (twice ? 2 : 1); ++copy) {
    zmq::message_t m;
    if (copy == 0 && twice) {
      m.copy(msg);
      ++duplicated_;
    } else {
      m.move(msg);
    }
    auto due = now + f->delay +
               std::chrono::milliseconds{
                   std::uniform_int_distribution<std::int64_t>{0, f->jitter.count()}(rng_)};
    const bool reorder = draw(rng_) < f->reorder;
    reordered_ += reorder;
    queue_.emplace(std::make_pair(due, order_++), item{peer, std::move(m), reorder});
  }
}

std::optional<link_fault_injector::time_point> link_fault_injector::next_due() const {
  std::optional<time_point> due;
  if (!queue_.empty()) due = queue_.begin()->first.first;
  for (const auto& [peer, h] : held_) due = std::min(due.value_or(h.until), h.until);
  return due;
}

}  // namespace tidemark::net
