// The coordinator: deploys a registered job's physical plan on the nodes of a cluster file,
// starts it, watches heartbeats, collects metrics and reports the result (see cluster.hpp).
#include <algorithm>
#include <array>
#include <deque>
#include <tuple>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <utility>

#include <spdlog/spdlog.h>

#include "../checkpointing.hpp"
#include "../live_poll.hpp"
#include "../wiring.hpp"
#include "channels.hpp"
#include "checkpoint_copies.hpp"
#include "frames.hpp"
#include "replica_planner.hpp"
#include "security.hpp"
#include "tidemark/runtime/cluster.hpp"
#include "tidemark/runtime/faults.hpp"

namespace tidemark {

using clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

/// A copy restored after a takeover that has not caught up by then is given up with a warning (its
/// senders or receivers may have finished meanwhile).
constexpr std::chrono::seconds restore_timeout{10};

namespace {

std::string str(const flatbuffers::String* s) { return s ? s->str() : std::string{}; }

/// One DEALER per node; replies are verified like every other received frame.
class control_links {
 public:
  explicit control_links(const cluster_config& c) : cluster_(c) {
    if (c.insecure) net::warn_insecure("the coordinator");
    sockets_.reserve(c.nodes.size());  // each watch holds on to its socket
    for (const auto& n : c.nodes) {
      auto& s = sockets_.emplace_back(ctx_, zmq::socket_type::dealer);
      net::make_client(s, c.coordinator, n.public_key, c.insecure, c.max_message_bytes);
      // the pieces of a restored checkpoint may be many chunks: queue them all, never drop one
      s.set(zmq::sockopt::sndhwm, 0);
      // counts frames above the limit (ZeroMQ drops their connection unseen) and every broken
      // connection, so a killed node is reported before its heartbeats are overdue
      watches_.push_back(std::make_unique<net::drop_watch>(
          ctx_, s, "coordinator (link to node '" + n.id + "')", c.max_message_bytes));
      s.connect(n.endpoint);
    }
    disconnects_seen_.assign(c.nodes.size(), 0);
  }

  /// Never blocks: a node whose connection was refused has nowhere to queue, and whatever the
  /// message was, the timeouts of the step that waits for answers report it.
  void send(std::uint32_t node, zmq::message_t msg) {
    (void)sockets_[node].send(msg, zmq::send_flags::dontwait);
  }

  template <class Make>
  void send_all(Make make) {
    for (std::uint32_t n = 0; n < sockets_.size(); ++n) send(n, make(n));
  }

  /// Waits up to `timeout` for one frame from any node; calls f(node, frame) for each frame that
  /// passes verification. Returns false when nothing came.
  template <class F>
  bool poll(std::chrono::milliseconds timeout, F&& f) {
    std::vector<zmq::pollitem_t> items;
    for (auto& s : sockets_) items.push_back({s.handle(), 0, ZMQ_POLLIN, 0});
    if (zmq::poll(items, timeout) <= 0) return false;
    for (std::uint32_t n = 0; n < sockets_.size(); ++n) {
      zmq::message_t received, copy;
      while (sockets_[n].recv(received, zmq::recv_flags::dontwait)) {
        // a plain-text frame may sit at any address; FlatBuffers reads scalars in place
        auto& m = net::aligned_frame(received, copy);
        if (auto bad = net::verify_control(m.data(), m.size(), cluster_.max_message_bytes)) {
          bad_frame(n, *bad);
          continue;
        }
        const auto& frame = net::read_control(m);
        if (auto refused = net::check_version(frame))
          throw job_error("node '" + cluster_.nodes[n].id + "': " + *refused);
        ++frames_in_;
        f(n, frame);
      }
    }
    return true;
  }

  /// Nodes whose connection broke since the last call, in order, once per break.
  std::vector<std::uint32_t> disconnected() {
    std::vector<std::uint32_t> out;
    for (std::uint32_t n = 0; n < watches_.size(); ++n)
      for (const auto now = watches_[n]->disconnects(); disconnects_seen_[n] < now;
           ++disconnects_seen_[n])
        out.push_back(n);
    return out;
  }

  /// Drops a frame of node `n` that cannot be used, saying why.
  void bad_frame(std::uint32_t n, const std::string& why) {
    ++bad_frames_;
    spdlog::warn("coordinator: dropped a bad frame from node '{}': {}", cluster_.nodes[n].id, why);
  }

  /// A verified frame whose content cannot be used: counted as bad instead of received.
  void refuse(std::uint32_t n, const std::string& why) {
    --frames_in_;
    bad_frame(n, why);
  }

  /// Frames received and dropped so far, as the coordinator's entry of a live view.
  node_status status() const {
    node_status s;
    s.node = "coordinator";
    s.frames_in = frames_in_;
    s.bad_frames = bad_frames_;
    for (const auto& w : watches_) s.oversized_frames += w->dropped();
    return s;
  }

 private:
  std::uint64_t frames_in_ = 0;
  std::uint64_t bad_frames_ = 0;
  const cluster_config& cluster_;
  zmq::context_t ctx_{1};
  std::vector<zmq::socket_t> sockets_;
  std::vector<std::unique_ptr<net::drop_watch>> watches_;  // per node; stop before its socket
  std::vector<std::uint64_t> disconnects_seen_;            // per node: breaks reported so far
};

/// The synchronizers of the job's timezones (docs/timezones.md, "On a cluster"). They run here:
/// every gate and exit reaches the coordinator over its control connection already, and one
/// place applies each timezone's reports in the order they arrive. Fresh for every deployment;
/// reports of a deployment a recovery replaced are dropped.
class synchronizers {
 public:
  explicit synchronizers(control_links& links) : links_(links) {}

  /// Deployment `id` runs on `members` (cluster indices), each timezone from its initial state.
  void deploy(const synchronized_graph& g, std::uint32_t id, std::vector<std::uint32_t> members) {
    deployment_ = id;
    members_ = std::move(members);
    zones_.clear();
    for (const auto& link : g.links)
      zones_.emplace_back(link->gates(), link->exits(), link->time_slice());
  }

  /// A gate's or an exit's report from node `n`; a new bound goes to every node of the deployment.
  void on_report(std::uint32_t n, const wire::SyncReport& f) {
    if (f.deployment() != deployment_) return;
    const auto report = net::read_sync_report(f);
    const auto tz = f.timezone();
    if (!report || tz >= zones_.size()) {
      links_.refuse(n, "a report to timezone " + std::to_string(tz) +
                           ", which the job does not have, or of an unknown kind");
      return;
    }
    bool moved = false;
    try {
      moved = zones_[tz].apply(*report);
    } catch (const std::out_of_range&) {
      links_.refuse(n, "a report of gate or exit " + std::to_string(report->index) +
                           ", which timezone " + std::to_string(tz) + " does not have");
      return;
    }
    if (!moved) return;
    const auto bound = zones_[tz].current();
    for (auto m : members_) links_.send(m, net::sync_bound_frame(deployment_, tz, bound));
  }

