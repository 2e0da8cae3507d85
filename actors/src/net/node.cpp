// The node server behind `tidemark-node`. One I/O thread owns every ZeroMQ socket: the control
// ROUTER (coordinator), the data ROUTER (frames from peer nodes: data for local receivers, credit
// for local senders) and one DEALER per peer it sends to. Stage actors run on a CAF actor system
// per deployment; proxies (remote_channel.hpp) connect them to the I/O thread. Remote channels are
// reliable (reliable_channel.hpp); injected link faults (link_fault_injector.hpp) act on the frames
// the I/O thread sends. What a received frame does is node_dispatch's (node_dispatch.hpp): this
// file owns the sockets and the stage actors it acts on.
#include <poll.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <set>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

#include <spdlog/spdlog.h>

#include "../deploy.hpp"
#include "../live_poll.hpp"
#include "../messages.hpp"
#include "../wiring.hpp"
#include "channels.hpp"
#include "frames.hpp"
#include "node_dispatch.hpp"
#include "remote_channel.hpp"
#include "security.hpp"
#include "tidemark/core/annotated_actor.hpp"
#include "tidemark/persistence/wiredtiger_warm_up.hpp"
#include "tidemark/runtime/cluster.hpp"
#include "tidemark/runtime/heap.hpp"

namespace tidemark {

using clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

/// The stage actors of the deployment running on this node, and its connections to peer nodes.
struct launched {
  std::unique_ptr<caf::actor_system_config> cfg;
  std::unique_ptr<caf::actor_system> sys;
  caf::actor driver;
  std::unique_ptr<detail::deployment_actors> stages;  // stage actors and channel proxies
  std::map<std::uint32_t, std::unique_ptr<zmq::socket_t>> dealers;
  std::uint32_t deployment = 0;  ///< Deploy.deployment, which tags its data frames
  std::function<std::string()> node_report;  ///< the deployment's, for a Done without stages

  ~launched() {
    if (!sys) return;
    if (stages) stages->stop();
    caf::anon_send_exit(driver, caf::exit_reason::user_shutdown);
    driver = nullptr;
    sys.reset();  // waits for the actors to quit
  }
};

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

/// A local replica was stopped (it fell too far behind): its Done is not waited for.
struct forget_stage_msg {
  caf::actor_addr stage;
};

/// A lost copy was restored here (RestoreCopy): its Done is waited for, its counters polled.
struct added_stage_msg {
  caf::actor stage;
};

using live_tick_atom = caf::atom_constant<caf::atom("livetick")>;

}  // namespace
}  // namespace tidemark

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidemark::local_stages_msg)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidemark::forget_stage_msg)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidemark::added_stage_msg)

