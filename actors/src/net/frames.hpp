// Building and checking wire frames: every received buffer passes verify_* (size limit, then the
// FlatBuffers Verifier) before anything reads it. Frames are built in a FlatBufferBuilder and
// handed to ZeroMQ without another copy.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <zmq.hpp>

#include "tidemark/core/synchronizer.hpp"
#include "tidemark/wire/control_generated.h"
#include "tidemark/wire/data_generated.h"
#include "tidemark/runtime/cluster_status.hpp"
#include "tidemark/runtime/faults.hpp"
#include "tidemark/runtime/live.hpp"
#include "tidemark/runtime/runtime.hpp"

namespace tidemark::net {

/// Version of the control schema; peers with another major version are refused.
inline constexpr std::uint16_t wire_version_major = 1;
inline constexpr std::uint16_t wire_version_minor = 10;

/// Why a frame was refused, or nullopt when it may be read.
std::optional<std::string> verify_data(const void* p, std::size_t n, std::size_t max_bytes);
std::optional<std::string> verify_control(const void* p, std::size_t n, std::size_t max_bytes);
/// The refusal text when a control frame's version is incompatible.
std::optional<std::string> check_version(const wire::ControlFrame& f);

/// Moves the finished buffer of `b` into a ZeroMQ message (no copy).
zmq::message_t to_message(flatbuffers::FlatBufferBuilder& b);

/// Finishes a control frame around `body` (with the version) and returns the message.
template <class T>
zmq::message_t control_message(flatbuffers::FlatBufferBuilder& b, flatbuffers::Offset<T> body) {
  auto frame = wire::CreateControlFrame(b, wire_version_major, wire_version_minor,
                                        wire::BodyTraits<T>::enum_value, body.Union());
  wire::FinishControlFrameBuffer(b, frame);
  return to_message(b);
}

/// `m`, or a copy of it in `copy` when `m` is not aligned for 8-byte scalars: ZeroMQ hands
/// plain-text frames over where they sit in its receive buffer, at any address, while FlatBuffers
/// reads scalars in place. The copy has its own allocation but no metadata: describe the peer from
/// `m`. Call it before verify_*.
zmq::message_t& aligned_frame(zmq::message_t& m, zmq::message_t& copy);
/// aligned_frame for a caller that keeps the frame: `m` itself, or its aligned copy.
zmq::message_t aligned(zmq::message_t m);

/// A control frame read from a verified buffer.
inline const wire::ControlFrame& read_control(const zmq::message_t& m) {
  return *wire::GetControlFrame(m.data());
}
inline const wire::DataFrame& read_data(const zmq::message_t& m) {
  return *wire::GetDataFrame(m.data());
}

/// A data frame without payload (a signal, a probe, or a credit frame without ack) of deployment
/// `deployment`.
zmq::message_t signal_frame(std::uint32_t channel, std::uint64_t seq, wire::FrameKind kind,
                            std::int64_t watermark, std::uint64_t credit,
                            std::uint32_t deployment = 0);
/// A credit frame: the receiver's state of `channel` (reliable_channel.hpp).
zmq::message_t credit_frame(std::uint32_t channel, std::uint64_t ack, std::uint64_t credit,
                            bool gap, std::uint32_t deployment);

/// Bytes of a state piece per StatePiece frame: a quarter of `max_message_bytes` and at most
/// 1 MiB, so a chunk and its header always fit well below the peer's frame limit.
std::size_t piece_chunk_bytes(std::int64_t max_message_bytes);
/// One control frame per chunk of at most `chunk_bytes` of `state` (one frame when it is empty):
/// `body(b, offset, bytes)` builds the frame's body in `b` around the chunk at `offset`.
template <class Body>
std::vector<zmq::message_t> chunk_frames(std::string_view state, std::size_t chunk_bytes, Body body) {
  std::vector<zmq::message_t> frames;
  std::size_t offset = 0;
  do {
    const auto n = std::min(chunk_bytes, state.size() - offset);
    flatbuffers::FlatBufferBuilder b{n + 128};
    auto bytes = b.CreateVector(reinterpret_cast<const std::uint8_t*>(state.data() + offset), n);
    frames.push_back(control_message(b, body(b, offset, bytes)));
    offset += n;
  } while (offset < state.size());
  return frames;
}
/// The StatePiece frames carrying `state`, the piece of (stage, instance) for `checkpoint`, in
/// chunks of at most `chunk_bytes` (one frame when it is empty).
std::vector<zmq::message_t> piece_frames(std::uint64_t checkpoint, std::uint32_t stage,
                                         std::uint32_t instance, std::string_view state,
                                         double alignment_ms, std::size_t chunk_bytes);
/// A CheckpointStart or Commit frame of checkpoint `id`.
zmq::message_t checkpoint_start_frame(std::uint64_t id);
zmq::message_t commit_frame(std::uint64_t id);
/// A NodeLost frame: node `node` (index in the deployment's nodes) is gone, its replicas go on.
zmq::message_t node_lost_frame(std::uint32_t node);
/// A ReplicaLagging frame (node -> coordinator) and a CopyLost frame (coordinator -> nodes).
zmq::message_t replica_lagging_frame(std::uint32_t stage, std::uint32_t instance,
                                     std::uint32_t out_slot);
zmq::message_t copy_lost_frame(std::uint32_t stage, std::uint32_t instance, std::uint32_t copy);
/// A RestoreCopy frame (coordinator -> nodes), its CopyRestored answer and a CopyCaughtUp frame
/// (node -> coordinator).
zmq::message_t restore_copy_frame(std::uint32_t stage, std::uint32_t instance, std::uint32_t copy,
                                  std::uint32_t node, std::uint64_t checkpoint, bool connect);
zmq::message_t copy_restored_frame(std::uint32_t stage, std::uint32_t instance,
                                   std::uint32_t copy, const std::string& error);
zmq::message_t copy_caught_up_frame(std::uint32_t stage, std::uint32_t instance,
                                    std::uint32_t in_slot);

/// Timezones on a cluster (wire 1.9): a gate's or an exit's report to the synchronizer of
/// `timezone`, and the bound it admitted, both of deployment `deployment`.
zmq::message_t sync_report_frame(std::uint32_t deployment, std::uint32_t timezone,
                                 const sync_report& r);
zmq::message_t sync_bound_frame(std::uint32_t deployment, std::uint32_t timezone,
                                const sync_bound& b);
/// The report in a SyncReport frame; nullopt when its kind is unknown.
std::optional<sync_report> read_sync_report(const wire::SyncReport& f);
sync_bound read_sync_bound(const wire::SyncBound& f);

/// A state piece put back together from its StatePiece frames.
struct state_piece {
  std::uint64_t checkpoint = 0;
  std::uint32_t stage = 0;
  std::uint32_t instance = 0;
  double alignment_ms = 0;
  std::string bytes;
};

/// A chunk that does not continue its piece (wrong offset, total changed, past the end).
struct bad_chunk : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Puts the pieces of one peer back together. Chunks of a piece come in order (one connection
/// is ordered), pieces may interleave.
class piece_assembler {
 public:
  /// Adds a chunk; returns the whole piece with its last chunk. Throws bad_chunk, and forgets the
  /// partial piece, when the chunk does not continue it.
  std::optional<state_piece> add(const wire::StatePiece& chunk);
  /// Forgets every partial piece (the peer's deployment ended).
  void clear() { partial_.clear(); }

 private:
  struct partial {
    std::uint64_t total = 0;
    state_piece piece;
  };
  std::map<std::tuple<std::uint64_t, std::uint32_t, std::uint32_t>, partial> partial_;
};

/// Metrics of the instances one node ran, as a Done frame, and back.
zmq::message_t done_frame(const std::string& node, const std::vector<instance_metrics>& instances,
                          std::int64_t peak_live_batches, const std::string& report = {});
std::vector<instance_metrics> read_metrics(const wire::Done& d);
/// The Done frame's node report (job_spec::node_report); empty when there is none.
std::string read_report(const wire::Done& d);
/// The counters of a node's instances while the job runs, as a LiveMetrics frame, and back.
zmq::message_t live_metrics_frame(const std::string& node,
                                  const std::vector<instance_metrics>& instances);
std::vector<instance_metrics> read_metrics(const wire::LiveMetrics& m);

/// A node's counters as a StatusReply table (its answer to StatusRequest and in its heartbeats),
/// with the deployment it runs (a deployment_table; absent in heartbeats), and back.
flatbuffers::Offset<wire::StatusReply> status_table(
    flatbuffers::FlatBufferBuilder& b, const node_status& s,
    flatbuffers::Offset<wire::DeploymentStatus> deployment = 0);
flatbuffers::Offset<wire::DeploymentStatus> deployment_table(flatbuffers::FlatBufferBuilder& b,
                                                             const deployment_status& d);
/// The deployment a StatusReply describes; nullopt when the node runs none (or is older than 1.7).
/// A node index out of range reads as "?".
std::optional<deployment_status> read_deployment(const wire::StatusReply& s);
node_status read_status(const wire::StatusReply& s);

/// A fault command as a Faults frame, and back.
zmq::message_t faults_frame(const fault_command& cmd);
fault_command read_faults(const wire::Faults& f);

/// "tcp://127.0.0.1:7100 (key abc...)" for logs: who sent a frame.
std::string describe_peer(zmq::message_t& m);

}  // namespace tidemark::net