 private:
  control_links& links_;
  std::uint32_t deployment_ = 0;
  std::vector<std::uint32_t> members_;
  std::vector<synchronizer_logic> zones_;
};

/// Sends every node `request` (CopiesRequest or DropCopies) and returns the checkpoint copies
/// each says it keeps; waits at most `timeout` for the answers (none for a node that did not
/// answer).
std::vector<std::optional<net::held_copies>> ask_held(control_links& links,
                                                      const cluster_config& cluster,
                                                      const std::function<zmq::message_t()>& request,
                                                      std::chrono::milliseconds timeout) {
  const auto count = cluster.nodes.size();
  links.send_all([&](std::uint32_t) { return request(); });
  std::vector<std::optional<net::held_copies>> answers(count);
  std::size_t answered = 0;
  const auto deadline = clock::now() + timeout;
  auto left = [&] {
    return std::max(0ms, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()));
  };
  while (answered < count && left() > 0ms)
    links.poll(left(), [&](std::uint32_t n, const wire::ControlFrame& f) {
      if (f.body_type() != wire::Body::HeldCopies || answers[n]) return;
      answers[n] = net::read_held(*f.body_as_HeldCopies());
      ++answered;
    });
  return answers;
}

/// A resumed run whose data directory holds no checkpoint (the coordinator's host was lost):
/// asks every node for the copies it keeps, and stores in `checkpoints` the newest checkpoint of
/// the job and plan whose pieces (`instances` of them) the nodes hold together, fetched from them
/// (each node checks its pieces' CRCs before it sends them). Nothing when no node holds one.
void fetch_newest_copy(control_links& links, const cluster_config& cluster, const std::string& job,
                       std::uint32_t instances, detail::checkpoint_driver& checkpoints) {
  using piece_key = std::pair<std::uint32_t, std::uint32_t>;
  const auto& plan = checkpoints.plan_fingerprint();
  const auto count = static_cast<std::uint32_t>(cluster.nodes.size());
  std::map<std::uint64_t, std::map<piece_key, std::vector<std::uint32_t>>> held;  // id -> holders
  std::size_t answered = 0;
  const auto answers = ask_held(links, cluster, [&] { return net::copies_request_frame(job); },
                                cluster.connect_timeout);
  for (std::uint32_t n = 0; n < count; ++n) {
    if (!answers[n]) continue;
    ++answered;
    if (!answers[n]->error.empty())
      spdlog::warn("coordinator: node '{}' cannot read its checkpoint copies: {}",
                   cluster.nodes[n].id, answers[n]->error);
    for (const auto& c : answers[n]->checkpoints)
      if (c.record.plan == plan)
        for (const auto& k : c.pieces) held[c.record.id][k].push_back(n);
  }
  auto newest = std::find_if(held.rbegin(), held.rend(),
                             [&](const auto& h) { return h.second.size() == instances; });
  if (newest == held.rend()) {
    spdlog::info("coordinator: the data directory holds no checkpoint and no node keeps a "
                 "complete copy of one of job '{}' ({} of {} nodes answered)",
                 job, answered, count);
    return;
  }
  const auto id = newest->first;
  std::set<std::uint32_t> from;  // the first holder of each piece, in the cluster file's order
  for (const auto& [k, holders] : newest->second) from.insert(holders.front());
  for (auto n : from) links.send(n, net::fetch_copies_frame(id, job, plan));
  std::vector<net::piece_assembler> assemblers(count);
  std::map<piece_key, std::string> pieces;
  std::set<std::uint32_t> done;
  const auto fetch_deadline = clock::now() + cluster.connect_timeout;
  while (done.size() < from.size()) {
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(fetch_deadline - clock::now());
    if (wait <= 0ms)
      throw job_error("fetching checkpoint " + std::to_string(id) + " of job '" + job +
                      "' from the nodes' copies: not every node sent its pieces within " +
                      std::to_string(cluster.connect_timeout.count()) + " ms");
    links.poll(wait, [&](std::uint32_t n, const wire::ControlFrame& f) {
      if (!from.count(n)) return;
      if (f.body_type() == wire::Body::StatePiece) {
        try {
          if (auto p = assemblers[n].add(*f.body_as_StatePiece()); p && p->checkpoint == id)
            pieces[{p->stage, p->instance}] = std::move(p->bytes);
        } catch (const net::bad_chunk& e) {
          links.refuse(n, e.what());
        }
      } else if (f.body_type() == wire::Body::CopiesFetched && f.body_as_CopiesFetched()->id() == id) {
        if (const auto error = str(f.body_as_CopiesFetched()->error()); !error.empty())
          throw job_error("fetching checkpoint " + std::to_string(id) + " of job '" + job +
                          "' from node '" + cluster.nodes[n].id + "': " + error);
        done.insert(n);
      }
    });
  }
  if (pieces.size() != instances)
    throw job_error("fetching checkpoint " + std::to_string(id) + " of job '" + job + "': the " +
                    "nodes sent " + std::to_string(pieces.size()) + " of its " +
                    std::to_string(instances) + " pieces");
  persistence::checkpoint_record record;
  record.id = id;
  record.job = job;
  record.plan = plan;
  record.pieces = instances;
  for (auto n : from) record.holders.push_back(cluster.nodes[n].id);
  checkpoints.adopt(record, pieces);
  spdlog::info("coordinator: the data directory held no checkpoint: fetched checkpoint {} of job "
               "'{}' from the copies on node(s) {}",
               id, job, fmt::join(record.holders, ", "));
}

template <class Body>
zmq::message_t empty_control() {
  flatbuffers::FlatBufferBuilder b{64};
  typename Body::Builder body{b};
  return net::control_message(b, body.Finish());
}

/// What the coordinator sends the nodes so they know it still leads the job (fencing).
zmq::message_t coordinator_heartbeat() {
  flatbuffers::FlatBufferBuilder b{64};
  return net::control_message(b, wire::CreateHeartbeat(b, b.CreateString("coordinator")));
}

zmq::message_t stop_message(const std::string& reason) {
  flatbuffers::FlatBufferBuilder b;
  return net::control_message(b, wire::CreateStop(b, b.CreateString(reason)));
}

/// Warns when a node's heartbeat counts more refusals than its previous one did: frames above its
/// size limit, control messages from a key that is not the coordinator's, data frames from a node
/// that does not own the channel. The job goes on; the node's log names the peers.
class refusal_log {
 public:
  explicit refusal_log(std::size_t nodes) : last_(nodes) {}

  void update(std::uint32_t n, const node_status& now) {
    auto& was = last_[n];
    report(now, now.oversized_frames, was.oversized_frames,
           "frames above its size limit (--max-message-bytes)");
    report(now, now.refused_control, was.refused_control,
           "control messages from a key that is not the coordinator's");
    report(now, now.refused_data, was.refused_data,
           "data frames from a node that does not own their channel");
    was = now;  // a restarted node counts from 0 again
  }

 private:
  static void report(const node_status& s, std::uint64_t now, std::uint64_t before,
                     const char* what) {
    if (now > before)
      spdlog::warn("coordinator: node '{}' refused {} {} ({} since it started; its log names the "
                   "peers)",
                   s.node, now - before, what, now);
  }

