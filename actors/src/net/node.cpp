// The node server behind `tidemark-node`. One I/O thread owns every ZeroMQ socket: the control
// ROUTER (coordinator), the data ROUTER (frames from peer nodes: data for local receivers, credit
// for local senders) and one DEALER per peer it sends to. Stage actors run on a CAF actor system
// per deployment; proxies (remote_channel.hpp) connect them to the I/O thread. Remote channels are
// reliable (reliable_channel.hpp); injected link faults (link_fault_injector.hpp) act on the frames
// the I/O thread sends.
#include <poll.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

#include <spdlog/spdlog.h>

#include "../deploy.hpp"
#include "../live_poll.hpp"
#include "../messages.hpp"
#include "../wiring.hpp"
#include "channels.hpp"
#include "frames.hpp"
#include "link_fault_injector.hpp"
#include "reliable_channel.hpp"
#include "remote_channel.hpp"
#include "security.hpp"
#include "tidemark/persistence/faults.hpp"
#include "tidemark/runtime/cluster.hpp"

namespace tidemark {

using clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

/// What one node runs of one job.
struct deployment {
  job built;
  synchronized_graph synced;  ///< the graph the plan was compiled from (gates included)
  physical_plan plan;
  detail::wiring wiring;
  std::vector<net::channel> channels;
  std::vector<std::uint32_t> offsets;
  std::vector<std::uint32_t> placement;
  std::vector<cluster_node> nodes;
  std::uint32_t self = 0;
  std::uint32_t id = 0;  ///< Deploy.deployment: tags its data frames
  std::size_t chunk_bytes = 0;  ///< of StatePiece frames to the coordinator
  run_options opts;
  std::chrono::milliseconds heartbeat{250};
  std::chrono::milliseconds live_period{0};  ///< the coordinator's wish; 0: it wants no live metrics
  std::shared_ptr<net::outbox> out;
  std::unique_ptr<caf::actor_system_config> cfg;
  std::unique_ptr<caf::actor_system> sys;
  caf::actor driver;
  std::unique_ptr<detail::deployment_actors> stages;  // stage actors and channel proxies
  // Reliable channels, by channel index: the sending end where the channel's sender runs here
  // and its receiver elsewhere, the receiving end the other way round; null otherwise.
  std::vector<std::unique_ptr<net::reliable_sender<zmq::message_t>>> senders;
  std::vector<std::unique_ptr<net::reliable_receiver<zmq::message_t>>> receivers;
  std::chrono::milliseconds fence{0};  ///< Deploy.fence_ms; 0: never
  bool started = false;
  std::map<std::uint32_t, std::unique_ptr<zmq::socket_t>> dealers;
  std::shared_ptr<void> prepared;              ///< job_spec::prepare_node's handle
  std::function<std::string()> node_report;  ///< job_spec::node_report with the options

  std::uint32_t node_of(std::uint32_t stage, std::uint32_t instance) const {
    return placement[offsets[stage] + instance];
  }

  ~deployment() {
    if (!sys) return;
    if (stages) stages->stop();
    caf::anon_send_exit(driver, caf::exit_reason::user_shutdown);
    driver = nullptr;
    sys.reset();  // waits for the actors to quit
  }
};

std::string str(const flatbuffers::String* s) { return s ? s->str() : std::string{}; }

/// How a node's driver keeps a live view of its instances.
struct live_setup {
  std::shared_ptr<live_view> view;  ///< null: no polling
  live_plan plan;
  std::chrono::milliseconds period{500};
  bool report = false;  ///< send the counters to the coordinator (it asked for live metrics)
};

/// The local stage actors, sent to the driver once they exist (they need the driver's handle
/// first).
struct local_stages_msg {
  std::vector<caf::actor> stages;
};

using live_tick_atom = caf::atom_constant<caf::atom("livetick")>;

}  // namespace
}  // namespace tidemark

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidemark::local_stages_msg)

