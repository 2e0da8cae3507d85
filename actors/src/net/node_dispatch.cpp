// The node's handling of received frames (node_dispatch.hpp): checks come first (size, verifier,
// sender, version, deployment, channel owner), then the frame acts on the deployment through the
// port. Everything here runs on the node's I/O thread.
#include "node_dispatch.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "tidemark/persistence/faults.hpp"

namespace tidemark::net {

namespace {

std::string str(const flatbuffers::String* s) { return s ? s->str() : std::string{}; }

/// Names of the operators with an instance (or a replica of one) on this node.
std::vector<std::string> hosted_operators(const deployment& x) {
  std::vector<std::string> names;
  for (std::uint32_t s = 0; s < x.plan.stages.size(); ++s) {
    bool here = false;
    for (std::uint32_t i = 0; i < x.plan.stages[s].parallelism; ++i)
      for (std::uint32_t c = 0; c < x.wiring.copies[s][i]; ++c)
        here |= x.node_of(s, i, c) == x.self;
    if (here)
      for (const auto& op : x.plan.stages[s].ops)
        names.push_back(x.synced.graph.node(op.node).name);
  }
  return names;
}

}  // namespace

std::unique_ptr<deployment> read_deploy(const wire::Deploy& d, const job_registry& jobs,
                                        const std::string& self_id,
                                        std::int64_t max_message_bytes) {
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
  x.opts.credit = x.opts.channel_credit();  // 0: derived from the elements, as the coordinator does
  x.opts.linger = std::chrono::milliseconds{d.linger_ms()};
  x.opts.adaptive_batching = d.adaptive_batching();
  x.opts.fuse = d.fuse();
  x.opts.deterministic_merge = d.deterministic_merge();
  x.opts.replica_lag = d.replica_lag();
  x.opts.replay_limit = d.replay_limit();
  x.opts.checkpoints.unaligned = d.unaligned_checkpoints();
  x.opts.synchronizers.enabled = d.synchronizers();
  x.opts.synchronizers.time_slice = d.sync_time_slice();
  x.opts.synchronizers.max_buffered = static_cast<std::size_t>(d.sync_max_buffered());
  x.spare_budget = d.spare_budget();
  x.replica_load = d.replica_load();
  x.predicted_availability = d.predicted_availability();
  x.synced = detail::executable_graph(x.built, x.opts);
  const auto& g = x.synced.graph;
  x.heartbeat = std::chrono::milliseconds{std::max<std::uint32_t>(1, d.heartbeat_ms())};
  x.live_period = std::chrono::milliseconds{d.live_period_ms()};
  x.id = d.deployment();
  x.fence = std::chrono::milliseconds{d.fence_ms()};
  x.chunk_bytes = piece_chunk_bytes(
      d.coordinator_max_bytes()
          ? std::min<std::int64_t>(max_message_bytes, d.coordinator_max_bytes())
          : max_message_bytes);
  x.plan = compile(g, {x.opts.fuse});
  x.offsets = instance_offsets(x.plan);
  if (!d.nodes() || d.nodes()->size() == 0) throw job_error("deploy: no nodes listed");
  for (const auto* n : *d.nodes())
    x.nodes.push_back({str(n->id()), str(n->data_endpoint()), str(n->public_key())});
  x.self = d.self_index();
  if (x.self >= x.nodes.size() || x.nodes[x.self].id != self_id)
    throw job_error("deploy: addressed to node '" +
                    (x.self < x.nodes.size() ? x.nodes[x.self].id : std::string{"?"}) +
                    "', this is '" + self_id + "'");
  std::uint32_t total = 0;
  for (const auto& st : x.plan.stages) total += st.parallelism;
  if (!d.placement() || d.placement()->size() != total)
    throw job_error("deploy: the placement lists " +
                    std::to_string(d.placement() ? d.placement()->size() : 0) +
                    " stage instances, the plan built here has " + std::to_string(total) +
                    " (are the nodes running the same release?)");
  auto node_index = [&](std::uint32_t p) {
    if (p >= x.nodes.size()) throw job_error("deploy: placement names node " + std::to_string(p));
    return p;
  };
  for (auto p : *d.placement()) x.where.node_of.push_back(node_index(p));
  x.where.self = x.self;
  if (d.replica_counts()) {
    if (d.replica_counts()->size() != total)
      throw job_error("deploy: replica counts for " + std::to_string(d.replica_counts()->size()) +
                      " stage instances, the plan has " + std::to_string(total));
    std::size_t next = 0;
    for (auto n : *d.replica_counts()) {
      auto& r = x.where.replicas.emplace_back();
      for (std::uint32_t c = 0; c < n; ++c, ++next) {
        if (!d.replica_nodes() || next >= d.replica_nodes()->size())
          throw job_error("deploy: fewer replica nodes than replica counts");
        r.push_back(node_index(d.replica_nodes()->Get(static_cast<flatbuffers::uoffset_t>(next))));
      }
    }
  }
  x.wiring = detail::wire(x.plan, x.where.replica_counts());
  x.channels = enumerate_channels(g, x.plan, x.wiring);
  std::vector<std::string> ids;
  for (const auto& n : x.nodes) ids.push_back(n.id);
  check_codecs(x.channels, x.offsets, x.where, ids);
  if (spec.prepare_node) x.prepared = spec.prepare_node(options, self_id, hosted_operators(x));
  if (spec.node_report)
    x.node_report = [report = spec.node_report, options] { return report(options); };
  x.senders.resize(x.channels.size());
  x.receivers.resize(x.channels.size());
  for (std::uint32_t c = 0; c < x.channels.size(); ++c) {
    const auto& ch = x.channels[c];
    const auto from = x.sender_node(ch);
    const auto to = x.receiver_node(ch);
    if (from == x.self && to != x.self)
      x.senders[c] = std::make_unique<reliable_sender<zmq::message_t>>(x.opts.credit,
                                                                       reliability_options{});
    if (to == x.self && from != x.self)
      x.receivers[c] = std::make_unique<reliable_receiver<zmq::message_t>>(reliability_options{});
  }
  return fresh;
}

deployment_status describe(const deployment& x) {
  deployment_status d;
  d.job = x.built.name();
  d.deployment = x.id;
  for (const auto& n : x.nodes) d.nodes.push_back(n.id);
  for (auto n : x.gone) d.gone.push_back(x.nodes[n].id);
  d.spare_budget = x.spare_budget;
  d.replica_load = x.replica_load;
  d.predicted_availability = x.predicted_availability;
  // the lag this node sees: what its senders sent over links and the copy has not processed yet
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint64_t> lag;  // flat instance, copy
  for (std::uint32_t c = 0; c < x.channels.size(); ++c)
    if (const auto& sender = x.senders[c]) {
      const auto& ch = x.channels[c];
      lag[{x.offsets[ch.to_stage] + ch.to_instance, ch.to_copy}] += sender->unprocessed();
    }
  using state = copy_status::state;
  for (std::uint32_t s = 0; s < x.plan.stages.size(); ++s)
    for (std::uint32_t i = 0; i < x.plan.stages[s].parallelism; ++i) {
      auto& inst = d.instances.emplace_back();
      inst.stage = s;
      inst.instance = i;
      inst.name = x.synced.graph.node(x.plan.stages[s].ops.front().node).name;
      const auto k = x.offsets[s] + i;
      for (std::uint32_t c = 0; c < x.wiring.copies[s][i]; ++c) {
        auto& copy = inst.copies.emplace_back();
        const auto node = x.where.node(k, c);
        copy.node = x.nodes[node].id;
        const auto restored = x.restored.find({k, c});
        copy.now = x.gone.count(node)             ? state::gone
                   : x.dropped.count({k, c})      ? state::dropped
                   : restored != x.restored.end() ? state::restored
                                                  : state::alive;
        if (copy.now == state::restored) copy.was_on = x.nodes[restored->second].id;
        const bool runs = copy.now == state::alive || copy.now == state::restored;
        if (auto l = lag.find({k, c}); runs && l != lag.end()) copy.lag = l->second;
      }
    }
  return d;
}

node_dispatch::node_dispatch(const node_options& opts, std::string coordinator_key,
                             const job_registry& jobs, node_port& port)
    : opts_(opts),
      coordinator_key_(std::move(coordinator_key)),
      jobs_(jobs),
      port_(port),
      copies_(opts.id, opts.data_dir.empty() ? std::string{} : opts.data_dir + "/checkpoints",
              piece_chunk_bytes(opts.max_message_bytes),
              [&port](std::string to, zmq::message_t msg) {
                port.reply_later(std::move(to), std::move(msg));
              }) {
  status_.node = opts_.id;
}

/// True (and counted, logged) when `m` is larger than the node's limit: ZeroMQ lets frames up
/// to net::curve_headroom bytes above it through, and drops the connection beyond that.
bool node_dispatch::oversized(zmq::message_t& m, const char* socket) {
  if (m.size() <= static_cast<std::size_t>(opts_.max_message_bytes)) return false;
  ++oversized_refused_;
  spdlog::warn("node '{}': refused a frame of {} bytes on its {} socket from {}: the limit is {} "
               "bytes (--max-message-bytes)",
               opts_.id, m.size(), socket, describe_peer(m), opts_.max_message_bytes);
  return true;
}

void node_dispatch::collect_counters() {
  status_.oversized_frames = oversized_refused_;
  status_.fault_dropped = faults_.dropped();
  status_.fault_duplicated = faults_.duplicated();
  status_.fault_reordered = faults_.reordered();
  port_.outside_counters(status_);
}

/// Control messages change what the node runs: only the coordinator's key may send them.
/// A status request is open to every allow-listed key. Plain text cannot tell keys apart.
bool node_dispatch::may_send(const char* key, wire::Body body) const {
  if (opts_.insecure || body == wire::Body::StatusRequest) return true;
  return key && coordinator_key_ == key;
}

/// Refuses a control message from another key than the coordinator's: counts and logs it, and
/// answers where the sender waits for an answer (Hello, Deploy, Faults).
void node_dispatch::refuse_control(std::string_view from, zmq::message_t& m, wire::Body body) {
  ++status_.refused_control;
  const std::string what = wire::EnumNameBody(body);
  spdlog::warn("node '{}': refused {} from {}: only the coordinator's key may send it", opts_.id,
               what, describe_peer(m));
  const auto why = what + " refused by node '" + opts_.id +
                   "': only the coordinator's key may send control messages";
  flatbuffers::FlatBufferBuilder b;
  if (body == wire::Body::Hello)
    port_.reply(from, control_message(b, wire::CreateHelloReply(b, false, b.CreateString(why),
                                                                b.CreateString(opts_.id))));
  else if (body == wire::Body::Deploy)
    port_.reply(from, control_message(b, wire::CreateDeployed(b, false, b.CreateString(why))));
  else if (body == wire::Body::Faults)
    port_.reply(from, control_message(b, wire::CreateFaultsReply(b, false, b.CreateString(why),
                                                                 b.CreateString(opts_.id))));
}

void node_dispatch::bad_frame(zmq::message_t& m, const std::string& what) {
  ++status_.bad_frames;
  spdlog::warn("node '{}': dropped a bad frame from {}: {}", opts_.id, describe_peer(m), what);
}

/// Sends a data frame to peer node `peer` through the injected faults.
void node_dispatch::transmit(std::uint32_t peer, zmq::message_t msg, clock::time_point now) {
  faults_.send(peer, dep_->nodes[peer].id, std::move(msg), now);
}

/// A copy of a kept frame to send again, and the count of it.
auto node_dispatch::resend_to(std::uint32_t peer, clock::time_point now) {
  return [this, peer, now](std::uint64_t, zmq::message_t& kept) {
    zmq::message_t again;
    again.copy(kept);
    ++status_.retransmitted;
    transmit(peer, std::move(again), now);
  };
}

// ---- control ---------------------------------------------------------------------------------

void node_dispatch::on_control(std::string_view from, const char* key, zmq::message_t& received) {
  if (oversized(received, "control")) return;
  zmq::message_t copy;
  auto& payload = aligned_frame(received, copy);
  if (auto bad = verify_control(payload.data(), payload.size(), opts_.max_message_bytes)) {
    bad_frame(received, *bad);
    return;
  }
  const auto& f = read_control(payload);
  if (!may_send(key, f.body_type())) {
    refuse_control(from, received, f.body_type());
    return;
  }
  if (auto refused = check_version(f)) {
    ++status_.bad_frames;
    spdlog::warn("node '{}': refused {}: {}", opts_.id, describe_peer(received), *refused);
    flatbuffers::FlatBufferBuilder b;
    port_.reply(from, control_message(b, wire::CreateHelloReply(b, false, b.CreateString(*refused),
                                                                b.CreateString(opts_.id))));
    return;
  }
  const bool observing =
      f.body_type() == wire::Body::Faults || f.body_type() == wire::Body::StatusRequest;
  if (!observing) {
    // a partition cuts the job's control off, not the fault control that heals it
    if (faults_.unreachable("coordinator")) {
      faults_.count_dropped();
      return;
    }
    heard_ = clock::now();
  }
  ++status_.frames_in;
  flatbuffers::FlatBufferBuilder b;
  switch (f.body_type()) {
    case wire::Body::Hello:
      coordinator_ = std::string{from};
      port_.reply(from, control_message(
                            b, wire::CreateHelloReply(b, true, 0, b.CreateString(opts_.id))));
      break;
    case wire::Body::Deploy:
      coordinator_ = std::string{from};
      on_deploy(from, *f.body_as_Deploy());
      break;
    case wire::Body::Start:
      if (dep_) {
        port_.start();
        dep_->started = true;
      }
      break;
    case wire::Body::Heartbeat:  // the coordinator is there (fencing)
      break;
    case wire::Body::Faults: on_faults(from, *f.body_as_Faults()); break;
    case wire::Body::Stop:
      if (dep_)
        spdlog::info("node '{}': stopped the job: {}", opts_.id, str(f.body_as_Stop()->reason()));
      end_deployment();
      assembler_.clear();
      incoming_ = {};
      break;
    case wire::Body::NodeLost:
      if (dep_) lose_node(f.body_as_NodeLost()->node());
      break;
    case wire::Body::CopyLost:
      if (dep_) lose_copy(*f.body_as_CopyLost());
      break;
    case wire::Body::RestoreCopy:
      if (dep_) restore_copy(from, *f.body_as_RestoreCopy());
      break;
    case wire::Body::CheckpointStart:
      if (dep_) port_.checkpoint(f.body_as_CheckpointStart()->id());
      break;
    case wire::Body::Commit:
      if (dep_) port_.commit(f.body_as_Commit()->id());
      break;
    case wire::Body::StatePiece:
      try {
        if (auto piece = assembler_.add(*f.body_as_StatePiece())) {
          if (piece->checkpoint != incoming_.checkpoint) incoming_ = {piece->checkpoint, {}};
          incoming_.pieces[{piece->stage, piece->instance}] = std::move(piece->bytes);
        }
      } catch (const bad_chunk& e) {
        --status_.frames_in;
        bad_frame(received, e.what());
      }
      break;
    case wire::Body::CopyPiece:
      try {
        copies_.on_piece(*f.body_as_CopyPiece());
      } catch (const bad_chunk& e) {
        --status_.frames_in;
        bad_frame(received, e.what());
      }
      break;
    case wire::Body::CopyRecord: copies_.on_record(from, *f.body_as_CopyRecord()); break;
    case wire::Body::CopiesRequest:
      copies_.on_request(from, str(f.body_as_CopiesRequest()->job()));
      break;
    case wire::Body::DropCopies: copies_.on_drop(from, *f.body_as_DropCopies()); break;
    case wire::Body::FetchCopies: copies_.on_fetch(from, *f.body_as_FetchCopies()); break;
    case wire::Body::SyncBound: {
      // a bound of a deployment a recovery replaced is dropped
      const auto& bound = *f.body_as_SyncBound();
      if (!dep_ || bound.deployment() != dep_->id) break;
      const auto& links = dep_->synced.links;
      if (bound.timezone() >= links.size()) {
        --status_.frames_in;
        bad_frame(received, "a bound for timezone " + std::to_string(bound.timezone()) +
                                ", which the job does not have");
        break;
      }
      links[bound.timezone()]->deliver(read_sync_bound(bound));
      break;
    }
    case wire::Body::StatusRequest: {
      collect_counters();
      flatbuffers::Offset<wire::DeploymentStatus> view;  // absent: no job here
      if (dep_) view = deployment_table(b, describe(*dep_));
      port_.reply(from, control_message(b, status_table(b, status_, view)));
      break;
    }
    default:
      --status_.frames_in;
      bad_frame(received,
                std::string{"unexpected control message "} + wire::EnumNameBody(f.body_type()));
  }
}

void node_dispatch::on_deploy(std::string_view from, const wire::Deploy& d) {
  end_deployment();
  std::string error;
  std::vector<std::string> unreplayable;
  try {
    auto fresh = read_deploy(d, jobs_, opts_.id, opts_.max_message_bytes);
    detail::restore_point restore;
    if (d.restore_checkpoint() != 0) {
      if (incoming_.checkpoint != d.restore_checkpoint())
        throw job_error("deploy: restore checkpoint " + std::to_string(d.restore_checkpoint()) +
                        ", but no state of it arrived");
      restore = std::move(incoming_);
    }
    incoming_ = {};
    assembler_.clear();
    const auto checkpoint = restore.checkpoint;
    unreplayable = port_.launch(*fresh, std::move(restore));
    dep_ = std::move(fresh);
    if (checkpoint)
      spdlog::info("node '{}': deployed job '{}' from checkpoint {}", opts_.id,
                   dep_->built.name(), checkpoint);
    else
      spdlog::info("node '{}': deployed job '{}'", opts_.id, dep_->built.name());
  } catch (const std::exception& e) {
    error = e.what();
    spdlog::error("node '{}': deploy failed: {}", opts_.id, error);
  }
  flatbuffers::FlatBufferBuilder b;
  const auto error_text = b.CreateString(error);
  port_.reply(from, control_message(b, wire::CreateDeployed(b, error.empty(), error_text,
                                                             b.CreateVectorOfStrings(unreplayable))));
}

/// A node of the deployment died and its instances' copies take over: the reliable ends towards
/// it go (nothing would acknowledge or send on them again), then the local stages let go of it.
void node_dispatch::lose_node(std::uint32_t node) {
  auto& x = *dep_;
  if (node >= x.nodes.size() || node == x.self) {
    ++status_.bad_frames;
    spdlog::warn("node '{}': told that node {} is gone, which is not another node of the job",
                 opts_.id, node);
    return;
  }
  for (std::uint32_t c = 0; c < x.channels.size(); ++c) {
    if (x.receiver_node(x.channels[c]) == node) x.senders[c].reset();
    if (x.sender_node(x.channels[c]) == node) x.receivers[c].reset();
  }
  x.gone.insert(node);
  port_.lose_node(node);
  spdlog::warn("node '{}': node '{}' is gone; its replicas go on", opts_.id, x.nodes[node].id);
}

/// A replica fell too far behind and its senders dropped it, or (degraded mode) a copy of a dead
/// instance stops: nothing of it is waited for any more.
void node_dispatch::lose_copy(const wire::CopyLost& m) {
  auto& x = *dep_;
  if (m.stage() >= x.plan.stages.size() || m.instance() >= x.plan.stages[m.stage()].parallelism ||
      m.copy() >= x.wiring.copies[m.stage()][m.instance()]) {
    ++status_.bad_frames;
    spdlog::warn("node '{}': told that copy {} of stage {} instance {} is gone, which does not "
                 "exist",
                 opts_.id, m.copy(), m.stage(), m.instance());
    return;
  }
  x.dropped.insert({x.offsets[m.stage()] + m.instance(), m.copy()});
  port_.lose_copy(x.offsets[m.stage()] + m.instance(), m.copy());
  // a lagging replica, or (degraded mode) any copy of an instance that stopped for good
  spdlog::warn("node '{}': copy {} (0: the primary) of stage {} instance {} is gone", opts_.id,
               m.copy(), m.stage(), m.instance());
}

/// A copy lost with its node runs again elsewhere (docs/replication.md, "Restoring the
/// replication level"). First step: the reliable ends of its channels on this node are made
/// afresh, the stages ready (the copy spawned where it runs) and the coordinator answered; second
/// step (`connect`), once every node answered: the local senders replay to it.
void node_dispatch::restore_copy(std::string_view from, const wire::RestoreCopy& m) {
  auto& x = *dep_;
  const detail::wiring::endpoint e{m.stage(), m.instance(), m.copy()};
  if (m.stage() >= x.plan.stages.size() || m.instance() >= x.plan.stages[m.stage()].parallelism ||
      m.copy() >= x.wiring.copies[m.stage()][m.instance()] || m.node() >= x.nodes.size() ||
      x.gone.count(m.node())) {
    ++status_.bad_frames;
    spdlog::warn("node '{}': told to restore copy {} of stage {} instance {} on node {}, which "
                 "does not exist",
                 opts_.id, m.copy(), m.stage(), m.instance(), m.node());
    return;
  }
  if (m.connect()) {
    port_.connect_copy(x, e, m.checkpoint());
    return;
  }
  std::string error;
  try {
    const auto k = x.offsets[e.stage] + e.instance;
    detail::restore_point state{m.checkpoint(), {}};
    if (m.node() == x.self && m.checkpoint() != 0) {
      auto piece = incoming_.pieces.find({e.stage, e.instance});
      if (incoming_.checkpoint != m.checkpoint() || piece == incoming_.pieces.end())
        throw job_error("no state of checkpoint " + std::to_string(m.checkpoint()) +
                        " for stage " + std::to_string(e.stage) + " instance " +
                        std::to_string(e.instance) + " arrived");
      state.pieces.insert(incoming_.pieces.extract(piece));
    }
    const auto before = x.where.node(k, e.copy);
    x.restored[{k, e.copy}] = before;
    (e.copy == 0 ? x.where.node_of[k] : x.where.replicas[k][e.copy - 1]) = m.node();
    x.dropped.erase({k, e.copy});
    for (std::uint32_t c = 0; c < x.channels.size(); ++c) {
      const auto& ch = x.channels[c];
      const bool out = ch.from_stage == e.stage && ch.from_instance == e.instance &&
                       ch.from_copy == e.copy;
      const bool in =
          ch.to_stage == e.stage && ch.to_instance == e.instance && ch.to_copy == e.copy;
      if (!out && !in) continue;
      const auto sender = x.sender_node(ch);
      const auto receiver = x.receiver_node(ch);
      const bool other_gone = x.gone.count(sender == x.self ? receiver : sender) > 0;
      x.senders[c].reset();
      x.receivers[c].reset();
      if (before != m.node()) x.former_ends[c].insert(before);
      if (other_gone) continue;
      if (sender == x.self && receiver != x.self)
        x.senders[c] = std::make_unique<reliable_sender<zmq::message_t>>(x.opts.credit,
                                                                         reliability_options{});
      if (receiver == x.self && sender != x.self)
        x.receivers[c] = std::make_unique<reliable_receiver<zmq::message_t>>(reliability_options{});
    }
    port_.restore_copy(x, e, m.node(), state);
    spdlog::info("node '{}': copy {} of stage {} instance {} restored on node '{}' from {}",
                 opts_.id, e.copy, e.stage, e.instance, x.nodes[m.node()].id,
                 m.checkpoint() ? "checkpoint " + std::to_string(m.checkpoint())
                                : std::string{"the start"});
  } catch (const std::exception& ex) {
    error = ex.what();
    spdlog::error("node '{}': restoring copy {} of stage {} instance {} failed: {}", opts_.id,
                  e.copy, e.stage, e.instance, error);
  }
  port_.reply(from, copy_restored_frame(e.stage, e.instance, e.copy, error));
}

void node_dispatch::on_faults(std::string_view from, const wire::Faults& body) {
  std::string refused;
  if (!opts_.allow_faults) {
    refused = "it does not accept injected faults: start it with --allow-faults";
    spdlog::warn("node '{}': refused injected faults: started without --allow-faults", opts_.id);
  } else {
    auto cmd = read_faults(body);
    faults_.set(cmd);
    persistence::set_storage_faults(cmd.storage);
    std::string cut;
    for (const auto& n : cmd.unreachable) cut += (cut.empty() ? "" : ", ") + n;
    spdlog::warn("node '{}': injected faults: {} link rule(s), unreachable: {}, storage faults: {} "
                 "(seed {})",
                 opts_.id, cmd.links.size(), cut.empty() ? "none" : cut,
                 cmd.storage.any() ? "on" : "off", cmd.seed);
  }
  flatbuffers::FlatBufferBuilder b;
  port_.reply(from, control_message(b, wire::CreateFaultsReply(b, refused.empty(),
                                                               b.CreateString(refused),
                                                               b.CreateString(opts_.id))));
}

void node_dispatch::end_deployment() {
  if (dep_) ended_ = dep_->id;
  port_.halt();  // waits for the actors: nothing more comes from them
  dep_.reset();
  faults_.clear();
}

// ---- data ------------------------------------------------------------------------------------

void node_dispatch::on_data(const char* key, zmq::message_t& received) {
  if (oversized(received, "data")) return;
  zmq::message_t copy;
  auto& payload = aligned_frame(received, copy);
  if (auto bad = verify_data(payload.data(), payload.size(), opts_.max_message_bytes)) {
    bad_frame(received, *bad);
    return;
  }
  const auto& f = read_data(payload);
  // credit returned after the coordinator ended the job: nothing waits for it any more; and
  // the deployment that ended may still send a frame again that was not acknowledged in time
  if (!dep_ && (f.kind() == wire::FrameKind::credit || f.deployment() == ended_)) return;
  if (!dep_) {
    bad_frame(received, "data frame while no job is deployed");
    return;
  }
  auto& x = *dep_;
  // still in flight from the deployment a recovery replaced (or from before this node restarted)
  if (f.deployment() != x.id) return;
  auto c = f.channel();
  if (c >= x.channels.size()) {
    bad_frame(received, "unknown channel " + std::to_string(c));
    return;
  }
  const auto& ch = x.channels[c];
  // the frame must come from the node that hosts the other end of the channel
  bool credit = f.kind() == wire::FrameKind::credit;
  auto expected_peer = credit ? x.receiver_node(ch) : x.sender_node(ch);
  if (!opts_.insecure && (!key || x.nodes[expected_peer].public_key != key)) {
    // sent before the copy there moved away
    if (key && x.ran_an_end_before(c, [&](auto n) { return x.nodes[n].public_key == key; })) return;
    ++status_.refused_data;
    spdlog::warn("node '{}': refused a frame on channel {} from {}: the channel belongs to node "
                 "'{}'",
                 opts_.id, c, describe_peer(received), x.nodes[expected_peer].id);
    return;
  }
  if (faults_.unreachable(x.nodes[expected_peer].id)) {  // an injected partition
    faults_.count_dropped();
    return;
  }
  const auto now = clock::now();
  if (credit) {
    // a sending end exists exactly where the channel's sending stage runs here (read_deploy)
    if (!x.senders[c]) {
      bad_frame(received, "credit for channel " + std::to_string(c) + ", which has no sender here");
      return;
    }
    ++status_.frames_in;
    const auto granted = x.senders[c]->on_state({f.ack(), f.credit(), f.gap()}, now,
                                                resend_to(expected_peer, now));
    if (granted > 0)
      port_.to_sender(c, detail::credit_msg{ch.out_slot, static_cast<std::uint32_t>(granted)});
    return;
  }
  if (!x.receivers[c]) {
    // late for a copy that ran here and runs elsewhere now
    if (x.ran_an_end_before(c, [&](auto n) { return n == x.self; })) return;
    bad_frame(received, "data for channel " + std::to_string(c) + ", which has no receiver here");
    return;
  }
  auto& receiver = *x.receivers[c];
  if (f.kind() == wire::FrameKind::probe) {
    ++status_.frames_in;
    receiver.on_probe(now);
    return;
  }
  const auto seq = f.seq();  // `f` points into the payload, which the receiver takes
  using verdict = reliable_receiver<zmq::message_t>::verdict;
  switch (receiver.accept(seq, std::move(payload), now,
                          [&](zmq::message_t&& m) { deliver(c, m); })) {
    case verdict::delivered: break;
    case verdict::held: ++status_.lost_frames; break;
    case verdict::duplicate: ++status_.duplicates_discarded; break;
    case verdict::too_far:
      ++status_.bad_frames;
      spdlog::warn("node '{}': channel {}: dropped frame {}, far ahead of frame {}", opts_.id, c,
                   seq, receiver.next());
      break;
  }
}

/// Hands the next frame of channel `c`, in sequence order, to the channel's local receiver.
void node_dispatch::deliver(std::uint32_t c, zmq::message_t& payload) {
  const auto& f = read_data(payload);
  const auto& ch = dep_->channels[c];
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
      port_.to_receiver(c, detail::data_msg{ch.in_slot, 0, detail::batch_holder{std::move(b)}});
      ++status_.batch_frames_in;
      status_.batch_bytes_in += payload.size();
      break;
    }
    case wire::FrameKind::watermark:
      port_.to_receiver(c, k{ch.in_slot, k::watermark, f.watermark()});
      break;
    case wire::FrameKind::idle: port_.to_receiver(c, k{ch.in_slot, k::idle, 0}); break;
    case wire::FrameKind::active: port_.to_receiver(c, k{ch.in_slot, k::active, 0}); break;
    case wire::FrameKind::barrier:
      port_.to_receiver(c, k{ch.in_slot, k::barrier, f.watermark()});
      break;
    case wire::FrameKind::eos: port_.to_receiver(c, k{ch.in_slot, k::eos, end_of_time}); break;
    case wire::FrameKind::loop_probe:
      port_.to_receiver(c, k{ch.in_slot, k::probe, f.watermark()});
      break;
    default:
      bad_frame(payload,
                std::string{"unsupported frame kind "} + wire::EnumNameFrameKind(f.kind()));
      return;
  }
  ++status_.frames_in;
  status_.data_bytes_in += payload.size();
}