  std::vector<node_status> last_;
};

/// "window (instances 1, 4), counts (instance 1)": what node `n` hosted (primaries or replicas).
std::string hosted(const logical_graph& g, const physical_plan& p, const detail::placement& where,
                   std::uint32_t n) {
  std::string out;
  std::uint32_t at = 0;
  for (const auto& st : p.stages) {
    std::vector<std::uint32_t> mine;
    for (std::uint32_t i = 0; i < st.parallelism; ++i, ++at)
      if (where.node_of[at] == n || (at < where.replicas.size() &&
                                     std::count(where.replicas[at].begin(),
                                                where.replicas[at].end(), n) > 0))
        mine.push_back(i);
    if (mine.empty()) continue;
    std::string list;
    for (auto i : mine) list += (list.empty() ? "" : ", ") + std::to_string(i);
    for (const auto& op : st.ops) {
      if (!out.empty()) out += ", ";
      out += g.node(op.node).name + (mine.size() == 1 ? " (instance " : " (instances ") + list + ")";
    }
  }
  return out.empty() ? "no operators" : out;
}

/// Degraded mode (`on_loss: continue`, docs/replication.md): the stage instances (flat, plan order)
/// in `dead`, closed downstream along `w`'s channels, since an instance missing one of its inputs
/// would compute wrong results. Stages follow the stages they read from: one pass suffices.
std::vector<bool> close_downstream(std::vector<bool> dead, const detail::wiring& w,
                                   const std::vector<std::uint32_t>& offsets) {
  for (std::uint32_t s = 0; s < w.outputs.size(); ++s)
    for (std::uint32_t i = 0; i < w.outputs[s].size(); ++i)
      if (dead[offsets[s] + i])
        for (const auto& out : w.outputs[s][i])
          dead[offsets[out.to.stage] + out.to.instance] = true;
  return dead;
}

/// The sinks (query names) among the stages with a dead instance, in plan order.
std::vector<std::string> stopped_sinks(const logical_graph& g, const physical_plan& p,
                                       const std::vector<bool>& dead,
                                       const std::vector<std::uint32_t>& offsets) {
  std::vector<std::string> out;
  for (std::uint32_t s = 0; s < p.stages.size(); ++s)
    for (std::uint32_t i = 0; i < p.stages[s].parallelism; ++i)
      if (dead[offsets[s] + i]) {
        for (const auto& op : p.stages[s].ops)
          if (g.node(op.node).kind == node_kind::sink) out.push_back(g.node(op.node).name);
        break;
      }
  return out;
}

/// The cluster of the nodes that answered (`members`, cluster indices, in order): a pin to a node
/// that did not answer is dropped, so the pinned stage moves to another node.
cluster_config answering(const cluster_config& cluster, const std::vector<std::uint32_t>& members) {
  cluster_config on = cluster;
  on.nodes.clear();
  for (auto n : members) on.nodes.push_back(cluster.nodes[n]);
  for (auto it = on.pins.begin(); it != on.pins.end();) {
    if (on.find(it->second)) {
      ++it;
      continue;
    }
    spdlog::warn("coordinator: operator '{}' is pinned to node '{}', which is gone: it moves to "
                 "another node",
                 it->first, it->second);
    it = on.pins.erase(it);
  }
  return on;
}

/// What a Deploy tells node `self` of `on`.
struct deploy_args {
  const std::string& job;
  const job_options& options;
  const cluster_config& on;
  const std::vector<std::uint32_t>& placement;
  const std::vector<std::vector<std::uint32_t>>& replicas;  ///< per stage instance: their nodes
  std::uint32_t self;
  const run_options& opts;
  std::uint64_t restore_checkpoint;
  std::uint32_t deployment;
  std::chrono::milliseconds fence;
  /// The replication planner's figures for this plan (Deploy 1.7,
  /// docs/replication.md#visibility-tidemark-status): spare budget used, replica load, predicted
  /// availability; -1: unknown.
  double spare_budget = -1;
  double replica_load = -1;
  double predicted_availability = -1;
};

zmq::message_t deploy_message(const deploy_args& a) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<std::string> names, values;
  for (const auto& [k, v] : a.options.values()) {
    names.push_back(k);
    values.push_back(v);
  }
  std::vector<flatbuffers::Offset<wire::NodeAddress>> nodes;
  for (const auto& n : a.on.nodes)
    nodes.push_back(wire::CreateNodeAddress(b, b.CreateString(n.id), b.CreateString(n.endpoint),
                                            b.CreateString(n.public_key)));
  const auto& o = a.opts;
  flatbuffers::Offset<flatbuffers::Vector<std::uint32_t>> replica_counts, replica_nodes;
  if (std::any_of(a.replicas.begin(), a.replicas.end(), [](auto& r) { return !r.empty(); })) {
    std::vector<std::uint32_t> counts, where;
    for (const auto& r : a.replicas) {
      counts.push_back(static_cast<std::uint32_t>(r.size()));
      where.insert(where.end(), r.begin(), r.end());
    }
    replica_counts = b.CreateVector(counts);
    replica_nodes = b.CreateVector(where);
  }
  auto body = wire::CreateDeploy(
      b, b.CreateString(a.job), b.CreateVectorOfStrings(names), b.CreateVectorOfStrings(values),
      b.CreateVector(nodes), a.self, b.CreateVector(a.placement),
      static_cast<std::uint32_t>(o.batch_size), o.credit,
      static_cast<std::uint32_t>(o.linger.count()), o.fuse,
      static_cast<std::uint32_t>(a.on.heartbeat_interval.count()),
      o.live ? static_cast<std::uint32_t>(std::max<std::int64_t>(1, o.live_period.count())) : 0u,
      a.restore_checkpoint, a.deployment, static_cast<std::uint64_t>(a.on.max_message_bytes),
      static_cast<std::uint32_t>(a.fence.count()), o.deterministic_merge, replica_counts,
      replica_nodes, o.replica_lag, o.adaptive_batching,
      o.checkpoints.enabled() ? o.replay_limit : 0, a.spare_budget, a.replica_load,
      a.predicted_availability, o.checkpoints.enabled() && o.checkpoints.unaligned,
      o.synchronizers.enabled, o.synchronizers.time_slice,
      static_cast<std::uint64_t>(o.synchronizers.max_buffered));
  return net::control_message(b, body);
}

}  // namespace