namespace tidemark {
namespace {

/// Collects done/failed messages of the local stages and reports them to the coordinator; with a
/// live view, asks the stages for their counters every period, publishes them and, when the
/// coordinator asked, sends them to it.
struct driver_state {
  std::size_t expected = 0;
  std::vector<instance_metrics> done;
  bool failed = false;
  std::unique_ptr<detail::live_poll> live;  // null: no polling
  std::shared_ptr<live_view> view;
  bool report_live = false;
  std::vector<caf::actor> stages;
};

caf::behavior node_driver(caf::stateful_actor<driver_state>* self, std::shared_ptr<net::outbox> out,
                          std::string node, std::size_t expected, live_setup live,
                          std::size_t chunk_bytes, std::function<std::string()> node_report) {
  self->state.expected = expected;
  if (live.view) {
    self->state.view = live.view;
    self->state.report_live = live.report;
    self->state.live =
        std::make_unique<detail::live_poll>(live.view, std::move(live.plan), live.period);
  }
  return {
      [=](local_stages_msg& m) {
        self->state.stages = std::move(m.stages);
        if (self->state.live) self->send(self, live_tick_atom::value);
      },
      [=](live_tick_atom) {
        auto& st = self->state;
        if (st.done.size() == st.expected || st.failed) return;  // Done carries the final counters
        auto wait = st.live->ask(caf::actor_cast<caf::actor>(self), st.stages);
        if (st.report_live)
          if (auto s = st.view->latest(); s && !s->instances.empty())
            out->push({net::outgoing::coordinator, net::live_metrics_frame(node, s->instances)});
        self->delayed_send(self, wait, live_tick_atom::value);
      },
      [=](detail::live_metrics_msg& m) {
        if (self->state.live) self->state.live->update(std::move(m.metrics));
      },
      // the coordinator stores the pieces (another host: losing this node loses no checkpoint)
      [=](detail::checkpointed_msg& m) {
        for (auto& f : net::piece_frames(m.id, m.stage, m.instance, m.state, m.alignment_ms,
                                         chunk_bytes))
          out->push({net::outgoing::coordinator, std::move(f)});
      },
      [=](detail::done_msg& m) {
        auto& st = self->state;
        if (st.live) st.live->update(m.metrics);
        st.done.push_back(std::move(m.metrics));
        if (st.done.size() == st.expected && st.live) st.live->publish(true);
        if (st.done.size() == st.expected && !st.failed)
          out->push({net::outgoing::coordinator,
                     net::done_frame(node, st.done, batch_gauge::peak(),
                                     node_report ? node_report() : std::string{})});
      },
      [=](detail::failed_msg& m) {
        if (self->state.failed) return;
        self->state.failed = true;
        flatbuffers::FlatBufferBuilder b;
        auto body = wire::CreateFailure(b, b.CreateString(node), b.CreateString(m.what));
        out->push({net::outgoing::coordinator, net::control_message(b, body)});
      },
  };
}

}  // namespace

struct node_server::impl {
  node_options opts;
  const job_registry& jobs;
  zmq::context_t ctx{1};
  key_pair own;
  std::unique_ptr<net::zap_handler> zap;
  zmq::socket_t control{ctx, zmq::socket_type::router};
  zmq::socket_t data{ctx, zmq::socket_type::router};
  // connections ZeroMQ drops on a frame above its limit, which it does not report otherwise
  std::unique_ptr<net::drop_watch> control_drops, data_drops;
  std::uint64_t oversized_refused = 0;  // frames above the limit that ZeroMQ let through
  std::string coordinator_key;  // Z85; only it may send control messages (empty: --insecure)
  std::string coordinator;      // routing id of the coordinator's connection
  node_status status;
  mutable std::mutex published_mutex;  // guards published: status() reads it from other threads
  node_status published;
  std::unique_ptr<deployment> dep;
  // pieces of the checkpoint the next Deploy restores, as the coordinator sends them
  net::piece_assembler assembler;
  detail::restore_point incoming;
  std::shared_ptr<net::outbox> out = std::make_shared<net::outbox>();
  clock::time_point next_heartbeat = clock::now();
  net::link_fault_injector faults;
  clock::time_point heard_from_coordinator = clock::now();  // for fencing
  std::optional<std::uint32_t> ended;  // the id of the deployment that ended last

  impl(node_options o, const job_registry& j) : opts(std::move(o)), jobs(j) {
    status.node = opts.id;
    published = status;
    if (opts.insecure) {
      net::warn_insecure("node '" + opts.id + "'");
    } else {
      if (opts.keys_dir.empty())
        throw std::runtime_error("node '" + opts.id +
                                 "': --keys DIR is required (or --insecure for plain text)");
      own = key_pair::load((std::filesystem::path{opts.keys_dir} / (opts.id + ".key")).string());
      coordinator_key = key_pair::load_public(coordinator_key_file(opts));
      auto allowed = net::load_allow_list(opts.keys_dir);
      allowed.insert(coordinator_key);  // also when --coordinator-key names a file elsewhere
      zap = std::make_unique<net::zap_handler>(ctx, std::move(allowed), "node '" + opts.id + "'");
    }
    net::make_server(control, own, opts.insecure, opts.max_message_bytes);
    // state pieces to the coordinator may be many chunks: a ROUTER drops what passes its
    // high-water mark
    control.set(zmq::sockopt::sndhwm, 0);
    net::make_server(data, own, opts.insecure, opts.max_message_bytes);
    const auto who = "node '" + opts.id + "'";
    control_drops = std::make_unique<net::drop_watch>(ctx, control, who + " (control)",
                                                      opts.max_message_bytes);
    data_drops =
        std::make_unique<net::drop_watch>(ctx, data, who + " (data)", opts.max_message_bytes);
    control.bind(opts.listen);
    data.bind(data_endpoint(opts.listen));
    if (!opts.data_dir.empty()) std::filesystem::create_directories(opts.data_dir);
    spdlog::info("node '{}' listening on {} (data {})", opts.id, opts.listen,
                 data_endpoint(opts.listen));
  }