// ---- sending ---------------------------------------------------------------------------------

/// A channel whose copy at one end was restored on another node has a new incarnation: new
/// reliable ends, new proxies numbering frames from 0. The old proxies may still hand over what
/// they had queued (addressed to the old node); that must not reach the new ends, or a frame of
/// the old sequence would take the place of the new one with the same number at the receiver.
void node_dispatch::on_outgoing(outgoing o, clock::time_point now) {
  if (!dep_) return;
  auto& x = *dep_;
  if (o.msg.size() == 0) {  // credit a local receiver returned: reported by keep_channels
    if (o.channel < x.receivers.size() && x.receivers[o.channel] &&
        o.peer == x.sender_node(x.channels[o.channel]))
      x.receivers[o.channel]->add_credit(o.credit, now);
    return;
  }
  const auto& f = read_data(o.msg);
  if (f.channel() >= x.channels.size() || o.peer != x.receiver_node(x.channels[f.channel()])) {
    const auto to = o.peer < x.nodes.size() ? x.nodes[o.peer].id : std::string{"?"};
    spdlog::info("node '{}': dropped frame {} of channel {}, queued for node '{}' before the "
                 "channel's receiving copy moved",
                 opts_.id, f.seq(), f.channel(), to);
    return;
  }
  if (x.senders[f.channel()]) {
    zmq::message_t kept;
    kept.copy(o.msg);  // shares the buffer
    x.senders[f.channel()]->sent(f.seq(), std::move(kept), f.kind() == wire::FrameKind::data,
                                 f.kind() == wire::FrameKind::eos, now);
  }
  transmit(o.peer, std::move(o.msg), now);
}

void node_dispatch::keep_channels(clock::time_point now) {
  if (!dep_) return;
  auto& x = *dep_;
  for (std::uint32_t c = 0; c < x.channels.size(); ++c) {
    const auto& ch = x.channels[c];
    if (auto& s = x.senders[c]) {
      const auto peer = x.receiver_node(ch);
      s->poll(now, resend_to(peer, now), [&] {
        transmit(peer, signal_frame(c, 0, wire::FrameKind::probe, 0, 0, x.id), now);
      });
    }
    if (auto& r = x.receivers[c])
      if (auto st = r->report(now))
        transmit(x.sender_node(ch),
                 credit_frame(c, st->ack, st->credit, st->gap, x.id), now);
  }
}

std::optional<node_dispatch::clock::time_point> node_dispatch::next_due() const {
  auto due = faults_.next_due();
  auto sooner = [&](std::optional<clock::time_point> t) {
    if (t) due = std::min(due.value_or(*t), *t);
  };
  if (dep_) {
    for (const auto& s : dep_->senders)
      if (s) sooner(s->next_due());
    for (const auto& r : dep_->receivers)
      if (r) sooner(r->next_due());
  }
  return due;
}

}  // namespace tidemark::net
