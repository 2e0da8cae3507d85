// Building and checking wire frames: every received buffer passes verify_* (size limit, then the
// FlatBuffers Verifier) before anything reads it. Frames are built in a FlatBufferBuilder and
// handed to ZeroMQ without another copy.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "tidemark/wire/control_generated.h"
#include "tidemark/wire/data_generated.h"
#include "tidemark/runtime/live.hpp"
#include "tidemark/runtime/runtime.hpp"

namespace tidemark::net {

/// Version of the control schema; peers with another major version are refused.
inline constexpr std::uint16_t wire_version_major = 1;
inline constexpr std::uint16_t wire_version_minor = 1;

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

/// A control frame read from a verified buffer.
inline const wire::ControlFrame& read_control(const zmq::message_t& m) {
  return *wire::GetControlFrame(m.data());
}
inline const wire::DataFrame& read_data(const zmq::message_t& m) {
  return *wire::GetDataFrame(m.data());
}

/// A data frame without payload (signal or credit).
zmq::message_t signal_frame(std::uint32_t channel, std::uint64_t seq, wire::FrameKind kind,
                            std::int64_t watermark, std::uint32_t credit);

/// Metrics of the instances one node ran, as a Done frame, and back.
zmq::message_t done_frame(const std::string& node, const std::vector<instance_metrics>& instances,
                          std::int64_t peak_live_batches);
std::vector<instance_metrics> read_metrics(const wire::Done& d);
/// The counters of a node's instances while the job runs, as a LiveMetrics frame, and back.
zmq::message_t live_metrics_frame(const std::string& node,
                                  const std::vector<instance_metrics>& instances);
std::vector<instance_metrics> read_metrics(const wire::LiveMetrics& m);

/// A node's counters as a StatusReply table (its answer to StatusRequest and in its heartbeats),
/// and back.
flatbuffers::Offset<wire::StatusReply> status_table(flatbuffers::FlatBufferBuilder& b,
                                                    const node_status& s);
node_status read_status(const wire::StatusReply& s);

/// "tcp://127.0.0.1:7100 (key abc...)" for logs: who sent a frame.
std::string describe_peer(zmq::message_t& m);

}  // namespace tidemark::net