  ~impl() {
    dep.reset();
    control_drops.reset();  // before the sockets close: their last connections are no drops
    data_drops.reset();
    control.close();
    data.close();
    zap.reset();
  }

  /// The coordinator's public key file: --coordinator-key, or KEYS/coordinator.pub, or the public
  /// half of KEYS/coordinator.key (the layout `tidemark keygen` writes).
  static std::string coordinator_key_file(const node_options& o) {
    if (!o.coordinator_key.empty()) return o.coordinator_key;
    const std::filesystem::path keys{o.keys_dir};
    for (const auto* name : {"coordinator.pub", "coordinator.key"})
      if (std::filesystem::exists(keys / name)) return (keys / name).string();
    throw std::runtime_error(
        "node '" + o.id + "': no coordinator key: put the coordinator's public key in " +
        (keys / "coordinator.pub").string() + " or pass --coordinator-key FILE (only that key may "
        "deploy, start and stop jobs here)");
  }

  /// True (and counted, logged) when `m` is larger than the node's limit: ZeroMQ lets frames up
  /// to net::curve_headroom bytes above it through, and drops the connection beyond that.
  bool oversized(zmq::message_t& m, const char* socket) {
    if (m.size() <= static_cast<std::size_t>(opts.max_message_bytes)) return false;
    ++oversized_refused;
    spdlog::warn("node '{}': refused a frame of {} bytes on its {} socket from {}: the limit is {} "
                 "bytes (--max-message-bytes)",
                 opts.id, m.size(), socket, net::describe_peer(m), opts.max_message_bytes);
    return true;
  }

  /// The counters kept outside the I/O thread (the ZAP handler's, the drop watches').
  void collect_counters() {
    status.refused_peers = zap ? zap->refused() : 0;
    status.oversized_frames =
        oversized_refused + control_drops->dropped() + data_drops->dropped();
    status.fault_dropped = faults.dropped();
    status.fault_duplicated = faults.duplicated();
    status.fault_reordered = faults.reordered();
  }

  /// Control messages change what the node runs: only the coordinator's key may send them.
  /// A status request is open to every allow-listed key. Plain text cannot tell keys apart.
  bool may_send(zmq::message_t& m, wire::Body body) const {
    if (opts.insecure || body == wire::Body::StatusRequest) return true;
    const char* user = zmq_msg_gets(m.handle(), "User-Id");
    return user && coordinator_key == user;
  }

  /// Refuses a control message from another key than the coordinator's: counts and logs it, and
  /// answers where the sender waits for an answer (Hello, Deploy, Faults).
  void refuse_control(const zmq::message_t& id, zmq::message_t& m, wire::Body body) {
    ++status.refused_control;
    const std::string what = wire::EnumNameBody(body);
    spdlog::warn("node '{}': refused {} from {}: only the coordinator's key may send it", opts.id,
                 what, net::describe_peer(m));
    const auto why = what + " refused by node '" + opts.id +
                     "': only the coordinator's key may send control messages";
    flatbuffers::FlatBufferBuilder b;
    if (body == wire::Body::Hello)
      reply(id, net::control_message(b, wire::CreateHelloReply(b, false, b.CreateString(why),
                                                               b.CreateString(opts.id))));
    else if (body == wire::Body::Deploy)
      reply(id, net::control_message(b, wire::CreateDeployed(b, false, b.CreateString(why))));
    else if (body == wire::Body::Faults)
      reply(id, net::control_message(b, wire::CreateFaultsReply(b, false, b.CreateString(why),
                                                                b.CreateString(opts.id))));
  }

  void bad_frame(zmq::message_t& m, const std::string& what) {
    ++status.bad_frames;
    spdlog::warn("node '{}': dropped a bad frame from {}: {}", opts.id, net::describe_peer(m),
                 what);
  }

  /// Receives [routing id, payload]; false when nothing is waiting.
  static bool receive(zmq::socket_t& s, zmq::message_t& id, zmq::message_t& payload) {
    if (!s.recv(id, zmq::recv_flags::dontwait)) return false;
    if (!id.more()) {
      payload = std::move(id);
      return true;
    }
    (void)s.recv(payload);
    while (payload.more()) {  // extra parts: keep the first, drop the rest
      zmq::message_t extra;
      (void)s.recv(extra);
      if (!extra.more()) break;
    }
    return true;
  }

  void reply(const zmq::message_t& id, zmq::message_t msg) {
    control.send(zmq::buffer(id.data(), id.size()), zmq::send_flags::sndmore);
    control.send(msg, zmq::send_flags::none);
  }

  void to_coordinator(zmq::message_t msg) {
    if (coordinator.empty()) return;
    if (faults.unreachable("coordinator")) {
      faults.count_dropped();
      return;
    }
    control.send(zmq::buffer(coordinator), zmq::send_flags::sndmore);
    control.send(msg, zmq::send_flags::none);
  }

