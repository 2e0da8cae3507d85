// Injected link faults in a node's I/O thread (tidemark/runtime/faults.hpp): the frames the node
// sends to peer nodes are dropped, duplicated, held back behind the next one or delayed as the
// fault command says, and the node's partition is kept here. Delayed frames wait in a timer queue
// the I/O thread drains (flush), never in a sleep. Draws come from a generator seeded by the
// command, so a schedule replays.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>

#include <zmq.hpp>

#include "tidemark/runtime/faults.hpp"

namespace tidemark::net {

class link_fault_injector {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  /// Replaces the faults in force (fault_command{} heals); frames already delayed keep their time.
  void set(const fault_command& cmd);
  const fault_command& current() const noexcept { return cmd_; }

  /// Whether `node` ("coordinator" for the coordinator) is cut off from this node.
  bool unreachable(const std::string& node) const { return cmd_.unreachable.count(node) > 0; }

  /// Passes a frame for peer `peer` (node id `peer_id`) through the faults; it leaves through
  /// flush(), at once when no fault delays it.
  void send(std::uint32_t peer, const std::string& peer_id, zmq::message_t msg, time_point now);

  /// Hands every frame whose time has come to wire(peer, zmq::message_t&&), in order of that time.
  template <class Wire>
  void flush(time_point now, Wire&& wire) {
    while (!queue_.empty() && queue_.begin()->first.first <= now) {
      auto node = queue_.extract(queue_.begin());
      auto& item = node.mapped();
      if (item.reorder && !held_.count(item.peer)) {
        // held back: it leaves behind the next frame to the same peer, or after a short while
        held_.emplace(item.peer, held_frame{std::move(item.msg), now + hold_limit});
        continue;
      }
      const auto peer = item.peer;
      wire(peer, std::move(item.msg));
      if (auto h = held_.find(peer); h != held_.end()) {
        wire(peer, std::move(h->second.msg));
        held_.erase(h);
      }
    }
    for (auto h = held_.begin(); h != held_.end();)
      if (h->second.until <= now) {
        wire(h->first, std::move(h->second.msg));
        h = held_.erase(h);
      } else {
        ++h;
      }
  }

  /// When flush() has something to do next.
  std::optional<time_point> next_due() const;

  /// Forgets every delayed and held frame (the deployment they belong to ended).
  void clear() {
    queue_.clear();
    held_.clear();
  }

  std::uint64_t dropped() const noexcept { return dropped_; }
  std::uint64_t duplicated() const noexcept { return duplicated_; }
  std::uint64_t reordered() const noexcept { return reordered_; }
  /// Counts a frame dropped because it came from a node this one is cut off from.
  void count_dropped() noexcept { ++dropped_; }

 private:
  /// A frame held back waits at most this long for a next frame to pass it.
  static constexpr std::chrono::milliseconds hold_limit{20};

  struct item {
    std::uint32_t peer;
    zmq::message_t msg;
    bool reorder;
  };
  struct held_frame {
    zmq::message_t msg;
    time_point until;
  };
  const link_faults* faults_of(const std::string& peer_id) const;

  fault_command cmd_;
  std::mt19937_64 rng_;
  std::uint64_t order_ = 0;  // ties of equal due times leave in the order they came
  std::map<std::pair<time_point, std::uint64_t>, item> queue_;
  std::map<std::uint32_t, held_frame> held_;
  std::uint64_t dropped_ = 0, duplicated_ = 0, reordered_ = 0;
};

}  // namespace tidemark::net
