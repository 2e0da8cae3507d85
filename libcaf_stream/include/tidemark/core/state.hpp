// Checkpoint state of operators and sources: what `snapshot` writes and `restore` reads. Values
// go through tidemark::codec, the same bytes as the wire, so a type declares its fields once.
// Whether a type kept in state has a codec is checked when a checkpoint writes it, not at compile
// time: a job that never checkpoints needs no codecs for its state.
#pragma once

#include <cstdint>
#include <typeinfo>
#include <utility>
#include <vector>

#include "tidemark/core/codec.hpp"
#include "tidemark/core/operator.hpp"

namespace tidemark {

/// Receives the state of one operator instance for checkpoint `checkpoint()`.
class state_writer {
 public:
  state_writer(std::uint64_t checkpoint, std::vector<std::uint8_t>& out) noexcept
      : checkpoint_(checkpoint), w_(out) {}
  /// The id of the checkpoint being taken (a sink stages its output under it).
  std::uint64_t checkpoint() const noexcept { return checkpoint_; }
  /// Writes `v`; throws job_error naming the type when it has no codec.
  template <class T>
  void write(const T& v) {
    if constexpr (has_codec_v<T>)
      codec<T>::encode(w_, v);
    else
      throw job_error("cannot checkpoint a value of type " + detail::demangle(typeid(T).name()) +
                      ": it has no tidemark::codec (list its fields with TIDEMARK_FIELDS)");
  }
  byte_writer& bytes() noexcept { return w_; }

 private:
  std::uint64_t checkpoint_;
  byte_writer w_;
};

/// A capture that writes `bytes` as they are (state written at the capture, or a prefix of it).
state_capture captured_bytes(std::vector<std::uint8_t> bytes);
/// A capture that writes `bytes`, then what `rest` writes.
state_capture captured_bytes(std::vector<std::uint8_t> bytes, state_capture rest);
/// Runs `snapshot(out)` now and keeps what it wrote: the capture of state that is written at once.
template <class Snapshot>
state_capture capture_now(std::uint64_t checkpoint, Snapshot&& snapshot) {
  std::vector<std::uint8_t> bytes;
  state_writer out{checkpoint, bytes};
  snapshot(out);
  return captured_bytes(std::move(bytes));
}

/// Reads back what a state_writer wrote, for the restore from checkpoint `checkpoint()`.
/// Malformed bytes throw wire_error.
class state_reader {
 public:
  state_reader(std::uint64_t checkpoint, const std::uint8_t* p, std::size_t n) noexcept
      : checkpoint_(checkpoint), r_(p, n) {}
  /// The id of the (completed) checkpoint being restored.
  std::uint64_t checkpoint() const noexcept { return checkpoint_; }
  template <class T>
  void read(T& v) {
    if constexpr (has_codec_v<T>)
      codec<T>::decode(r_, v);
    else
      throw job_error("cannot restore a value of type " + detail::demangle(typeid(T).name()) +
                      ": it has no tidemark::codec (list its fields with TIDEMARK_FIELDS)");
  }
  template <class T>
  T read() {
    T v{};
    read(v);
    return v;
  }
  byte_reader& bytes() noexcept { return r_; }
  std::size_t remaining() const noexcept { return r_.remaining(); }

 private:
  std::uint64_t checkpoint_;
  byte_reader r_;
};

}  // namespace tidemark