  void run(const std::atomic<bool>& stop) {
    while (!stop) {
      zmq::pollitem_t items[] = {{control.handle(), 0, ZMQ_POLLIN, 0},
                                 {data.handle(), 0, ZMQ_POLLIN, 0},
                                 {nullptr, out->fd(), ZMQ_POLLIN, 0}};
      try {
        zmq::poll(items, 3, poll_timeout(clock::now()));
      } catch (const zmq::error_t& e) {
        if (e.num() == EINTR) continue;  // a signal: look at `stop` again
        throw;
      }
      zmq::message_t id, payload;
      while (receive(control, id, payload)) on_control(id, payload);
      while (receive(data, id, payload)) on_data(payload);
      const auto now = clock::now();
      for (auto& o : out->take()) send(std::move(o), now);
      keep_channels(now);
      faults.flush(now, [&](std::uint32_t peer, zmq::message_t&& m) {
        if (dep) dealer(peer).send(m, zmq::send_flags::none);
      });
      collect_counters();
      if (dep && dep->started && dep->fence.count() > 0 && now - heard_from_coordinator > dep->fence) {
        // the coordinator has declared this node failed by now and recovers the job elsewhere
        spdlog::error("node '{}': no word from the coordinator for {} ms: stopping job '{}' without "
                      "committing anything more (fenced)",
                      opts.id, dep->fence.count(), dep->built.name());
        end_deployment();
      }
      if (dep && !coordinator.empty() && clock::now() >= next_heartbeat) {
        // the counters ride along, so the coordinator's live view shows every node's transport
        flatbuffers::FlatBufferBuilder b{256};
        auto name = b.CreateString(opts.id);
        auto counters = net::status_table(b, status);
        to_coordinator(net::control_message(b, wire::CreateHeartbeat(b, name, counters)));
        next_heartbeat = clock::now() + dep->heartbeat;
      }
      std::lock_guard<std::mutex> guard{published_mutex};
      published = status;
    }
  }

  node_status current_status() const {
    std::lock_guard<std::mutex> guard{published_mutex};
    return published;
  }

  /// Waits for sockets at most until the next retransmission, report or delayed frame is due.
  std::chrono::milliseconds poll_timeout(clock::time_point now) const {
    auto due = now + 50ms;
    auto sooner = [&](std::optional<clock::time_point> t) {
      if (t) due = std::min(due, *t);
    };
    sooner(faults.next_due());
    if (dep) {
      for (const auto& s : dep->senders)
        if (s) sooner(s->next_due());
      for (const auto& r : dep->receivers)
        if (r) sooner(r->next_due());
    }
    return std::max(0ms, std::chrono::ceil<std::chrono::milliseconds>(due - now));
  }

  void send(net::outgoing o, clock::time_point now) {
    if (o.peer == net::outgoing::coordinator) {
      to_coordinator(std::move(o.msg));
      return;
    }
    if (!dep) return;
    auto& x = *dep;
    if (o.msg.size() == 0) {  // credit a local receiver returned: reported by keep_channels
      if (o.channel < x.receivers.size() && x.receivers[o.channel])
        x.receivers[o.channel]->add_credit(o.credit, now);
      return;
    }
    const auto& f = net::read_data(o.msg);
    if (f.channel() < x.senders.size() && x.senders[f.channel()]) {
      zmq::message_t kept;
      kept.copy(o.msg);  // shares the buffer
      x.senders[f.channel()]->sent(f.seq(), std::move(kept), f.kind() == wire::FrameKind::data,
                                   f.kind() == wire::FrameKind::eos, now);
    }
    transmit(o.peer, std::move(o.msg), now);
  }

  /// Sends a data frame to peer node `peer` through the injected faults.
  void transmit(std::uint32_t peer, zmq::message_t msg, clock::time_point now) {
    faults.send(peer, dep->nodes[peer].id, std::move(msg), now);
  }

  /// A copy of a kept frame to send again, and the count of it.
  auto resend_to(std::uint32_t peer, clock::time_point now) {
    return [this, peer, now](std::uint64_t, zmq::message_t& kept) {
      zmq::message_t again;
      again.copy(kept);
      ++status.retransmitted;
      transmit(peer, std::move(again), now);
    };
  }

  /// Retransmissions, probes and receiver reports of the reliable channels that are due.
  void keep_channels(clock::time_point now) {
    if (!dep) return;
    auto& x = *dep;
    for (std::uint32_t c = 0; c < x.channels.size(); ++c) {
      const auto& ch = x.channels[c];
      if (auto& s = x.senders[c]) {
        const auto peer = x.node_of(ch.to_stage, ch.to_instance);
        s->poll(now, resend_to(peer, now), [&] {
          transmit(peer, net::signal_frame(c, 0, wire::FrameKind::probe, 0, 0, x.id), now);
        });
      }
      if (auto& r = x.receivers[c])
        if (auto st = r->report(now))
          transmit(x.node_of(ch.from_stage, ch.from_instance),
                   net::credit_frame(c, st->ack, st->credit, st->gap, x.id), now);
    }
  }