job_result run_on_cluster(const job_spec& spec, job_options options, const cluster_config& cluster,
                          run_options opts) {
  // replicas on spare CPU are planned from the load the nodes' live counters show
  if (!cluster.planned.spare.empty() && !opts.live) opts.live = std::make_shared<live_view>();
  opts.credit = opts.channel_credit();
  if (cluster.continue_on_loss && opts.checkpoints.enabled())
    throw job_error("the cluster file says 'on_loss: continue' and the run has checkpoints: "
                    "degraded mode does not take part in checkpoints yet (a recovery would "
                    "restart the stopped queries); drop one of the two");
  auto checkpoint_opts = opts.checkpoints;
  checkpoint_opts.job_settings = options.text();  // as given, before prepare resolves any
  std::shared_ptr<void> prepared = spec.prepare_cluster ? spec.prepare_cluster(options, cluster)
                                   : spec.prepare       ? spec.prepare(options)
                                                        : nullptr;
  auto j = spec.build(options);
  const auto synced = detail::executable_graph(j, opts);
  const auto& g = synced.graph;
  auto plan = compile(g, {opts.fuse});
  if (opts.checkpoints.enabled()) {
    const auto loops = loops_of(plan);
    if (std::any_of(loops.begin(), loops.end(), [](std::int32_t l) { return l >= 0; }))
      throw job_error("job '" + j.name() + "' has a loop: on a cluster it runs without "
                      "checkpoints for now (docs/timezones.md, \"Loops at run time\"); run it "
                      "with --checkpoint-interval 0 or without --data-dir");
  }
  // fails early, before any node is contacted, when the cluster file cannot hold the job
  net::replica_planner planner{g, plan, cluster};
  {
    const auto placement = place(g, plan, cluster);
    check_placement(g, plan, placement, cluster,
                    planner.enabled()
                        ? plan_spare_replicas(g, plan, placement, cluster,
                                              instance_loads(g, plan, cluster))
                              .replicas
                        : place_replicas(g, plan, placement, cluster));
  }
  const auto offsets = net::instance_offsets(plan);
  const auto instances = static_cast<std::uint32_t>(
      plan.stages.empty() ? 0 : offsets.back() + plan.stages.back().parallelism);

  job_result result;
  result.job = j.name();
  result.plan = to_text(synced, plan);
  // the checkpoint database lives here, on another host than the nodes that write the pieces
  detail::checkpoint_driver checkpoints{checkpoint_opts, j.name(), result.plan, instances};
  checkpoints.keep_latest();  // a copy's restore reads it while the job runs: never from the disk
  control_links links{cluster};
  if (checkpoints.nothing_to_resume())  // this host's store is gone: the nodes keep copies
    fetch_newest_copy(links, cluster, j.name(), instances, checkpoints);
  auto from = checkpoints.start_point();
  result.restored_from = from.checkpoint;

  // Fencing: with recovery, a node cut off from the coordinator stops its deployment before the
  // coordinator gives up on it and recovers the job elsewhere, so the two never run side by side.
  // Without checkpoints there is no recovery to race with.
  const auto fence = checkpoints.enabled() ? cluster.heartbeat_timeout * 3 / 4 : 0ms;
  const auto beat_every =
      std::max<std::chrono::milliseconds>(1ms, std::min(cluster.heartbeat_interval, fence / 4));
  const auto count = static_cast<std::uint32_t>(cluster.nodes.size());
  std::vector<std::uint32_t> everyone(count);
  std::iota(everyone.begin(), everyone.end(), 0u);
  bool stopped_early = false;
  synchronizers zones{links};
  auto stop_all = [&](const std::string& why) {
    links.send_all([&](std::uint32_t) { return stop_message(why); });
  };
  // Waits until every node of `expected` (cluster indices) answered with `Body`; returns those
  // that did. When they must all answer, fails naming the ones that did not.
  auto await = [&](const std::vector<std::uint32_t>& expected, wire::Body want, const char* step,
                   bool all_must_answer, auto&& on_reply) {
    std::vector<bool> answered(count, false);
    std::size_t answers = 0;
    auto deadline = clock::now() + cluster.connect_timeout;
    while (answers < expected.size()) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
      if (left <= 0ms) {
        if (!all_must_answer) break;
        std::string missing;
        for (auto n : expected)
          if (!answered[n])
            missing += (missing.empty() ? "" : ", ") + ("'" + cluster.nodes[n].id + "' at " +
                                                        cluster.nodes[n].endpoint);
        stop_all(std::string{"no answer to "} + step);
        throw job_error(std::string{"no answer to "} + step + " within " +
                        std::to_string(cluster.connect_timeout.count()) + " ms from node " + missing +
                        ": is it running, and is the coordinator's public key in its allow-list "
                        "(--keys DIR)?");
      }
      links.poll(left, [&](std::uint32_t n, const wire::ControlFrame& f) {
        // restored gates and exits report while their nodes deploy
        if (f.body_type() == wire::Body::SyncReport) {
          zones.on_report(n, *f.body_as_SyncReport());
          return;
        }
        if (f.body_type() == wire::Body::HelloReply && !f.body_as_HelloReply()->accepted())
          throw job_error("node '" + cluster.nodes[n].id +
                          "' refused the coordinator: " + str(f.body_as_HelloReply()->reason()));
        if (f.body_type() != want || answered[n] ||
            std::find(expected.begin(), expected.end(), n) == expected.end())
          return;
        on_reply(n, f);
        answered[n] = true;
        ++answers;
      });
    }
    std::vector<std::uint32_t> result;
    for (auto n : expected)
      if (answered[n]) result.push_back(n);
    return result;
  };
  auto hello = [](std::uint32_t) {
    flatbuffers::FlatBufferBuilder b;
    return net::control_message(b, wire::CreateHello(b, b.CreateString("coordinator")));
  };

  // Each pass deploys the job on the nodes that answered and runs it until it finishes or a node
  // is lost; after a loss (with checkpoints) the next pass restarts it from the latest completed
  // checkpoint on the nodes that answer then.
  std::random_device random;
  const std::uint32_t first_deployment = random();
  std::vector<net::piece_assembler> assemblers(count);
  refusal_log refusals{count};
  std::optional<clock::time_point> lost_at;  // set while recovering
  std::optional<clock::time_point> migrating_since;  // set while moving to a new replica plan
  int failed_recoveries = 0;                 // in a row
  auto started = clock::now();
  for (std::uint32_t pass = 0;; ++pass) {
    links.send_all(hello);
    // a recovery goes on with the nodes that answer, a lost node that was restarted included
    const auto members = await(everyone, wire::Body::HelloReply, "hello",
                               !lost_at && !migrating_since, [](auto, const auto&) {});
    if (members.empty())
      throw job_error("job '" + j.name() + "' lost a node and no node of the cluster answers "
                      "any more");
    const auto on = answering(cluster, members);
    const auto placement = place(g, plan, on);
    std::vector<std::vector<std::uint32_t>> replicas;
    try {
      replicas = planner.enabled() ? planner.deploy(placement, on)
                                   : place_replicas(g, plan, placement, on);
    } catch (const job_error& e) {
      if (!lost_at) throw;
      // a recovery on fewer nodes: the job goes on, without the copies that no longer fit
      spdlog::warn("coordinator: recovering job '{}' without replicas: {}", j.name(), e.what());
      result.warnings.push_back("recovered without replicas: " + std::string{e.what()});
    }
    check_placement(g, plan, placement, on, replicas);
    // copies restored after a takeover move (docs/replication.md)
    detail::placement where{placement, 0, replicas};
    std::vector<std::string> ids;
    for (const auto& n : on.nodes) ids.push_back(n.id);
    const auto job_nodes = static_cast<std::uint32_t>(members.size());
    std::vector<std::optional<std::uint32_t>> member_of(count);
    for (std::uint32_t m = 0; m < job_nodes; ++m) member_of[members[m]] = m;

    // the pieces of each node's instances go before its Deploy, on the same ordered connection
    const auto chunk = net::piece_chunk_bytes(cluster.max_message_bytes);
    std::set<std::uint32_t> restoring_members;  // those that host an instance, so get pieces
    for (std::uint32_t s = 0; s < plan.stages.size() && from.checkpoint; ++s)
      for (std::uint32_t i = 0; i < plan.stages[s].parallelism; ++i)
        if (auto piece = from.pieces.find({s, i}); piece != from.pieces.end()) {
          // every copy of the instance starts from its one piece
          std::set<std::uint32_t> to;
          for (std::uint32_t c = 0; c <= where.replicas_of(offsets[s] + i); ++c)
            to.insert(where.node(offsets[s] + i, c));
          for (auto m : to) {
            restoring_members.insert(m);
            for (auto& f : net::piece_frames(from.checkpoint, s, i, piece->second, 0, chunk))
              links.send(members[m], std::move(f));
          }
        }
    // nodes drop data frames of another deployment (0 is what a coordinator without recovery sends)
    const std::uint32_t deployment = std::max(1u, first_deployment + pass);
    const auto* spare = planner.current();
    zones.deploy(synced, deployment, members);
    std::string refused;  // a node's deploy error
    std::vector<std::string> unreplayable;  // the nodes' sources that cannot replay
    std::vector<std::uint32_t> deployed;
    // the node of a pinned broker first: it starts the broker while it deploys, and the other
    // nodes' clients connect to it while they deploy
    const auto broker_node = cluster.find(cluster.broker.node);
    std::array<std::vector<std::uint32_t>, 2> waves;  // member indices
    for (std::uint32_t m = 0; m < job_nodes; ++m)
      waves[members[m] == broker_node ? 0 : 1].push_back(m);
    for (const auto& wave : waves) {
      std::vector<std::uint32_t> expected;
      for (auto m : wave) {
        links.send(members[m], deploy_message({spec.name, options, on, placement, replicas, m, opts,
                                               restoring_members.count(m) ? from.checkpoint : 0,
                                               deployment, fence,
                                               spare ? spare->budget : -1,
                                               spare ? spare->replica_load : -1,
                                               spare ? spare->availability : -1}));
        expected.push_back(members[m]);
      }
      const auto answered = await(expected, wire::Body::Deployed, "deploy", !lost_at,
                                  [&](std::uint32_t n, const wire::ControlFrame& f) {
        const auto* d = f.body_as_Deployed();
        if (d->ok()) {
          if (d->unreplayable())
            for (const auto* name : *d->unreplayable()) unreplayable.push_back(str(name));
          return;
        }
        refused = "node '" + cluster.nodes[n].id + "' could not deploy job '" + spec.name + "': " +
                  str(d->error());
        if (lost_at) return;  // the first deployment worked: probably lost again, see below
        stop_all("deploy failed on another node");
        throw job_error(refused);
      });
      deployed.insert(deployed.end(), answered.begin(), answered.end());
      if (answered.size() < expected.size() || !refused.empty()) break;
    }
    if (deployed.size() < members.size() || !refused.empty()) {
      // a node lost again while recovering (restarted while its pieces were on the way, say):
      // once more, but not forever
      stop_all("recovering");
      if (++failed_recoveries == 3)
        throw job_error("job '" + j.name() + "' could not be recovered 3 times in a row: " +
                        (refused.empty() ? "a node did not answer deploy" : refused));
      spdlog::warn("coordinator: {} while recovering job '{}': recovering again",
                   refused.empty() ? "a node did not answer deploy" : refused, j.name());
      from = checkpoints.recover();
      continue;
    }
    failed_recoveries = 0;
    if (lost_at)
      spdlog::warn("coordinator: job '{}' recovered in {:.3f} s from {} on {}", j.name(),
                   std::chrono::duration<double>(clock::now() - *lost_at).count(),
                   from.checkpoint ? "checkpoint " + std::to_string(from.checkpoint)
                                   : std::string{"the beginning (no checkpoint had completed)"},
                   fmt::join(ids, ", "));
    else if (migrating_since)
      spdlog::info("coordinator: job '{}' moved to its new replica plan in {:.3f} s from "
                   "checkpoint {} on {}",
                   j.name(),
                   std::chrono::duration<double>(clock::now() - migrating_since.value_or(clock::now()))
                       .count(),
                   from.checkpoint, fmt::join(ids, ", "));
    else {
      spdlog::info("coordinator: deployed job '{}' on {}", spec.name, fmt::join(ids, ", "));
      checkpoints.warn_unreplayable(unreplayable, result);  // once: a recovery deploys the same
    }
    lost_at.reset();
    migrating_since.reset();
    from = {};  // shipped; a later recovery loads the checkpoint again

    // the job's one live view: the nodes send their instances' counters every live period and
    // their transport counters with every heartbeat
    std::vector<std::string> node_of;
    for (auto m : placement) node_of.push_back(on.nodes[m].id);
    std::vector<std::vector<std::string>> replicas_of;
    for (const auto& r : replicas) {
      auto& ids_of = replicas_of.emplace_back();
      for (auto m : r) ids_of.push_back(on.nodes[m].id);
    }
    detail::live_poll live{opts.live, live_plan::of(j.name(), g, plan, node_of, replicas_of),
                           opts.live_period};
    // Records the instances a node reports, refusing the frame when one of them is not placed there.
    auto placed_on = [&](std::uint32_t m, std::uint32_t stage, std::uint32_t instance) {
      if (stage >= plan.stages.size() || instance >= plan.stages[stage].parallelism) return false;
      const auto k = offsets[stage] + instance;
      for (std::uint32_t c = 0; c <= where.replicas_of(k); ++c)
        if (where.node(k, c) == m) return true;
      return false;
    };
    auto record_live = [&](std::uint32_t n, std::vector<instance_metrics> reported) {
      for (const auto& m : reported)
        if (!placed_on(*member_of[n], m.stage, m.instance)) {
          links.refuse(n, "metrics of stage " + std::to_string(m.stage) + " instance " +
                              std::to_string(m.instance) + ", which does not run there");
          return;
        }
      for (auto& m : reported) {
        const auto k = offsets[m.stage] + m.instance;
        if (where.node(k, 0) == *member_of[n]) planner.busy(k, m.busy_ns);  // the primary's
        live.update(std::move(m));
      }
    };
    // Restoring the replication level (docs/replication.md): lost copies wait in `restores`; the
    // front one is readied on every node, then connected, then waits in `catching_up` until every
    // receiver of it reports it caught up. While one is readied, commits wait: no sender or
    // receiver may trim the place it restarts from.
    struct restoring {
      detail::wiring::endpoint copy;
      std::uint32_t node = 0;  // member index
      clock::time_point lost_at;
      std::uint64_t checkpoint = 0;
      bool readying = false;
      std::set<std::uint32_t> answered;  // cluster indices
      std::set<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t>> reports;
      std::size_t receivers = 0;
      clock::time_point deadline;
    };
    std::deque<restoring> restores;
    std::vector<restoring> catching_up;
    // replicas dropped for lagging are made again this often at most, per copy
    constexpr std::uint32_t max_recreations = 3;
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> recreated;  // (k, copy)
    std::vector<std::uint64_t> held_commits;
    // A new replica plan is due: the job moves to it when the next checkpoint completes.
    std::optional<std::string> replan;
    bool migrate = false;
    auto commit = [&](std::uint64_t id) {
      if (!restores.empty() && restores.front().readying) {
        held_commits.push_back(id);
        return;
      }
      for (auto member : members) links.send(member, net::commit_frame(id));
      migrate = replan.has_value();
    };
    auto release_commits = [&] {
      for (auto id : std::exchange(held_commits, {})) commit(id);
    };
    auto on_piece = [&](std::uint32_t n, const wire::StatePiece& chunk) {
      std::optional<net::state_piece> piece;
      try {
        piece = assemblers[n].add(chunk);
      } catch (const net::bad_chunk& e) {
        links.refuse(n, e.what());
        return;
      }
      if (!piece) return;
      if (!placed_on(*member_of[n], piece->stage, piece->instance)) {
        links.refuse(n, "state of stage " + std::to_string(piece->stage) + " instance " +
                            std::to_string(piece->instance) + ", which does not run there");
        return;
      }
      checkpoints.on_piece(piece->stage, piece->instance, piece->checkpoint,
                           std::move(piece->bytes), piece->alignment_ms);
    };
    auto commit_durable = [&] {
      try {
        for (auto id : checkpoints.collect()) commit(id);
      } catch (const job_error& e) {  // too many checkpoints failed in a row
        stop_all("checkpoints failed");
        throw job_error("job '" + j.name() + "' failed: " + e.what());
      }
    };

    for (auto& a : assemblers) a.clear();
    result.instances.clear();
    result.node_reports.clear();
    (void)links.disconnected();  // breaks before this deployment (the lost node's) are old news
    for (auto member : members) links.send(member, empty_control<wire::Start>());
    std::vector<clock::time_point> last_seen(count, clock::now());
    std::vector<bool> done(count, false);
    std::size_t finished = 0;
    std::optional<std::uint32_t> lost;
    std::string lost_why;
    std::set<std::pair<std::uint32_t, std::uint32_t>> reported;  // instances whose metrics came
    // Takeover (docs/replication.md): when every stage instance that ran on the lost cluster node
    // `n` has a copy on a node still there, the job goes on without a recovery; the others learn
    // that `n` is gone. Nodes gone so far, by member index:
    std::vector<bool> gone(job_nodes, false);
    std::set<std::pair<std::uint32_t, std::uint32_t>> dropped;  // (flat instance, copy)
    // Copies of every piece on the next nodes after its primary's (cluster file `checkpoint:
    // {copies: N}`): the checkpoint completes once they are durable too.
    if (cluster.checkpoint.copies > 0)
      checkpoints.ship_copies(
          {[&](std::uint64_t id, std::uint32_t stage, std::uint32_t instance,
               const std::string& bytes) {
             std::vector<bool> live(job_nodes);
             for (std::uint32_t m = 0; m < job_nodes; ++m) live[m] = !gone[m];
             std::vector<std::string> names;
             for (auto m : net::copy_holders(where.node(offsets[stage] + instance, 0), live,
                                             cluster.checkpoint.copies)) {
               for (auto& f : net::copy_piece_frames(id, stage, instance, bytes, chunk,
                                                     cluster.checkpoint.retain))
                 links.send(members[m], std::move(f));
               names.push_back(on.nodes[m].id);
             }
             return names;
           },
           [&](std::uint64_t id, const std::string& holder, std::uint32_t pieces) {
             links.send(*cluster.find(holder), net::copy_record_frame(id, j.name(),
                                                                      checkpoints.plan_fingerprint(),
                                                                      pieces));
           }},
          std::max<std::chrono::milliseconds>(10s, opts.checkpoints.interval * 4));
    const auto copies_wiring = detail::wire(plan, where.replica_counts());
    const bool replicated =
        std::any_of(replicas.begin(), replicas.end(), [](auto& r) { return !r.empty(); });
    auto copy_name = [&](const detail::wiring::endpoint& e) {
      return (e.copy == 0 ? std::string{"the primary"} : "replica " + std::to_string(e.copy)) +
             " of " + g.node(plan.stages[e.stage].ops.front().node).name + " instance " +
             std::to_string(e.instance);
    };
    auto live_members = [&] {
      std::vector<std::uint32_t> out;
      for (auto member : members)
        if (!gone[*member_of[member]]) out.push_back(member);
      return out;
    };
    // Where copy `c` of flat instance `k`, lost or dropped on member `m`, runs again: the first
    // node after `m`, in the cluster file's order, that is still in the job and holds no copy of
    // `k` (nor is about to).
    auto restore_target = [&](std::uint32_t k, std::uint32_t c,
                              std::uint32_t m) -> std::optional<std::uint32_t> {
      for (std::uint32_t step = 1; step < job_nodes; ++step) {
        const auto t = (m + step) % job_nodes;
        bool holds = gone[t];
        for (std::uint32_t o = 0; o <= where.replicas_of(k); ++o)
          holds |= o != c && where.node(k, o) == t && !dropped.count({k, o});
        for (const auto& r : restores)
          holds |= r.node == t && offsets[r.copy.stage] + r.copy.instance == k;
        if (!holds) return t;
      }
      return std::nullopt;
    };
    // The copies that member `m` ran are lost: each is restored on the next node after `m` that
    // still runs and holds no copy of its instance, or the job warns that its level stays lower.
    auto plan_restores = [&](std::uint32_t m) {
      const auto now = clock::now();
      auto leaves = [&](const restoring& r) { return r.node == m; };
      // a copy lost again while it was being restored is planned again below
      restores.erase(std::remove_if(restores.begin(), restores.end(), leaves), restores.end());
      release_commits();  // the copy being readied may have been one of them
      catching_up.erase(std::remove_if(catching_up.begin(), catching_up.end(), leaves),
                        catching_up.end());
      for (std::uint32_t s = 0; s < plan.stages.size(); ++s)
        for (std::uint32_t i = 0; i < plan.stages[s].parallelism; ++i) {
          const auto k = offsets[s] + i;
          for (std::uint32_t c = 0; c <= where.replicas_of(k); ++c) {
            if (where.node(k, c) != m || dropped.count({k, c})) continue;
            const detail::wiring::endpoint e{s, i, c};
            std::string why;
            if (!checkpoints.enabled())
              why = "restoring a copy needs checkpoints (its state comes from the latest one)";
            const auto to = why.empty() ? restore_target(k, c, m) : std::nullopt;
            if (why.empty() && !to)
              why = "every node still in the job holds a copy of it";
            if (!why.empty()) {
              const auto text = "the replication level is not restored: " + copy_name(e) +
                                " was lost with node '" + on.nodes[m].id + "' and " + why;
              spdlog::warn("coordinator: {}", text);
              result.warnings.push_back(text);
              continue;
            }
            restores.push_back({e, *to, now});
          }
        }
    };
    // Restore `r` is given up; when no copy of its instance is left, the job recovers.
    auto give_up = [&](const restoring& r, const std::string& why) {
      const auto k = offsets[r.copy.stage] + r.copy.instance;
      dropped.insert({k, r.copy.copy});
      for (auto member : live_members())
        links.send(member, net::copy_lost_frame(r.copy.stage, r.copy.instance, r.copy.copy));
      const auto text = "the replication level is not restored: " + copy_name(r.copy) +
                        " could not be restored on node '" + on.nodes[r.node].id + "': " + why;
      spdlog::warn("coordinator: {}", text);
      result.warnings.push_back(text);
      // the copies it was to back up may have been lost meanwhile: then the job recovers
      bool left = false;
      for (std::uint32_t c = 0; c <= where.replicas_of(k); ++c)
        left |= !gone[where.node(k, c)] && !dropped.count({k, c});
      if (!left && !lost) {
        lost = members[r.node];
        lost_why = text + ", and no other copy of it is left";
      }
    };
    auto start_restore = [&](restoring& r) {
      const auto state = checkpoints.latest();
      r.checkpoint = state.checkpoint;
      r.readying = true;
      const auto k = offsets[r.copy.stage] + r.copy.instance;
      dropped.erase({k, r.copy.copy});  // a replica dropped for lagging is made again
      (r.copy.copy == 0 ? where.node_of[k] : where.replicas[k][r.copy.copy - 1]) = r.node;
      const auto target = members[r.node];
      if (auto piece = state.pieces.find({r.copy.stage, r.copy.instance});
          piece != state.pieces.end())
        for (auto& f : net::piece_frames(state.checkpoint, r.copy.stage, r.copy.instance,
                                         piece->second, 0, chunk))
          links.send(target, std::move(f));
      if (done[target]) {  // it has something to do again, and says Done once more
        done[target] = false;
        --finished;
      }
      for (auto member : live_members())
        links.send(member, net::restore_copy_frame(r.copy.stage, r.copy.instance, r.copy.copy,
                                                   r.node, r.checkpoint, false));
      spdlog::info("coordinator: restoring {} on node '{}' from {}", copy_name(r.copy),
                   on.nodes[r.node].id,
                   r.checkpoint ? "checkpoint " + std::to_string(r.checkpoint)
                                : std::string{"the start of the deployment"});
    };
    // Every receiver copy still there reported restored copy `r` caught up: the level is back.
    auto finish_restore = [&](const restoring& r) {
      const auto seconds = std::chrono::duration<double>(clock::now() - r.lost_at).count();
      result.restores.push_back(seconds);
      spdlog::warn("coordinator: {} runs again on node '{}' from {} and caught up {:.0f} ms after "
                   "it was lost: the replication level is restored",
                   copy_name(r.copy), on.nodes[r.node].id,
                   r.checkpoint ? "checkpoint " + std::to_string(r.checkpoint)
                                : std::string{"the start of the deployment"},
                   seconds * 1000);
    };
    auto step_restores = [&] {
      const auto now = clock::now();
      for (auto r = catching_up.begin(); r != catching_up.end();)
        if (now >= r->deadline) {
          give_up(*r, "it did not catch up within " +
                          std::to_string(restore_timeout.count()) + " s");
          r = catching_up.erase(r);
        } else {
          ++r;
        }
      if (restores.empty()) return;
      auto& r = restores.front();
      if (!r.readying) {
        start_restore(r);
        return;
      }
      for (auto member : live_members())
        if (!r.answered.count(member)) return;
      for (auto member : live_members())
        links.send(member, net::restore_copy_frame(r.copy.stage, r.copy.instance, r.copy.copy,
                                                   r.node, r.checkpoint, true));
      r.readying = false;
      release_commits();
      // its receivers: every copy of every instance it sends to that is still there
      for (const auto& out : copies_wiring.outputs[r.copy.stage][r.copy.instance]) {
        const auto k = offsets[out.to.stage] + out.to.instance;
        r.receivers += !gone[where.node(k, out.to.copy)] && !dropped.count({k, out.to.copy});
      }
      r.deadline = now + restore_timeout;
      if (r.reports.size() >= r.receivers)  // nothing had passed its barrier since
        finish_restore(r);
      else
        catching_up.push_back(std::move(r));
      restores.pop_front();
    };
    auto on_copy_restored = [&](std::uint32_t n, const wire::CopyRestored& a) {
      if (restores.empty() || !restores.front().readying) return;
      auto& r = restores.front();
      if (a.stage() != r.copy.stage || a.instance() != r.copy.instance || a.copy() != r.copy.copy)
        return;
      if (a.ok()) {
        r.answered.insert(n);
        return;
      }
      give_up(r, "node '" + cluster.nodes[n].id + "': " + str(a.error()));
      restores.pop_front();
      release_commits();
    };
    // A receiver on node `n` says which of its input slots caught up: the copy behind it is found
    // from the wiring (a receiver has one slot per copy of each sender, side by side). A slot may
    // be caught up already when it is readied (nothing passed since the barrier): the copy being
    // readied counts such reports too.
    auto on_caught_up = [&](std::uint32_t n, const wire::CopyCaughtUp& a) {
      auto behind = [&](const restoring& r) {
        for (const auto& out : copies_wiring.outputs[r.copy.stage][r.copy.instance])
          if (out.to.stage == a.stage() && out.to.instance == a.instance() &&
              out.slot + r.copy.copy == a.in_slot())
            return true;
        return false;
      };
      const std::tuple<std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t> report{
          n, a.stage(), a.instance(), a.in_slot()};
      if (!restores.empty() && restores.front().readying && behind(restores.front())) {
        restores.front().reports.insert(report);
        return;
      }
      for (auto r = catching_up.begin(); r != catching_up.end(); ++r)
        if (behind(*r)) {
          r->reports.insert(report);
          if (r->reports.size() < r->receivers) return;
          finish_restore(*r);
          catching_up.erase(r);
          return;
        }
    };
    // Degraded mode (`on_loss: continue`): the stage instances stopped for good, and each copy of
    // those newly in `now_dead` told to stop without flushing. The nodes hear of them downstream
    // first and before NodeLost, so no dead copy sees an input end (which would fire its windows
    // as at the end of the stream) before its own stop. Returns what stopped, for the warning.
    std::vector<bool> dead(instances, false);
    auto stop_dead = [&](const std::vector<bool>& now_dead) {
      std::string stopped;
      for (auto s = static_cast<std::uint32_t>(plan.stages.size()); s-- > 0;)
        for (auto i = plan.stages[s].parallelism; i-- > 0;) {
          const auto k = offsets[s] + i;
          if (!now_dead[k] || dead[k]) continue;
          for (std::uint32_t c = 0; c <= where.replicas_of(k); ++c)
            if (dropped.insert({k, c}).second)
              for (auto member : live_members())
                links.send(member, net::copy_lost_frame(s, i, c));
          stopped = g.node(plan.stages[s].ops.front().node).name + " instance " +
                    std::to_string(i) + (stopped.empty() ? "" : ", ") + stopped;
        }
      const auto before = std::exchange(result.stopped_queries,
                                        stopped_sinks(g, plan, now_dead, offsets));
      dead = now_dead;
      std::string queries;
      for (const auto& q : result.stopped_queries)
        if (std::find(before.begin(), before.end(), q) == before.end())
          queries += (queries.empty() ? "" : ", ") + q;
      return "stopped (on_loss: continue) " + stopped + " and with them the queries " +
             (queries.empty() ? std::string{"(none new)"} : queries) +
             "; the other queries go on";
    };
    auto take_over = [&](std::uint32_t n, const std::string& why) {
      const auto m = *member_of[n];
      bool hosted_any = false;
      auto now_dead = dead;  // plus the instances this loss leaves without a live copy
      for (std::uint32_t k = 0; k < instances; ++k) {
        if (dead[k]) continue;
        bool here = false, elsewhere = false;
        for (std::uint32_t c = 0; c <= where.replicas_of(k); ++c) {
          const auto at = where.node(k, c);
          if (at == m)
            here = true;
          else if (!gone[at] && !dropped.count({k, c}))
            elsewhere = true;
        }
        if (here && !elsewhere) {
          if (!cluster.continue_on_loss) return false;
          now_dead[k] = true;
        }
        hosted_any |= here;
      }
      const bool degraded = now_dead != dead;
      if (!cluster.continue_on_loss && (!replicated || !hosted_any)) return false;
      gone[m] = true;
      done[n] = true;  // it reports nothing more, and nothing waits for it
      checkpoints.holder_lost(cluster.nodes[n].id);
      ++finished;
      const auto stopped =
          degraded ? stop_dead(close_downstream(std::move(now_dead), copies_wiring, offsets))
                   : std::string{};
      for (auto other : members)
        if (!gone[*member_of[other]]) links.send(other, net::node_lost_frame(m));
      links.send(n,
                 stop_message("the coordinator gave up on this node; the job goes on without it"));
      const auto text = why + (degraded ? "; " + stopped : "; its replicas took over");
      spdlog::warn("coordinator: {} (job '{}' goes on)", text, j.name());
      result.warnings.push_back(text);
      plan_restores(m);
      return true;
    };
    // A sender dropped a replica that fell too far behind: it is gone for good, everyone is told.
    auto drop_replica = [&](std::uint32_t n, const wire::ReplicaLagging& r) {
      if (!placed_on(*member_of[n], r.stage(), r.instance()) ||
          r.out_slot() >= copies_wiring.outputs[r.stage()][r.instance()].size()) {
        links.refuse(n, "a lagging replica behind output " + std::to_string(r.out_slot()) +
                            " of stage " + std::to_string(r.stage()) + " instance " +
                            std::to_string(r.instance()) + ", which does not run there");
        return;
      }
      const auto to = copies_wiring.outputs[r.stage()][r.instance()][r.out_slot()].to;
      const auto k = offsets[to.stage] + to.instance;
      auto restoring = std::find_if(catching_up.begin(), catching_up.end(), [&](auto& r) {
        return r.copy.stage == to.stage && r.copy.instance == to.instance && r.copy.copy == to.copy;
      });
      auto why = "fell more than " + std::to_string(opts.replica_lag) +
                 " items behind (replica_lag)";
      if (restoring != catching_up.end()) {  // a restored copy that had not caught up yet
        const auto restore = *restoring;
        catching_up.erase(restoring);
        why = "could not catch up from checkpoint " + std::to_string(restore.checkpoint) +
              " (a sender no longer held what it sent since: more than replay_limit elements; "
              "or it fell too far behind)";
        if (recreated[{k, to.copy}] >= max_recreations) {
          give_up(restore, why);
          return;
        }
      } else if (to.copy == 0 && where.node(k, 0) == placement[k]) {
        return;  // the primary slot leads to a copy 0 only once that copy was restored elsewhere
      }
      if (!dropped.insert({k, to.copy}).second) return;
      for (auto member : live_members())
        links.send(member, net::copy_lost_frame(to.stage, to.instance, to.copy));
      const auto at = where.node(k, to.copy);  // member index
      auto text = copy_name(to) + " on node '" + on.nodes[at].id + "' " + why +
                  " and was dropped; the other copies go on";
      // it is made again from the latest checkpoint, where it lagged or (better) on a node
      // holding no copy; a copy that keeps falling behind stays dropped after a few tries
      const auto again = ++recreated[{k, to.copy}];
      if (!checkpoints.enabled())
        text += "; it is not made again: that needs checkpoints";
      else if (again > max_recreations)
        text += "; it is not made again: it was dropped " + std::to_string(again) + " times";
      else
        restores.push_back({to, restore_target(k, to.copy, at).value_or(at), clock::now()});
      spdlog::warn("coordinator: {}", text);
      result.warnings.push_back(text);
    };
    // With replicas planned on spare CPU and checkpoints, a node outside the deployment (never
    // in it, or lost) that answers a hello again joins: the job moves to a plan that uses it.
    const bool joinable = planner.enabled() && checkpoints.enabled() &&
                          cluster.planned.replan_interval.count() > 0;
    auto next_hello = clock::now() + cluster.planned.replan_interval;
    auto outside = [&](std::uint32_t n) { return !member_of[n] || gone[*member_of[n]]; };
    auto joined = [&](std::uint32_t n, const wire::HelloReply& reply) {
      if (!joinable || replan || !reply.accepted() || !outside(n)) return;
      replan = "node '" + cluster.nodes[n].id + "' answers again";
      spdlog::info("coordinator: {}: job '{}' moves to a plan that uses it at the next checkpoint",
                   *replan, j.name());
    };
    auto next_beat = clock::now();
    while (finished < job_nodes && !lost && !migrate && !(opts.stop && opts.stop->load())) {
      if (fence > 0ms && clock::now() >= next_beat) {
        for (auto member : members) links.send(member, coordinator_heartbeat());
        next_beat = clock::now() + beat_every;
      }
      bool fresh = false;
      commit_durable();
      const auto wait = checkpoints.poll([&](std::uint64_t id) {
        for (auto member : members) links.send(member, net::checkpoint_start_frame(id));
      });
      links.poll(std::min<std::chrono::milliseconds>(50ms, wait),
                 [&](std::uint32_t n, const wire::ControlFrame& f) {
        if (f.body_type() == wire::Body::HelloReply) {
          joined(n, *f.body_as_HelloReply());
          return;
        }
        if (!member_of[n]) return;  // a node this deployment does not use
        last_seen[n] = clock::now();
        const auto* beat = f.body_as_Heartbeat();
        if (beat && beat->counters()) {
          auto status = net::read_status(*beat->counters());
          status.node = cluster.nodes[n].id;  // the connection says who it is
          refusals.update(n, status);
          if (live.enabled()) live.update(std::move(status));
        }
        if (live.enabled() && f.body_type() == wire::Body::LiveMetrics) {
          record_live(n, net::read_metrics(*f.body_as_LiveMetrics()));
          fresh = true;
        }
        if (f.body_type() == wire::Body::SyncReport) zones.on_report(n, *f.body_as_SyncReport());
        if (f.body_type() == wire::Body::StatePiece) on_piece(n, *f.body_as_StatePiece());
        if (f.body_type() == wire::Body::CopyDurable)
          checkpoints.on_copy_durable(f.body_as_CopyDurable()->id(), cluster.nodes[n].id,
                                      str(f.body_as_CopyDurable()->error()));
        if (f.body_type() == wire::Body::ReplicaLagging)
          drop_replica(n, *f.body_as_ReplicaLagging());
        if (f.body_type() == wire::Body::CopyRestored) on_copy_restored(n, *f.body_as_CopyRestored());
        if (f.body_type() == wire::Body::CopyCaughtUp) on_caught_up(n, *f.body_as_CopyCaughtUp());
        if (f.body_type() == wire::Body::Failure) {
          stop_all("job failed");
          throw job_error("job '" + j.name() + "' failed on node '" + cluster.nodes[n].id +
                          "': " + str(f.body_as_Failure()->what()));
        }
        if (f.body_type() == wire::Body::Done && !done[n]) {
          done[n] = true;
          ++finished;
          const auto* d = f.body_as_Done();
          for (auto& m : net::read_metrics(*d)) {
            if (live.enabled()) live.update(m);
            // one entry per instance: the first copy's
            if (reported.insert({m.stage, m.instance}).second)
              result.instances.push_back(std::move(m));
          }
          result.peak_live_batches = std::max(result.peak_live_batches, d->peak_live_batches());
          if (auto report = net::read_report(*d); !report.empty())
            result.node_reports[cluster.nodes[n].id] = std::move(report);
          fresh = true;
        }
      });
      if (fresh) {
        live.update(links.status());
        live.publish(false);
      }
      step_restores();
      if (joinable && !replan && clock::now() >= next_hello) {
        for (std::uint32_t n = 0; n < count; ++n)
          if (outside(n)) links.send(n, hello(n));
        next_hello = clock::now() + cluster.planned.replan_interval;
      }
      if (!replan && restores.empty() && catching_up.empty() &&
          std::none_of(gone.begin(), gone.end(), [](bool g) { return g; }))
        if ((replan = planner.poll(clock::now()))) {
          if (checkpoints.enabled())
            spdlog::info("coordinator: {}: job '{}' moves to it at the next checkpoint", *replan,
                         j.name());
          else {
            const auto text = *replan + "; the job keeps its plan: moving replicas needs checkpoints";
            spdlog::warn("coordinator: {}", text);
            result.warnings.push_back(text);
          }
        }
      // with checkpoints, replicas or degraded mode a broken connection starts the recovery or the
      // takeover at once; without, the failure is reported as it always was, when the heartbeats
      // are overdue
      for (auto n : links.disconnected())
        if ((checkpoints.enabled() || replicated || cluster.continue_on_loss) && member_of[n] &&
            !done[n] && !lost) {
          auto why = "the connection to node '" + cluster.nodes[n].id + "' at " +
                     cluster.nodes[n].endpoint + " broke; it hosted " +
                     hosted(g, plan, where, *member_of[n]);
          if (take_over(n, why)) continue;
          if (!checkpoints.enabled()) continue;  // reported when its heartbeats are overdue
          lost = n;
          lost_why = std::move(why);
        }
      auto now = clock::now();
      for (auto n : members)
        if (!lost && !done[n] && now - last_seen[n] > cluster.heartbeat_timeout) {
          auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(now - last_seen[n]);
          auto why = "node '" + cluster.nodes[n].id + "' at " + cluster.nodes[n].endpoint +
                     " sent no heartbeat for " + std::to_string(silent.count()) + " ms (timeout " +
                     std::to_string(cluster.heartbeat_timeout.count()) + " ms); it hosted " +
                     hosted(g, plan, where, *member_of[n]);
          if (take_over(n, why)) continue;
          lost = n;
          lost_why = std::move(why);
          break;
        }
    }
    if (migrate) {
      stop_all("moving to a new replica plan");
      migrating_since = clock::now();
      from = checkpoints.recover();
      continue;
    }
    if (!lost) {
      live.update(links.status());
      live.publish(finished == job_nodes);
      stopped_early = finished < job_nodes;  // opts.stop ended the loop
      if (stopped_early) result.warnings.push_back("stopped on request before the end of the job");
      break;
    }
    stop_all("node '" + cluster.nodes[*lost].id + "' failed");
    if (!checkpoints.enabled()) throw job_error(lost_why);
    lost_at = clock::now();
    from = checkpoints.recover();
    ++result.recoveries;
    spdlog::warn("coordinator: {}; restarting job '{}' from {} (recovery {})", lost_why, j.name(),
                 from.checkpoint ? "checkpoint " + std::to_string(from.checkpoint)
                                 : std::string{"the beginning: no checkpoint completed yet"},
                 result.recoveries);
  }
  stop_all(stopped_early ? "stopped on request" : "job finished");
  result.seconds = std::chrono::duration<double>(clock::now() - started).count();
  result.checkpoints = checkpoints.completed();
  result.failed_checkpoints = checkpoints.failed();
  result.checkpoint_failure = checkpoints.first_failure();
  checkpoints.finished();
  // nor are the nodes' copies: a later --resume must not find them
  if (checkpoints.enabled() && cluster.checkpoint.copies > 0) {
    // the nodes are there (they just said Done); one that is not keeps nothing newer anyway
    const auto kept = ask_held(links, cluster, [&] { return net::drop_copies_frame(j.name()); },
                               std::min<std::chrono::milliseconds>(cluster.connect_timeout, 1s));
    for (std::uint32_t n = 0; n < count; ++n)
      if (kept[n] && (!kept[n]->checkpoints.empty() || !kept[n]->error.empty()))
        spdlog::warn("coordinator: node '{}' still keeps checkpoint copies of job '{}'{}",
                     cluster.nodes[n].id, j.name(),
                     kept[n]->error.empty() ? "" : ": " + kept[n]->error);
  }
  spdlog::info("coordinator: job '{}' finished on every node in {:.3f} s", spec.name,
               result.seconds);
  std::sort(result.instances.begin(), result.instances.end(), [](auto& a, auto& b) {
    return std::tie(a.stage, a.instance) < std::tie(b.stage, b.instance);
  });
  detail::publish(result, opts);
  if (spec.report) spec.report(options, result);
  return result;
}

