// Frame building and verification (see frames.hpp).
#include "frames.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "tidemark/core/tsan.hpp"

namespace tidemark::net {
namespace {

std::optional<std::string> check_size(std::size_t n, std::size_t max_bytes) {
  if (n > max_bytes)
    return "frame of " + std::to_string(n) + " bytes exceeds the limit of " +
           std::to_string(max_bytes);
  if (n < 8) return "frame of " + std::to_string(n) + " bytes is too short";
  return std::nullopt;
}

/// Whether the elements of `v` (null or empty: none) sit at their alignment within the buffer at
/// `buf`.
/// FlatBuffers 2.0's Verifier checks the alignment of a vector's length only, so a crafted frame
/// could put 8-byte elements at 4 bytes and make readers load them misaligned (undefined
/// behaviour; found by the fuzz target).
template <class T>
bool aligned(const flatbuffers::Vector<T>* v, const void* buf) {
  if (!v || v->size() == 0) return true;  // nothing to load (builders do not align empty ones)
  const auto at = reinterpret_cast<const std::uint8_t*>(v->Data()) -
                  static_cast<const std::uint8_t*>(buf);
  return at % alignof(T) == 0;
}

/// Whether every metrics vector of 8-byte values in `instances` is aligned (see aligned()).
bool aligned_metrics(
    const flatbuffers::Vector<flatbuffers::Offset<wire::InstanceMetrics>>* instances,
    const void* buf) {
  if (!instances) return true;
  for (const auto* in : *instances)
    if (in->operators())
      for (const auto* op : *in->operators())
        if (!aligned(op->extra_values(), buf)) return false;
  return true;
}

}  // namespace

zmq::message_t& aligned_frame(zmq::message_t& m, zmq::message_t& copy) {
  // too short to be a frame: verification refuses it without reading
  if (m.size() < 8 || reinterpret_cast<std::uintptr_t>(m.data()) % alignof(std::uint64_t) == 0)
    return m;
  void* bytes = std::malloc(m.size());  // aligned for every scalar type
  if (!bytes) throw std::bad_alloc{};
  std::memcpy(bytes, m.data(), m.size());
  copy = zmq::message_t{bytes, m.size(), [](void* p, void*) { std::free(p); }};
  return copy;
}

zmq::message_t aligned(zmq::message_t m) {
  zmq::message_t copy;
  return &aligned_frame(m, copy) == &m ? std::move(m) : std::move(copy);
}

std::optional<std::string> verify_data(const void* p, std::size_t n, std::size_t max_bytes) {
  if (auto bad = check_size(n, max_bytes)) return bad;
  flatbuffers::Verifier v{static_cast<const std::uint8_t*>(p), n};
  if (!wire::VerifyDataFrameBuffer(v))
    return std::string{"not a valid data frame (expected identifier "} + wire::DataFrameIdentifier() + ")";
  const auto& f = *wire::GetDataFrame(p);
  auto count = f.count();
  if ((f.times() && f.times()->size() && f.times()->size() != count) ||
      (f.hashes() && f.hashes()->size() && f.hashes()->size() != count))
    return "data frame columns disagree with its count of " + std::to_string(count);
  if (!aligned(f.times(), p) || !aligned(f.hashes(), p)) return "data frame with misaligned columns";
  if (f.kind() > wire::FrameKind::MAX) return "unknown data frame kind";
  return std::nullopt;
}

std::optional<std::string> verify_control(const void* p, std::size_t n, std::size_t max_bytes) {
  if (auto bad = check_size(n, max_bytes)) return bad;
  flatbuffers::Verifier v{static_cast<const std::uint8_t*>(p), n};
  if (!wire::VerifyControlFrameBuffer(v))
    return std::string{"not a valid control frame (expected identifier "} +
           wire::ControlFrameIdentifier() + ")";
  // the Verifier accepts a union type whose value is missing; readers then get null (found by
  // the fuzz target)
  const auto& f = *wire::GetControlFrame(p);
  if (f.body_type() == wire::Body::NONE || !f.body()) return "control frame without a message";
  if ((f.body_type() == wire::Body::Done && !aligned_metrics(f.body_as_Done()->instances(), p)) ||
      (f.body_type() == wire::Body::LiveMetrics &&
       !aligned_metrics(f.body_as_LiveMetrics()->instances(), p)))
    return "metrics with misaligned values";
  return std::nullopt;
}

std::optional<std::string> check_version(const wire::ControlFrame& f) {
  if (f.version_major() == wire_version_major) return std::nullopt;
  return "incompatible wire version " + std::to_string(f.version_major()) + "." +
         std::to_string(f.version_minor()) + " (this side speaks " +
         std::to_string(wire_version_major) + "." + std::to_string(wire_version_minor) +
         "): run the same Tidemark release on every node and the coordinator";
}

zmq::message_t to_message(flatbuffers::FlatBufferBuilder& b) {
  auto buf = std::make_unique<flatbuffers::DetachedBuffer>(b.Release());
  auto* data = buf->data();
  auto size = buf->size();
  // ZeroMQ reads the buffer and frees it on its I/O thread
  detail::tsan_release(buf.get());
  return zmq::message_t{data, size,
                        [](void*, void* hint) {
                          detail::tsan_acquire(hint);
                          std::unique_ptr<flatbuffers::DetachedBuffer>{
                              static_cast<flatbuffers::DetachedBuffer*>(hint)};
                        },
                        buf.release()};
}

zmq::message_t signal_frame(std::uint32_t channel, std::uint64_t seq, wire::FrameKind kind,
                            std::int64_t watermark, std::uint64_t credit,
                            std::uint32_t deployment) {
  flatbuffers::FlatBufferBuilder b{128};
  wire::DataFrameBuilder f{b};
  f.add_channel(channel);
  f.add_deployment(deployment);
  f.add_seq(seq);
  f.add_kind(kind);
  f.add_watermark(watermark);
  f.add_credit(credit);
  wire::FinishDataFrameBuffer(b, f.Finish());
  return to_message(b);
}

zmq::message_t credit_frame(std::uint32_t channel, std::uint64_t ack, std::uint64_t credit,
                            bool gap, std::uint32_t deployment) {
  flatbuffers::FlatBufferBuilder b{128};
  wire::DataFrameBuilder f{b};
  f.add_channel(channel);
  f.add_deployment(deployment);
  f.add_kind(wire::FrameKind::credit);
  f.add_credit(credit);
  f.add_ack(ack);
  f.add_gap(gap);
  wire::FinishDataFrameBuffer(b, f.Finish());
  return to_message(b);
}

std::size_t piece_chunk_bytes(std::int64_t max_message_bytes) {
  constexpr std::int64_t most = 1 << 20;
  return static_cast<std::size_t>(std::clamp<std::int64_t>(max_message_bytes / 4, 1, most));
}

std::vector<zmq::message_t> piece_frames(std::uint64_t checkpoint, std::uint32_t stage,
                                         std::uint32_t instance, std::string_view state,
                                         double alignment_ms, std::size_t chunk_bytes) {
  return chunk_frames(state, chunk_bytes, [&](auto& b, std::size_t offset, auto bytes) {
    return wire::CreateStatePiece(b, checkpoint, stage, instance, offset, state.size(), alignment_ms,
                                  bytes);
  });
}

zmq::message_t checkpoint_start_frame(std::uint64_t id) {
  flatbuffers::FlatBufferBuilder b{64};
  return control_message(b, wire::CreateCheckpointStart(b, id));
}

zmq::message_t commit_frame(std::uint64_t id) {
  flatbuffers::FlatBufferBuilder b{64};
  return control_message(b, wire::CreateCommit(b, id));
}

zmq::message_t node_lost_frame(std::uint32_t node) {
  flatbuffers::FlatBufferBuilder b{64};
  return control_message(b, wire::CreateNodeLost(b, node));
}

zmq::message_t replica_lagging_frame(std::uint32_t stage, std::uint32_t instance,
                                     std::uint32_t out_slot) {
  flatbuffers::FlatBufferBuilder b{64};
  return control_message(b, wire::CreateReplicaLagging(b, stage, instance, out_slot));
}

zmq::message_t copy_lost_frame(std::uint32_t stage, std::uint32_t instance, std::uint32_t copy) {
  flatbuffers::FlatBufferBuilder b{64};
  return control_message(b, wire::CreateCopyLost(b, stage, instance, copy));
}

zmq::message_t restore_copy_frame(std::uint32_t stage, std::uint32_t instance, std::uint32_t copy,
                                  std::uint32_t node, std::uint64_t checkpoint, bool connect) {
  flatbuffers::FlatBufferBuilder b{64};
  return control_message(
      b, wire::CreateRestoreCopy(b, stage, instance, copy, node, checkpoint, connect));
}

zmq::message_t copy_restored_frame(std::uint32_t stage, std::uint32_t instance,
                                   std::uint32_t copy, const std::string& error) {
  flatbuffers::FlatBufferBuilder b{64};
  const auto text = b.CreateString(error);
  return control_message(
      b, wire::CreateCopyRestored(b, stage, instance, copy, error.empty(), text));
}

zmq::message_t copy_caught_up_frame(std::uint32_t stage, std::uint32_t instance,
                                    std::uint32_t in_slot) {
  flatbuffers::FlatBufferBuilder b{64};
  return control_message(b, wire::CreateCopyCaughtUp(b, stage, instance, in_slot));
}

zmq::message_t sync_report_frame(std::uint32_t deployment, std::uint32_t timezone,
                                 const sync_report& r) {
  flatbuffers::FlatBufferBuilder b{96};
  return control_message(
      b, wire::CreateSyncReport(b, deployment, timezone, static_cast<wire::SyncKind>(r.what),
                                r.index, r.wm, r.bound, r.lowest.has_value(),
                                r.lowest.value_or(0)));
}

zmq::message_t sync_bound_frame(std::uint32_t deployment, std::uint32_t timezone,
                                const sync_bound& s) {
  flatbuffers::FlatBufferBuilder b{96};
  return control_message(b, wire::CreateSyncBound(b, deployment, timezone, s.bound, s.busy,
                                                  s.slices, s.steps));
}

std::optional<sync_report> read_sync_report(const wire::SyncReport& f) {
  if (f.kind() > wire::SyncKind::MAX) return std::nullopt;
  sync_report r{static_cast<sync_report::kind>(f.kind()), f.index(), f.wm(), f.bound(), {}};
  if (f.has_lowest()) r.lowest = f.lowest();
  return r;
}

sync_bound read_sync_bound(const wire::SyncBound& f) {
  return {f.bound(), f.busy(), f.slices(), f.steps()};
}

std::optional<state_piece> piece_assembler::add(const wire::StatePiece& c) {
  const auto key = std::make_tuple(c.checkpoint(), c.stage(), c.instance());
  const auto size = c.bytes() ? c.bytes()->size() : 0;
  const auto what = "chunk of checkpoint " + std::to_string(c.checkpoint()) + " stage " +
                    std::to_string(c.stage()) + " instance " + std::to_string(c.instance());
  if (c.offset() == 0) partial_.erase(key);  // a piece starts (again)
  auto it = partial_.find(key);
  const auto have = it == partial_.end() ? 0 : it->second.piece.bytes.size();
  auto refuse = [&](const std::string& why) {
    if (it != partial_.end()) partial_.erase(it);
    throw bad_chunk(what + ": " + why);
  };
  if (c.offset() != have)
    refuse("starts at byte " + std::to_string(c.offset()) + ", " + std::to_string(have) +
           " bytes of the piece came before");
  if (it != partial_.end() && it->second.total != c.total())
    refuse("says the piece has " + std::to_string(c.total()) + " bytes, its first chunk said " +
           std::to_string(it->second.total));
  if (c.total() - c.offset() < size || (size == 0 && c.offset() < c.total()))
    refuse("carries " + std::to_string(size) + " bytes at offset " + std::to_string(c.offset()) +
           " of a piece of " + std::to_string(c.total()));
  if (it == partial_.end()) {
    it = partial_.emplace(key, partial{}).first;
    it->second.total = c.total();
    it->second.piece = {c.checkpoint(), c.stage(), c.instance(), c.alignment_ms(), {}};
  }
  if (size) it->second.piece.bytes.append(reinterpret_cast<const char*>(c.bytes()->data()), size);
  if (it->second.piece.bytes.size() < it->second.total) return std::nullopt;
  auto whole = std::move(it->second.piece);
  partial_.erase(it);
  return whole;
}

namespace {

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::InstanceMetrics>>> instances_table(
    flatbuffers::FlatBufferBuilder& b, const std::vector<instance_metrics>& instances) {
  std::vector<flatbuffers::Offset<wire::InstanceMetrics>> list;
  for (const auto& inst : instances) {
    std::vector<flatbuffers::Offset<wire::OperatorMetrics>> ops;
    for (const auto& m : inst.operators) {
      std::vector<std::string> names;
      std::vector<double> values;
      for (const auto& [k, v] : m.extra) {
        names.push_back(k);
        values.push_back(v);
      }
      ops.push_back(wire::CreateOperatorMetrics(
          b, b.CreateString(m.name), b.CreateString(m.op), m.instance, m.events_in, m.events_out,
          m.batches_in, m.batches_out, m.skipped, b.CreateVectorOfStrings(names),
          b.CreateVector(values)));
    }
    list.push_back(wire::CreateInstanceMetrics(b, inst.stage, inst.instance, inst.busy_ns,
                                               inst.max_queued_batches, b.CreateVector(ops),
                                               inst.queued_batches, inst.blocked_batches,
                                               inst.watermark));
  }
  return b.CreateVector(list);
}

std::vector<instance_metrics> read_instances(
    const flatbuffers::Vector<flatbuffers::Offset<wire::InstanceMetrics>>* instances) {
  std::vector<instance_metrics> result;
  if (!instances) return result;
  for (const auto* inst : *instances) {
    instance_metrics im;
    im.stage = inst->stage();
    im.instance = inst->instance();
    im.busy_ns = inst->busy_ns();
    im.max_queued_batches = inst->max_queued_batches();
    im.queued_batches = inst->queued_batches();
    im.blocked_batches = inst->blocked_batches();
    im.watermark = inst->watermark();
    if (inst->operators())
      for (const auto* m : *inst->operators()) {
        operator_metrics om;
        om.name = m->name() ? m->name()->str() : "";
        om.op = m->op() ? m->op()->str() : "";
        om.instance = m->instance();
        om.events_in = m->events_in();
        om.events_out = m->events_out();
        om.batches_in = m->batches_in();
        om.batches_out = m->batches_out();
        om.skipped = m->skipped();
        if (m->extra_names() && m->extra_values())
          for (flatbuffers::uoffset_t i = 0;
               i < m->extra_names()->size() && i < m->extra_values()->size(); ++i)
            om.extra[m->extra_names()->Get(i)->str()] = m->extra_values()->Get(i);
        im.operators.push_back(std::move(om));
      }
    result.push_back(std::move(im));
  }
  return result;
}

}  // namespace

zmq::message_t done_frame(const std::string& node, const std::vector<instance_metrics>& instances,
                          std::int64_t peak_live_batches, const std::string& report) {
  flatbuffers::FlatBufferBuilder b;
  auto list = instances_table(b, instances);
  flatbuffers::Offset<flatbuffers::Vector<std::uint8_t>> bytes;  // absent when there is none
  if (!report.empty())
    bytes = b.CreateVector(reinterpret_cast<const std::uint8_t*>(report.data()), report.size());
  return control_message(
      b, wire::CreateDone(b, b.CreateString(node), list, peak_live_batches, bytes));
}

std::string read_report(const wire::Done& d) {
  if (!d.report()) return {};
  return {reinterpret_cast<const char*>(d.report()->data()), d.report()->size()};
}

std::vector<instance_metrics> read_metrics(const wire::Done& d) {
  return read_instances(d.instances());
}

zmq::message_t live_metrics_frame(const std::string& node,
                                  const std::vector<instance_metrics>& instances) {
  flatbuffers::FlatBufferBuilder b;
  auto list = instances_table(b, instances);
  return control_message(b, wire::CreateLiveMetrics(b, b.CreateString(node), list));
}

std::vector<instance_metrics> read_metrics(const wire::LiveMetrics& m) {
  return read_instances(m.instances());
}

flatbuffers::Offset<wire::StatusReply> status_table(
    flatbuffers::FlatBufferBuilder& b, const node_status& s,
    flatbuffers::Offset<wire::DeploymentStatus> deployment) {
  return wire::CreateStatusReply(
      b, b.CreateString(s.node), s.frames_in, s.bad_frames, s.refused_peers, s.lost_frames,
      s.data_bytes_in, s.batch_frames_in, s.batch_bytes_in, s.oversized_frames, s.refused_control,
      s.refused_data, s.fault_dropped, s.fault_duplicated, s.fault_reordered, s.retransmitted,
      s.duplicates_discarded, deployment);
}

flatbuffers::Offset<wire::DeploymentStatus> deployment_table(flatbuffers::FlatBufferBuilder& b,
                                                             const deployment_status& d) {
  // the wire names nodes by their index in the deployment's list
  auto index = [&d](const std::string& id) {
    return static_cast<std::uint32_t>(std::find(d.nodes.begin(), d.nodes.end(), id) -
                                      d.nodes.begin());
  };
  std::vector<std::uint32_t> gone;
  for (const auto& id : d.gone) gone.push_back(index(id));
  std::vector<flatbuffers::Offset<wire::InstanceStatus>> instances;
  for (const auto& inst : d.instances) {
    std::vector<flatbuffers::Offset<wire::CopyStatus>> copies;
    for (const auto& c : inst.copies)
      copies.push_back(wire::CreateCopyStatus(b, index(c.node), static_cast<wire::CopyState>(c.now),
                                              c.was_on.empty() ? 0 : index(c.was_on),
                                              c.lag ? static_cast<std::int64_t>(*c.lag) : -1));
    instances.push_back(wire::CreateInstanceStatus(
        b, inst.stage, inst.instance, b.CreateString(inst.name), b.CreateVector(copies)));
  }
  return wire::CreateDeploymentStatus(b, b.CreateString(d.job), d.deployment,
                                      b.CreateVectorOfStrings(d.nodes), b.CreateVector(gone),
                                      b.CreateVector(instances), d.spare_budget, d.replica_load,
                                      d.predicted_availability);
}

static_assert(static_cast<int>(wire::CopyState::restored) ==
                      static_cast<int>(copy_status::state::restored) &&
                  static_cast<int>(wire::CopyState::MAX) ==
                      static_cast<int>(copy_status::state::restored),
              "CopyState on the wire and copy_status::state list the same states in one order");

std::optional<deployment_status> read_deployment(const wire::StatusReply& s) {
  const auto* w = s.deployment();
  if (!w) return std::nullopt;
  deployment_status d;
  d.job = w->job() ? w->job()->str() : std::string{};
  d.deployment = w->deployment();
  if (w->nodes())
    for (const auto* n : *w->nodes()) d.nodes.push_back(n->str());
  auto id = [&d](std::uint32_t i) { return i < d.nodes.size() ? d.nodes[i] : std::string{"?"}; };
  if (w->gone())
    for (auto i : *w->gone()) d.gone.push_back(id(i));
  if (w->instances())
    for (const auto* inst : *w->instances()) {
      auto& to = d.instances.emplace_back();
      to.stage = inst->stage();
      to.instance = inst->instance();
      to.name = inst->name() ? inst->name()->str() : std::string{};
      if (inst->copies())
        for (const auto* c : *inst->copies()) {
          auto& copy = to.copies.emplace_back();
          copy.node = id(c->node());
          // a state this side does not know (a newer peer) reads as alive
          copy.now = c->state() > wire::CopyState::MAX
                         ? copy_status::state::alive
                         : static_cast<copy_status::state>(c->state());
          if (copy.now == copy_status::state::restored) copy.was_on = id(c->was_node());
          if (c->lag() >= 0) copy.lag = static_cast<std::uint64_t>(c->lag());
        }
    }
  d.spare_budget = w->spare_budget();
  d.replica_load = w->replica_load();
  d.predicted_availability = w->predicted_availability();
  return d;
}

node_status read_status(const wire::StatusReply& s) {
  return node_status{s.node() ? s.node()->str() : std::string{},
                     s.frames_in(),
                     s.bad_frames(),
                     s.refused_peers(),
                     s.lost_frames(),
                     s.data_bytes_in(),
                     s.batch_frames_in(),
                     s.batch_bytes_in(),
                     s.oversized_frames(),
                     s.refused_control(),
                     s.refused_data(),
                     s.fault_dropped(),
                     s.fault_duplicated(),
                     s.fault_reordered(),
                     s.retransmitted(),
                     s.duplicates_discarded()};
}

zmq::message_t faults_frame(const fault_command& cmd) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<wire::LinkFaults>> links;
  for (const auto& [peer, l] : cmd.links)
    links.push_back(wire::CreateLinkFaults(b, b.CreateString(peer), l.drop, l.duplicate, l.reorder,
                                           static_cast<std::uint32_t>(l.delay.count()),
                                           static_cast<std::uint32_t>(l.jitter.count())));
  std::vector<std::string> unreachable{cmd.unreachable.begin(), cmd.unreachable.end()};
  const auto& st = cmd.storage;
  return control_message(
      b, wire::CreateFaults(b, b.CreateVector(links), b.CreateVectorOfStrings(unreachable),
                            static_cast<std::uint32_t>(st.write_delay.count()), st.fail_writes,
                            st.seed, cmd.seed));
}