  /// Stops the deployment; what its actors left in the outbox and delayed frames are dropped.
  void end_deployment() {
    if (dep) ended = dep->id;
    dep.reset();  // waits for its actors: nothing more comes into the outbox
    for (auto& o : out->take())
      if (o.peer == net::outgoing::coordinator) to_coordinator(std::move(o.msg));
    faults.clear();
  }

  zmq::socket_t& dealer(std::uint32_t peer) {
    auto& slot = dep->dealers[peer];
    if (!slot) {
      slot = std::make_unique<zmq::socket_t>(ctx, zmq::socket_type::dealer);
      const auto& n = dep->nodes.at(peer);
      net::make_client(*slot, own, n.public_key, opts.insecure, opts.max_message_bytes);
      // credit bounds what is in flight; the high-water mark only guards against bugs
      slot->set(zmq::sockopt::sndhwm, 0);
      slot->connect(data_endpoint(n.endpoint));
    }
    return *slot;
  }

  // ---- control -------------------------------------------------------------------------------

  void on_control(zmq::message_t& id, zmq::message_t& payload) {
    if (oversized(payload, "control")) return;
    if (auto bad = net::verify_control(payload.data(), payload.size(), opts.max_message_bytes)) {
      bad_frame(payload, *bad);
      return;
    }
    const auto& f = net::read_control(payload);
    if (!may_send(payload, f.body_type())) {
      refuse_control(id, payload, f.body_type());
      return;
    }
    if (auto refused = net::check_version(f)) {
      ++status.bad_frames;
      spdlog::warn("node '{}': refused {}: {}", opts.id, net::describe_peer(payload), *refused);
      flatbuffers::FlatBufferBuilder b;
      reply(id, net::control_message(
                    b, wire::CreateHelloReply(b, false, b.CreateString(*refused),
                                              b.CreateString(opts.id))));
      return;
    }
    const bool observing = f.body_type() == wire::Body::Faults ||
                           f.body_type() == wire::Body::StatusRequest;
    if (!observing) {
      // a partition cuts the job's control off, not the fault control that heals it
      if (faults.unreachable("coordinator")) {
        faults.count_dropped();
        return;
      }
      heard_from_coordinator = clock::now();
    }
    ++status.frames_in;
    flatbuffers::FlatBufferBuilder b;
    switch (f.body_type()) {
      case wire::Body::Hello:
        coordinator = std::string{static_cast<const char*>(id.data()), id.size()};
        reply(id, net::control_message(b, wire::CreateHelloReply(b, true, 0, b.CreateString(opts.id))));
        break;
      case wire::Body::Deploy: {
        coordinator = std::string{static_cast<const char*>(id.data()), id.size()};
        std::string error;
        try {
          deploy(*f.body_as_Deploy());
        } catch (const std::exception& e) {
          error = e.what();
          dep.reset();
          spdlog::error("node '{}': deploy failed: {}", opts.id, error);
        }
        reply(id, net::control_message(
                      b, wire::CreateDeployed(b, error.empty(), b.CreateString(error))));
        break;
      }
      case wire::Body::Start:
        if (dep) {
          dep->stages->start();
          dep->started = true;
          // a node that hosts no instance of the job (more nodes than stages) is done at once:
          // the coordinator waits for every node's Done
          if (dep->stages->stages().empty())
            out->push({net::outgoing::coordinator,
                       net::done_frame(opts.id, {}, 0, dep->node_report ? dep->node_report() : "")});
        }
        break;
      case wire::Body::Heartbeat:  // the coordinator is there (fencing)
        break;
      case wire::Body::Faults:
        on_faults(id, *f.body_as_Faults());
        break;
      case wire::Body::Stop:
        if (dep)
          spdlog::info("node '{}': stopped the job: {}", opts.id, str(f.body_as_Stop()->reason()));
        end_deployment();
        assembler.clear();
        incoming = {};
        break;
      case wire::Body::CheckpointStart:
        if (dep)
          for (const auto& a : dep->stages->sources())
            caf::anon_send(a, detail::checkpoint_atom::value, f.body_as_CheckpointStart()->id());
        break;
      case wire::Body::Commit:
        if (dep)
          for (const auto& a : dep->stages->stages())
            caf::anon_send(a, detail::commit_atom::value, f.body_as_Commit()->id());
        break;
      case wire::Body::StatePiece:
        try {
          if (auto piece = assembler.add(*f.body_as_StatePiece())) {
            if (piece->checkpoint != incoming.checkpoint) incoming = {piece->checkpoint, {}};
            incoming.pieces[{piece->stage, piece->instance}] = std::move(piece->bytes);
          }
        } catch (const net::bad_chunk& e) {
          --status.frames_in;
          bad_frame(payload, e.what());
        }
        break;
      case wire::Body::StatusRequest:
        collect_counters();
        reply(id, net::control_message(b, net::status_table(b, status)));
        break;
      default:
        --status.frames_in;
        bad_frame(payload, std::string{"unexpected control message "} +
                               wire::EnumNameBody(f.body_type()));
    }
  }