std::vector<node_checkpoint_copies> query_checkpoint_copies(const cluster_config& cluster,
                                                            std::chrono::milliseconds timeout) {
  control_links links{cluster};
  const auto answers = ask_held(links, cluster, [] { return net::copies_request_frame(""); }, timeout);
  std::vector<node_checkpoint_copies> out;
  for (std::size_t n = 0; n < answers.size(); ++n) {
    auto& node = out.emplace_back();
    node.node = cluster.nodes[n].id;
    if (!answers[n]) continue;
    node.answered = true;
    node.error = answers[n]->error;
    node.checkpoints = answers[n]->checkpoints;
  }
  return out;
}

void inject_faults(const cluster_config& cluster, const std::string& node,
                   const fault_command& cmd, std::chrono::milliseconds timeout) {
  const auto n = cluster.find(node);
  if (!n) throw std::runtime_error("cannot inject faults into node '" + node + "': the cluster has no such node");
  if (!cluster.faults_allowed)
    throw std::runtime_error("cannot inject faults into node '" + node +
                             "': the cluster file does not say 'faults: allow'");
  cluster_config one = cluster;
  one.nodes = {cluster.nodes[*n]};
  control_links links{one};
  links.send(0, net::faults_frame(cmd));
  const auto deadline = clock::now() + timeout;
  while (clock::now() < deadline) {
    std::optional<std::string> refused;
    bool answered = false;
    links.poll(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()),
               [&](std::uint32_t, const wire::ControlFrame& f) {
                 if (f.body_type() != wire::Body::FaultsReply) return;
                 const auto* r = f.body_as_FaultsReply();
                 answered = true;
                 if (!r->accepted()) refused = str(r->reason());
               });
    if (refused)
      throw std::runtime_error("node '" + node + "' refused the injected faults: " + *refused);
    if (answered) return;
  }
  throw std::runtime_error("node '" + node + "' at " + cluster.nodes[*n].endpoint +
                           " did not answer the injected faults within " +
                           std::to_string(timeout.count()) + " ms");
}

}  // namespace tidemark