fault_command read_faults(const wire::Faults& f) {
  // probabilities outside [0, 1] and NaN are clamped: a draw compares with them
  auto probability = [](double p) { return p >= 0 ? std::min(p, 1.0) : 0.0; };
  fault_command cmd;
  if (f.links())
    for (const auto* l : *f.links()) {
      auto& link = cmd.links[l->peer() ? l->peer()->str() : std::string{}];
      link.drop = probability(l->drop());
      link.duplicate = probability(l->duplicate());
      link.reorder = probability(l->reorder());
      link.delay = std::chrono::milliseconds{l->delay_ms()};
      link.jitter = std::chrono::milliseconds{l->jitter_ms()};
    }
  if (f.unreachable())
    for (const auto* n : *f.unreachable()) cmd.unreachable.insert(n->str());
  cmd.storage.write_delay = std::chrono::milliseconds{f.write_delay_ms()};
  cmd.storage.fail_writes = probability(f.fail_writes());
  cmd.storage.seed = f.storage_seed();
  cmd.seed = f.seed();
  return cmd;
}

std::string describe_peer(zmq::message_t& m) {
  std::string out;
  if (const char* addr = zmq_msg_gets(m.handle(), "Peer-Address")) out = addr;
  if (const char* user = zmq_msg_gets(m.handle(), "User-Id"); user && *user)
    out += std::string{" (key "} + user + ")";
  return out.empty() ? "an unknown peer" : out;
}

}  // namespace tidemark::net