  void on_faults(const zmq::message_t& id, const wire::Faults& body) {
    std::string refused;
    if (!opts.allow_faults) {
      refused = "it does not accept injected faults: start it with --allow-faults";
      spdlog::warn("node '{}': refused injected faults: started without --allow-faults", opts.id);
    } else {
      auto cmd = net::read_faults(body);
      faults.set(cmd);
      persistence::set_storage_faults(cmd.storage);
      std::string cut;
      for (const auto& n : cmd.unreachable) cut += (cut.empty() ? "" : ", ") + n;
      spdlog::warn("node '{}': injected faults: {} link rule(s), unreachable: {}, storage faults: {} "
                   "(seed {})",
                   opts.id, cmd.links.size(), cut.empty() ? "none" : cut,
                   cmd.storage.any() ? "on" : "off", cmd.seed);
    }
    flatbuffers::FlatBufferBuilder b;
    reply(id, net::control_message(b, wire::CreateFaultsReply(b, refused.empty(),
                                                              b.CreateString(refused),
                                                              b.CreateString(opts.id))));
  }

  void deploy(const wire::Deploy& d) {
    end_deployment();
    auto fresh = std::make_unique<deployment>();
    auto& x = *fresh;
    const auto& spec = jobs.find(str(d.job()));
    auto options = spec.make_options();
    if (d.option_names() && d.option_values()) {
      if (d.option_names()->size() != d.option_values()->size())
        throw job_error("deploy: option names and values differ in number");
      for (flatbuffers::uoffset_t i = 0; i < d.option_names()->size(); ++i)
        options.set(d.option_names()->Get(i)->str(), d.option_values()->Get(i)->str());
    }
    x.built = spec.build(options);
    x.opts.batch_size = d.batch_size();
    x.opts.credit = d.credit();
    x.opts.linger = std::chrono::milliseconds{d.linger_ms()};
    x.opts.fuse = d.fuse();
    x.opts.deterministic_merge = d.deterministic_merge();
    x.synced = detail::executable_graph(x.built, x.opts);
    // tiered window state lives under the node's data directory (a temporary one without it)
    x.opts.storage.data_dir = opts.data_dir;
    x.opts.state_storage = std::make_shared<persistence::storage_service>(x.opts.storage);
    const auto& g = x.synced.graph;
    x.heartbeat = std::chrono::milliseconds{std::max<std::uint32_t>(1, d.heartbeat_ms())};
    x.live_period = std::chrono::milliseconds{d.live_period_ms()};
    x.id = d.deployment();
    x.fence = std::chrono::milliseconds{d.fence_ms()};
    x.chunk_bytes = net::piece_chunk_bytes(
        d.coordinator_max_bytes() ? std::min<std::int64_t>(opts.max_message_bytes,
                                                           d.coordinator_max_bytes())
                                  : opts.max_message_bytes);
    x.plan = compile(g, {x.opts.fuse});
    x.wiring = detail::wire(x.plan);
    x.channels = net::enumerate_channels(g, x.plan, x.wiring);
    x.offsets = net::instance_offsets(x.plan);
    if (!d.nodes() || d.nodes()->size() == 0) throw job_error("deploy: no nodes listed");
    for (const auto* n : *d.nodes())
      x.nodes.push_back({str(n->id()), str(n->data_endpoint()), str(n->public_key())});
    x.self = d.self_index();
    if (x.self >= x.nodes.size() || x.nodes[x.self].id != opts.id)
      throw job_error("deploy: addressed to node '" +
                      (x.self < x.nodes.size() ? x.nodes[x.self].id : std::string{"?"}) +
                      "', this is '" + opts.id + "'");
    std::uint32_t total = 0;
    for (const auto& st : x.plan.stages) total += st.parallelism;
    if (!d.placement() || d.placement()->size() != total)
      throw job_error("deploy: the placement lists " +
                      std::to_string(d.placement() ? d.placement()->size() : 0) +
                      " stage instances, the plan built here has " + std::to_string(total) +
                      " (are the nodes running the same release?)");
    for (auto p : *d.placement()) {
      if (p >= x.nodes.size()) throw job_error("deploy: placement names node " + std::to_string(p));
      x.placement.push_back(p);
    }
    std::vector<std::string> ids;
    for (const auto& n : x.nodes) ids.push_back(n.id);
    net::check_codecs(x.channels, x.offsets, x.placement, ids);
    if (spec.prepare_node) x.prepared = spec.prepare_node(options, hosted_operators(x));
    if (spec.node_report) x.node_report = [report = spec.node_report, options] { return report(options); };
    detail::restore_point from;
    if (d.restore_checkpoint() != 0) {
      if (incoming.checkpoint != d.restore_checkpoint())
        throw job_error("deploy: restore checkpoint " + std::to_string(d.restore_checkpoint()) +
                        ", but no state of it arrived");
      from = std::move(incoming);
    }
    incoming = {};
    assembler.clear();
    start_actors(x, from);
    dep = std::move(fresh);
    next_heartbeat = clock::now();
    if (from.checkpoint)
      spdlog::info("node '{}': deployed job '{}' from checkpoint {}", opts.id, dep->built.name(),
                   from.checkpoint);
    else
      spdlog::info("node '{}': deployed job '{}'", opts.id, dep->built.name());
  }