namespace tidemark {
namespace {

/// Collects done/failed messages of the local stages and reports them to the coordinator; with a
/// live view, asks the stages for their counters every period, publishes them and, when the
/// coordinator asked, sends them to it.
struct driver_state {
  std::size_t expected = 0;
  std::vector<instance_metrics> done;
  std::set<caf::actor_addr> finished;   // the stages whose done came
  std::set<caf::actor_addr> forgotten;  // stopped replicas: nothing more is counted of them
  bool reported = false;
  bool failed = false;
  std::unique_ptr<detail::live_poll> live;  // null: no polling
  std::shared_ptr<live_view> view;
  bool report_live = false;
  std::vector<caf::actor> stages;
};

using driver_actor = caf::stateful_actor<driver_state, detail::annotated_actor>;

/// Sends Done once every local stage that is still counted reported done.
void report_done(driver_actor* self, const std::shared_ptr<net::outbox>& out,
                 const std::string& node, const std::function<std::string()>& node_report) {
  auto& st = self->state;
  if (st.done.size() < st.expected || st.failed || st.reported) return;
  st.reported = true;
  if (st.live) st.live->publish(true);
  out->push({net::outgoing::coordinator,
             net::done_frame(node, st.done, batch_gauge::peak(),
                             node_report ? node_report() : std::string{})});
}

caf::behavior node_driver(driver_actor* self, std::shared_ptr<net::outbox> out,
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
        const auto from = caf::actor_cast<caf::actor_addr>(self->current_sender());
        if (st.forgotten.count(from)) return;
        st.finished.insert(from);
        if (st.live) st.live->update(m.metrics);
        st.done.push_back(std::move(m.metrics));
        report_done(self, out, node, node_report);
      },
      [=](added_stage_msg& m) {
        auto& st = self->state;
        ++st.expected;
        st.reported = false;  // a node without stages said Done at the start
        st.stages.push_back(std::move(m.stage));
      },
      [=](detail::copy_caught_up_msg& m) {
        out->push({net::outgoing::coordinator,
                   net::copy_caught_up_frame(m.stage, m.instance, m.in)});
      },
      [=](forget_stage_msg& m) {
        auto& st = self->state;
        if (st.finished.count(m.stage) || !st.forgotten.insert(m.stage).second) return;
        --st.expected;
        report_done(self, out, node, node_report);
      },
      [=](detail::copy_dropped_msg& m) {
        spdlog::warn("node '{}': stage {} instance {} dropped its output {}: the replica there "
                     "fell too far behind",
                     node, m.stage, m.instance, m.out);
        out->push({net::outgoing::coordinator,
                   net::replica_lagging_frame(m.stage, m.instance, m.out)});
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

struct node_server::impl final : net::node_port {
  // WiredTiger's start-up cost paid while the node waits for the coordinator, not in the first
  // deployment's answer; first member, so the last one destroyed (the future waits)
  std::future<void> wiredtiger_warm =
      std::async(std::launch::async, persistence::warm_up_wiredtiger);
  node_options opts;
  const job_registry& jobs;
  zmq::context_t ctx{1};
  key_pair own;
  std::unique_ptr<net::zap_handler> zap;
  zmq::socket_t control{ctx, zmq::socket_type::router};
  zmq::socket_t data{ctx, zmq::socket_type::router};
  // connections ZeroMQ drops on a frame above its limit, which it does not report otherwise
  std::unique_ptr<net::drop_watch> control_drops, data_drops;
  mutable std::mutex published_mutex;  // guards published: status() reads it from other threads
  node_status published;
  std::shared_ptr<net::outbox> out = std::make_shared<net::outbox>();
  clock::time_point next_heartbeat = clock::now();
  std::unique_ptr<launched> actors;  // of the deployment running here
  // last: it refers to the members above (opts, jobs, and this object as its port)
  std::unique_ptr<net::node_dispatch> dispatch;

  impl(node_options o, const job_registry& j) : opts(std::move(o)), jobs(j) {
    published.node = opts.id;
    std::string coordinator_key;  // Z85; only it may send control messages (empty: --insecure)
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
    dispatch = std::make_unique<net::node_dispatch>(opts, coordinator_key, jobs, *this);
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

  ~impl() override {
    dispatch->end_deployment();
    dispatch.reset();
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

  /// The CURVE key of the peer that sent `m` (Z85), or null (plain text).
  static const char* key_of(zmq::message_t& m) { return zmq_msg_gets(m.handle(), "User-Id"); }

  void to_coordinator(zmq::message_t msg) {
    const auto& coordinator = dispatch->coordinator();
    if (coordinator.empty()) return;
    if (dispatch->faults().unreachable("coordinator")) {
      dispatch->faults().count_dropped();
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
      while (receive(control, id, payload))
        dispatch->on_control({static_cast<const char*>(id.data()), id.size()}, key_of(payload),
                             payload);
      while (receive(data, id, payload)) dispatch->on_data(key_of(payload), payload);
      const auto now = clock::now();
      for (auto& o : out->take())
        if (o.peer == net::outgoing::coordinator && !o.to.empty())
          reply(o.to, std::move(o.msg));
        else if (o.peer == net::outgoing::coordinator)
          to_coordinator(std::move(o.msg));
        else
          dispatch->on_outgoing(std::move(o), now);
      dispatch->keep_channels(now);
      dispatch->faults().flush(now, [&](std::uint32_t peer, zmq::message_t&& m) {
        if (dispatch->current()) dealer(peer).send(m, zmq::send_flags::none);
      });
      dispatch->collect_counters();
      auto* dep = dispatch->current();
      if (dep && dep->started && dep->fence.count() > 0 &&
          now - dispatch->heard_from_coordinator() > dep->fence) {
        // the coordinator has declared this node failed by now and recovers the job elsewhere
        spdlog::error("node '{}': no word from the coordinator for {} ms: stopping job '{}' without "
                      "committing anything more (fenced)",
                      opts.id, dep->fence.count(), dep->built.name());
        dispatch->end_deployment();
        dep = nullptr;
      }
      auto& status = dispatch->status();
      if (dep && !dispatch->coordinator().empty() && clock::now() >= next_heartbeat) {
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
    if (auto t = dispatch->next_due()) due = std::min(due, *t);
    return std::max(0ms, std::chrono::ceil<std::chrono::milliseconds>(due - now));
  }

  zmq::socket_t& dealer(std::uint32_t peer) {
    auto& slot = actors->dealers[peer];
    if (!slot) {
      slot = std::make_unique<zmq::socket_t>(ctx, zmq::socket_type::dealer);
      const auto& n = dispatch->current()->nodes.at(peer);
      net::make_client(*slot, own, n.public_key, opts.insecure, opts.max_message_bytes);
      // credit bounds what is in flight; the high-water mark only guards against bugs
      slot->set(zmq::sockopt::sndhwm, 0);
      slot->connect(data_endpoint(n.endpoint));
    }
    return *slot;
  }

  // ---- node_port: what the dispatch does to this node -----------------------------------------

  void reply(std::string_view to, zmq::message_t msg) override {
    control.send(zmq::buffer(to.data(), to.size()), zmq::send_flags::sndmore);
    control.send(msg, zmq::send_flags::none);
  }
  void reply_later(std::string to, zmq::message_t msg) override {
    out->push({net::outgoing::coordinator, std::move(msg), 0, 0, std::move(to)});
  }

  std::vector<std::string> launch(net::deployment& x, detail::restore_point from) override {
    // tiered window state lives under the node's data directory (a temporary one without it)
    x.opts.storage.data_dir = opts.data_dir;
    if (x.opts.tune_malloc) tune_heap(x.opts.storage.memory_budget_bytes);
    x.opts.state_storage = std::make_shared<persistence::storage_service>(x.opts.storage);
    const auto& g = x.synced.graph;
    auto fresh = std::make_unique<launched>();
    fresh->cfg = std::make_unique<caf::actor_system_config>();
    detail::configure(*fresh->cfg, x.opts);
    fresh->sys = std::make_unique<caf::actor_system>(*fresh->cfg);
    auto& sys = *fresh->sys;
    batch_gauge::reset_peak();
    const auto& where = x.where;
    fresh->driver = sys.spawn(node_driver, out, opts.id, where.local_instances(), live_of(x),
                              x.chunk_bytes, x.node_report);
    fresh->node_report = x.node_report;
    fresh->deployment = x.id;
    // the synchronizers of the timezones run in the coordinator (docs/timezones.md)
    for (const auto& link : x.synced.links)
      link->set_sender([out = out, id = x.id, tz = link->timezone()](const sync_report& r) {
        out->push({net::outgoing::coordinator, net::sync_report_frame(id, tz, r)});
      });
    const auto remote = remote_of(*fresh);
    fresh->stages = std::make_unique<detail::deployment_actors>(
        sys, g, x.plan, x.wiring, where, x.opts, fresh->driver, &remote, &from);
    caf::anon_send(fresh->driver, local_stages_msg{fresh->stages->stages()});
    actors = std::move(fresh);
    next_heartbeat = clock::now();
    return actors->stages->unreplayable();
  }

  void start() override {
    if (!actors) return;
    actors->stages->start();
    // a node that hosts no instance of the job (more nodes than stages) is done at once: the
    // coordinator waits for every node's Done
    if (actors->stages->stages().empty())
      out->push({net::outgoing::coordinator,
                 net::done_frame(opts.id, {}, 0,
                                 actors->node_report ? actors->node_report() : std::string{})});
  }

  /// Stops the actors; what they left in the outbox for peers is dropped, for the coordinator
  /// sent.
  void halt() override {
    actors.reset();  // waits for the actors: nothing more comes into the outbox
    for (auto& o : out->take())
      if (o.peer == net::outgoing::coordinator) to_coordinator(std::move(o.msg));
  }

  void lose_node(std::uint32_t node) override {
    if (actors) actors->stages->lose_node(node);
  }

  void lose_copy(std::uint32_t k, std::uint32_t copy) override {
    if (!actors) return;
    if (auto stopped = actors->stages->lose_copy(k, copy))
      caf::anon_send(actors->driver, forget_stage_msg{stopped.address()});
  }

  void restore_copy(const net::deployment& d, detail::wiring::endpoint e, std::uint32_t node,
                    const detail::restore_point& from) override {
    if (!actors) return;
    auto& x = *actors;
    auto spawned = x.stages->restore_copy(
        e, node, from, remote_of(x), [&d](std::uint32_t k, std::uint32_t c) { return d.lost(k, c); });
    if (spawned) caf::anon_send(x.driver, added_stage_msg{std::move(spawned)});
  }

  void connect_copy(const net::deployment&, detail::wiring::endpoint e,
                    std::uint64_t checkpoint) override {
    if (actors) actors->stages->connect_copy(e, checkpoint, remote_of(*actors));
  }

  /// Proxies for the channels of the deployment `l` runs that cross to other nodes.
  detail::remote_channels remote_of(launched& l) {
    detail::remote_channels remote;
    remote.outbound = [this, &l](std::uint32_t c, std::uint32_t peer, const batch_codec* codec) {
      return net::spawn_outbound(*l.sys, out, c, peer, codec, l.deployment);
    };
    remote.inbound = [this, &l](std::uint32_t c, std::uint32_t peer, caf::actor receiver) {
      return net::spawn_inbound(*l.sys, out, c, peer, std::move(receiver));
    };
    return remote;
  }

  void checkpoint(std::uint64_t id) override {
    // every stage hears of it: sources start it, stages that ended answer for themselves
    if (actors)
      for (const auto& a : actors->stages->stages())
        caf::anon_send(a, detail::checkpoint_atom::value, id);
  }

  void commit(std::uint64_t id) override {
    if (actors)
      for (const auto& a : actors->stages->stages())
        caf::anon_send(a, detail::commit_atom::value, id);
  }

  void to_sender(std::uint32_t channel, detail::credit_msg m) override {
    caf::anon_send(actors->stages->senders()[channel], m);
  }

  void to_receiver(std::uint32_t channel, detail::data_msg m) override {
    caf::anon_send(actors->stages->inbound()[channel], std::move(m));
  }

  void to_receiver(std::uint32_t channel, detail::signal_msg m) override {
    caf::anon_send(actors->stages->inbound()[channel], m);
  }

  void outside_counters(node_status& s) override {
    s.refused_peers = zap ? zap->refused() : 0;
    s.oversized_frames += control_drops->dropped() + data_drops->dropped();
  }

  /// The node's own view (for its /metrics) or, when only the coordinator asked for live metrics,
  /// one of the deployment's; the coordinator's period wins.
  live_setup live_of(const net::deployment& x) const {
    live_setup live;
    live.report = x.live_period.count() > 0;
    live.view = opts.live ? opts.live : live.report ? std::make_shared<live_view>() : nullptr;
    live.period = live.report ? x.live_period : opts.live_period;
    std::vector<std::string> node_of;
    for (auto n : x.where.node_of) node_of.push_back(x.nodes[n].id);
    live.plan = live_plan::of(x.built.name(), x.synced.graph, x.plan, node_of);
    return live;
  }
};

node_server::node_server(node_options opts, const job_registry& jobs) {
  tune_heap();  // before the node's first thread: WiredTiger's, ZeroMQ's
  impl_ = std::make_unique<impl>(std::move(opts), jobs);
}

node_server::~node_server() = default;

void node_server::run(const std::atomic<bool>& stop) {
  impl_->run(stop);
  spdlog::info("node '{}' stopped", impl_->opts.id);
}

node_status node_server::status() const { return impl_->current_status(); }

}  // namespace tidemark
