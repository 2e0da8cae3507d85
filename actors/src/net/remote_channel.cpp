// Proxy actors of remote channels and the outbox to the I/O thread (see remote_channel.hpp).
#include "remote_channel.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <stdexcept>

#include "tidemark/core/annotated_actor.hpp"
#include "../messages.hpp"
#include "frames.hpp"

namespace tidemark::net {
namespace {

wire::FrameKind kind_of(detail::signal_msg::kind_t k) {
  switch (k) {
    case detail::signal_msg::watermark: return wire::FrameKind::watermark;
    case detail::signal_msg::idle: return wire::FrameKind::idle;
    case detail::signal_msg::active: return wire::FrameKind::active;
    case detail::signal_msg::barrier: return wire::FrameKind::barrier;
    case detail::signal_msg::probe: return wire::FrameKind::loop_probe;
    case detail::signal_msg::eos: break;
  }
  return wire::FrameKind::eos;
}

struct outbound_state {
  std::vector<std::uint8_t> scratch;
  std::uint64_t seq = 0;
};

using outbound_actor = caf::stateful_actor<outbound_state, detail::annotated_actor>;

/// The frame of one batch, handed to the I/O thread.
void push_data(outbound_actor* self, outbox& out, std::uint32_t channel, std::uint32_t peer,
               const batch_codec* codec, std::uint32_t deployment, const batch_base& b) {
  auto& st = self->state;
  st.scratch.clear();
  codec->encode_values(b, st.scratch);
  flatbuffers::FlatBufferBuilder fb{st.scratch.size() + 16 * b.size() + 128};
  auto payload = fb.CreateVector(st.scratch);
  auto times = b.times.empty() ? 0 : fb.CreateVector(b.times).o;
  auto hashes = b.hashes.empty() ? 0 : fb.CreateVector(b.hashes).o;
  wire::DataFrameBuilder f{fb};
  f.add_channel(channel);
  f.add_deployment(deployment);
  f.add_seq(st.seq++);
  f.add_kind(wire::FrameKind::data);
  f.add_count(static_cast<std::uint32_t>(b.size()));
  f.add_payload(payload);
  if (times) f.add_times(flatbuffers::Offset<flatbuffers::Vector<std::int64_t>>{times});
  if (hashes) f.add_hashes(flatbuffers::Offset<flatbuffers::Vector<std::uint64_t>>{hashes});
  wire::FinishDataFrameBuffer(fb, f.Finish());
  out.push({peer, to_message(fb)});
}

caf::behavior outbound(outbound_actor* self, std::shared_ptr<outbox> out, std::uint32_t channel,
                       std::uint32_t peer, const batch_codec* codec, std::uint32_t deployment) {
  auto push_signal = [=](detail::signal_kind kind, event_time wm) {
    out->push({peer, signal_frame(channel, self->state.seq++, kind_of(kind), wm, 0, deployment)});
  };
  return {
      [=](detail::data_msg& m) {
        push_data(self, *out, channel, peer, codec, deployment, *m.batch.ptr);
      },
      [=](detail::signal_msg& m) { push_signal(m.kind, m.wm); },
      [=](detail::burst_msg& m) {
        for (const auto& item : m.items)
          if (item.batch.ptr)
            push_data(self, *out, channel, peer, codec, deployment, *item.batch.ptr);
          else
            push_signal(item.kind, item.wm);
      },
  };
}

caf::behavior inbound(detail::annotated_actor* self, std::shared_ptr<outbox> out,
                      std::uint32_t channel, std::uint32_t peer, caf::actor target) {
  return {
      [=](detail::data_msg& m) { self->send(target, std::move(m)); },
      [=](detail::signal_msg& m) { self->send(target, m); },
      [=](detail::credit_msg& m) { out->push({peer, {}, channel, m.n}); },
  };
}

}  // namespace

outbox::outbox() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (fd_ < 0) throw std::runtime_error("eventfd failed: cannot wake the I/O thread");
}

outbox::~outbox() { ::close(fd_); }

void outbox::push(outgoing o) {
  {
    std::lock_guard<std::mutex> lock{mutex_};
    items_.push_back(std::move(o));
  }
  std::uint64_t one = 1;
  (void)!::write(fd_, &one, sizeof one);
}

std::vector<outgoing> outbox::take() {
  std::uint64_t n = 0;
  (void)!::read(fd_, &n, sizeof n);
  std::vector<outgoing> taken;
  std::lock_guard<std::mutex> lock{mutex_};
  taken.swap(items_);
  return taken;
}

caf::actor spawn_outbound(caf::actor_system& sys, std::shared_ptr<outbox> out,
                          std::uint32_t channel, std::uint32_t peer, const batch_codec* codec,
                          std::uint32_t deployment) {
  return sys.spawn(outbound, std::move(out), channel, peer, codec, deployment);
}

caf::actor spawn_inbound(caf::actor_system& sys, std::shared_ptr<outbox> out,
                         std::uint32_t channel, std::uint32_t peer, caf::actor target) {
  return sys.spawn(inbound, std::move(out), channel, peer, std::move(target));
}

}  // namespace tidemark::net