  /// Names of the operators with an instance on this node.
  static std::vector<std::string> hosted_operators(const deployment& x) {
    std::vector<std::string> names;
    for (std::uint32_t s = 0; s < x.plan.stages.size(); ++s)
      for (std::uint32_t i = 0; i < x.plan.stages[s].parallelism; ++i)
        if (x.node_of(s, i) == x.self) {
          for (const auto& op : x.plan.stages[s].ops)
            names.push_back(x.synced.graph.node(op.node).name);
          break;
        }
    return names;
  }

  void start_actors(deployment& x, detail::restore_point& from) {
    const auto& g = x.synced.graph;
    x.out = out;
    detail::keep_freed_batches_in_heap();
    x.cfg = std::make_unique<caf::actor_system_config>();
    detail::configure(*x.cfg, x.opts);
    x.sys = std::make_unique<caf::actor_system>(*x.cfg);
    batch_gauge::reset_peak();
    const detail::placement where{x.placement, x.self};
    x.driver = x.sys->spawn(node_driver, out, opts.id, where.local_instances(), live_of(x),
                            x.chunk_bytes, x.node_report);
    x.senders.resize(x.channels.size());
    x.receivers.resize(x.channels.size());
    for (std::uint32_t c = 0; c < x.channels.size(); ++c) {
      const auto& ch = x.channels[c];
      const auto from = x.node_of(ch.from_stage, ch.from_instance);
      const auto to = x.node_of(ch.to_stage, ch.to_instance);
      if (from == x.self && to != x.self)
        x.senders[c] = std::make_unique<net::reliable_sender<zmq::message_t>>(
            x.opts.credit, net::reliability_options{});
      if (to == x.self && from != x.self)
        x.receivers[c] =
            std::make_unique<net::reliable_receiver<zmq::message_t>>(net::reliability_options{});
    }
    detail::remote_channels remote;
    remote.outbound = [&](std::uint32_t c, std::uint32_t peer, const batch_codec* codec) {
      return net::spawn_outbound(*x.sys, out, c, peer, codec, x.id);
    };
    remote.inbound = [&](std::uint32_t c, std::uint32_t peer, caf::actor receiver) {
      return net::spawn_inbound(*x.sys, out, c, peer, std::move(receiver));
    };
    x.stages = std::make_unique<detail::deployment_actors>(*x.sys, g, x.plan, x.wiring, where,
                                                           x.opts, x.driver, &remote, &from);
    caf::anon_send(x.driver, local_stages_msg{x.stages->stages()});
  }

  /// The node's own view (for its /metrics) or, when only the coordinator asked for live metrics,
  /// one of the deployment's; the coordinator's period wins.
  live_setup live_of(const deployment& x) const {
    live_setup live;
    live.report = x.live_period.count() > 0;
    live.view = opts.live ? opts.live : live.report ? std::make_shared<live_view>() : nullptr;
    live.period = live.report ? x.live_period : opts.live_period;
    std::vector<std::string> node_of;
    for (auto n : x.placement) node_of.push_back(x.nodes[n].id);
    live.plan = live_plan::of(x.built.name(), x.synced.graph, x.plan, node_of);
    return live;
  }

  // ---- data ----------------------------------------------------------------------------------

