// The narrow hook between stage actors and the transport: a channel whose other end is on
// another node gets a proxy actor. Stage actors talk to proxies exactly as to each other
// (data_msg, signal_msg, burst_msg, credit_msg); proxies encode with the channel's codec and hand
// frames to the node's I/O thread through an outbox.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <zmq.hpp>

#include "tidemark/core/codec.hpp"

namespace tidemark::net {

/// A frame for the I/O thread: to a peer node's data socket, or to the coordinator. Without a
/// frame, `credit` batches a local receiver processed on `channel`: the I/O thread reports its
/// channel's whole state to the sender (reliable_channel.hpp).
struct outgoing {
  static constexpr std::uint32_t coordinator = UINT32_MAX;
  std::uint32_t peer = coordinator;
  zmq::message_t msg;
  std::uint32_t channel = 0;
  std::uint32_t credit = 0;
  /// With peer == coordinator: the routing id of the control peer to answer instead (empty: the
  /// coordinator).
  std::string to;
};

/// A queue from any thread to the I/O thread, which polls fd() (an eventfd) beside its sockets.
class outbox {
 public:
  outbox();
  ~outbox();
  outbox(const outbox&) = delete;
  outbox& operator=(const outbox&) = delete;
  void push(outgoing o);
  std::vector<outgoing> take();
  int fd() const noexcept { return fd_; }

 private:
  std::mutex mutex_;
  std::vector<outgoing> items_;
  int fd_;
};

/// Stands in for a receiver on node `peer`: encodes batches and signals of `channel`, tagged
/// with `deployment` (Deploy.deployment).
caf::actor spawn_outbound(caf::actor_system& sys, std::shared_ptr<outbox> out,
                          std::uint32_t channel, std::uint32_t peer, const batch_codec* codec,
                          std::uint32_t deployment);
/// Stands in for a sender on node `peer`: forwards what the I/O thread decoded to `target`
/// (so the stage's credit comes back here) and hands that credit to the I/O thread.
caf::actor spawn_inbound(caf::actor_system& sys, std::shared_ptr<outbox> out,
                         std::uint32_t channel, std::uint32_t peer, caf::actor target);

}  // namespace tidemark::net