  void on_data(zmq::message_t& payload) {
    if (oversized(payload, "data")) return;
    if (auto bad = net::verify_data(payload.data(), payload.size(), opts.max_message_bytes)) {
      bad_frame(payload, *bad);
      return;
    }
    const auto& f = net::read_data(payload);
    // credit returned after the coordinator ended the job: nothing waits for it any more; and
    // the deployment that ended may still send a frame again that was not acknowledged in time
    if (!dep && (f.kind() == wire::FrameKind::credit || f.deployment() == ended)) return;
    if (!dep) {
      bad_frame(payload, "data frame while no job is deployed");
      return;
    }
    auto& x = *dep;
    // still in flight from the deployment a recovery replaced (or from before this node restarted)
    if (f.deployment() != x.id) return;
    auto c = f.channel();
    if (c >= x.channels.size()) {
      bad_frame(payload, "unknown channel " + std::to_string(c));
      return;
    }
    const auto& ch = x.channels[c];
    // the frame must come from the node that hosts the other end of the channel
    bool credit = f.kind() == wire::FrameKind::credit;
    auto expected_peer = credit ? x.node_of(ch.to_stage, ch.to_instance)
                                : x.node_of(ch.from_stage, ch.from_instance);
    if (!opts.insecure) {
      const char* user = zmq_msg_gets(payload.handle(), "User-Id");
      if (!user || x.nodes[expected_peer].public_key != user) {
        ++status.refused_data;
        spdlog::warn("node '{}': refused a frame on channel {} from {}: the channel belongs to "
                     "node '{}'",
                     opts.id, c, net::describe_peer(payload), x.nodes[expected_peer].id);
        return;
      }
    }
    if (faults.unreachable(x.nodes[expected_peer].id)) {  // an injected partition
      faults.count_dropped();
      return;
    }
    const auto now = clock::now();
    if (credit) {
      const auto& sender = x.stages->senders()[c];
      if (!sender || !x.senders[c]) {
        bad_frame(payload, "credit for channel " + std::to_string(c) + ", which has no sender here");
        return;
      }
      ++status.frames_in;
      const auto granted = x.senders[c]->on_state({f.ack(), f.credit(), f.gap()}, now,
                                                   resend_to(expected_peer, now));
      if (granted > 0)
        caf::anon_send(sender,
                       detail::credit_msg{ch.out_slot, static_cast<std::uint32_t>(granted)});
      return;
    }
    if (!x.stages->inbound()[c] || !x.receivers[c]) {
      bad_frame(payload, "data for channel " + std::to_string(c) + ", which has no receiver here");
      return;
    }
    auto& receiver = *x.receivers[c];
    if (f.kind() == wire::FrameKind::probe) {
      ++status.frames_in;
      receiver.on_probe(now);
      return;
    }
    const auto seq = f.seq();  // `f` points into the payload, which the receiver takes
    using verdict = net::reliable_receiver<zmq::message_t>::verdict;
    switch (receiver.accept(seq, std::move(payload), now,
                            [&](zmq::message_t&& m) { deliver(c, m); })) {
      case verdict::delivered: break;
      case verdict::held: ++status.lost_frames; break;
      case verdict::duplicate: ++status.duplicates_discarded; break;
      case verdict::too_far:
        ++status.bad_frames;
        spdlog::warn("node '{}': channel {}: dropped frame {}, far ahead of frame {}", opts.id, c,
                     seq, receiver.next());
        break;
    }
  }

  /// Hands the next frame of channel `c`, in sequence order, to the channel's local receiver.
  void deliver(std::uint32_t c, zmq::message_t& payload) {
    const auto& f = net::read_data(payload);
    const auto& ch = dep->channels[c];
    const auto& inbound = dep->stages->inbound()[c];
    using k = detail::signal_msg;
    switch (f.kind()) {
      case wire::FrameKind::data: {
        batch_ptr b;
        try {
          const auto* p = f.payload();
          b = ch.output().codec->decode_values(p ? p->data() : nullptr, p ? p->size() : 0);
        } catch (const wire_error& e) {
          bad_frame(payload, "channel " + std::to_string(c) + ": " + e.what());
          return;
        }
        if (b->size() != f.count()) {
          bad_frame(payload, "batch of " + std::to_string(b->size()) + " values, frame says " +
                                 std::to_string(f.count()));
          return;
        }
        if (f.times()) b->times.assign(f.times()->begin(), f.times()->end());
        if (f.hashes()) b->hashes.assign(f.hashes()->begin(), f.hashes()->end());
        caf::anon_send(inbound, detail::data_msg{ch.in_slot, 0, detail::batch_holder{std::move(b)}});
        ++status.batch_frames_in;
        status.batch_bytes_in += payload.size();
        break;
      }
      case wire::FrameKind::watermark:
        caf::anon_send(inbound, k{ch.in_slot, k::watermark, f.watermark()});
        break;
      case wire::FrameKind::idle: caf::anon_send(inbound, k{ch.in_slot, k::idle, 0}); break;
      case wire::FrameKind::active: caf::anon_send(inbound, k{ch.in_slot, k::active, 0}); break;
      case wire::FrameKind::barrier:
        caf::anon_send(inbound, k{ch.in_slot, k::barrier, f.watermark()});
        break;
      case wire::FrameKind::eos:
        caf::anon_send(inbound, k{ch.in_slot, k::eos, end_of_time});
        break;
      default:
        bad_frame(payload, std::string{"unsupported frame kind "} + wire::EnumNameFrameKind(f.kind()));
        return;
    }
    ++status.frames_in;
    status.data_bytes_in += payload.size();
  }
};

node_server::node_server(node_options opts, const job_registry& jobs)
    : impl_(std::make_unique<impl>(std::move(opts), jobs)) {}

node_server::~node_server() = default;

void node_server::run(const std::atomic<bool>& stop) {
  impl_->run(stop);
  spdlog::info("node '{}' stopped", impl_->opts.id);
}

node_status node_server::status() const { return impl_->current_status(); }

}  // namespace tidemark
