// Messages between stage actors and the driver. All are local (one process); they are declared
// unsafe for CAF's serialization on purpose: crossing a process boundary goes through the wire
// format, not through CAF.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/actor.hpp>
#include <caf/atom.hpp>

#include "stage_core.hpp"
#include "tidemark/core/batch.hpp"
#include "tidemark/runtime/runtime.hpp"

namespace tidemark::detail {

/// CAF 0.17 requires copyable message types; a copy clones the batch (the runtime never copies).
struct batch_holder {
  batch_ptr ptr;
  batch_holder() = default;
  explicit batch_holder(batch_ptr p) noexcept : ptr(std::move(p)) {}
  batch_holder(batch_holder&&) noexcept = default;
  batch_holder& operator=(batch_holder&&) noexcept = default;
  batch_holder(const batch_holder& other) : ptr(other.ptr ? other.ptr->clone() : nullptr) {}
};

/// A batch on channel slot `in` of the receiver, sent from output slot `out` of the sender.
struct data_msg {
  std::uint32_t in;
  std::uint32_t out;
  batch_holder batch;
};

/// A control item on a channel: a watermark, an idle/active flag, end-of-stream, the barrier of a
/// checkpoint (`wm` carries its id) or a loop's probe (see signal_kind).
struct signal_msg {
  using kind_t = signal_kind;
  static constexpr kind_t watermark = signal_kind::watermark;
  static constexpr kind_t idle = signal_kind::idle;
  static constexpr kind_t active = signal_kind::active;
  static constexpr kind_t eos = signal_kind::eos;
  static constexpr kind_t barrier = signal_kind::barrier;
  static constexpr kind_t probe = signal_kind::probe;
  std::uint32_t in;
  kind_t kind;
  event_time wm;
};

/// One item of a channel in a burst_msg: a batch, or (batch null) a signal as in signal_msg.
struct channel_item {
  batch_holder batch;
  signal_kind kind = signal_kind::watermark;
  event_time wm = 0;
};

/// What one message of the sender put on a channel, in order, when that is more than one item:
/// one message instead of one per batch or signal (the receiver takes them one by one, as if
/// they came as data_msg and signal_msg).
struct burst_msg {
  std::uint32_t in;
  std::uint32_t out;
  std::vector<channel_item> items;
};

/// The receiver of output slot `out` processed `n` more batches.
struct credit_msg {
  std::uint32_t out;
  std::uint32_t n;
};

/// Copies of neighbouring stage instances are gone (stage_core::on_copies_lost): the stage's output
/// slots `outs` and input slots `ins` that lead to them.
struct copies_lost_msg {
  std::vector<std::uint32_t> outs;
  std::vector<std::uint32_t> ins;
};

/// Stage instance (stage, instance) dropped its output slot `out` to a replica that fell too far
/// behind (stage_io::copy_dropped).
struct copy_dropped_msg {
  std::uint32_t stage;
  std::uint32_t instance;
  std::uint32_t out;
};

/// The copy of a receiver behind output slot `out` was restored from checkpoint `checkpoint`
/// (stage_core::on_output_restored); it is reached through `target`, at its input slot `in`.
struct output_restored_msg {
  std::uint32_t out;
  caf::actor target;
  std::uint32_t in;
  std::uint64_t checkpoint;
};

/// Output slot `out` reaches `target` at its input slot `in`: the feedback channel of a loop,
/// whose receiver is spawned after its sender (deploy.cpp), before anything flows.
struct connect_msg {
  std::uint32_t out;
  caf::actor target;
  std::uint32_t in;
};

/// The copy of a sender behind input slot `in` was restored from checkpoint `checkpoint`
/// (stage_core::on_input_restored); its channel reaches the stage through a new proxy.
struct input_restored_msg {
  std::uint32_t in;
  std::uint64_t checkpoint;
};

/// The copy restored behind input slot `in` of stage instance (stage, instance) caught up
/// (stage_io::copy_caught_up).
struct copy_caught_up_msg {
  std::uint32_t stage;
  std::uint32_t instance;
  std::uint32_t in;
};

struct done_msg {
  instance_metrics metrics;
};

/// Stage instance (stage, instance) took its part of checkpoint `id`.
struct checkpointed_msg {
  std::uint32_t stage;
  std::uint32_t instance;
  std::uint64_t id;
  std::string state;
  double alignment_ms;
};

struct failed_msg {
  std::string what;
};

/// To a stage, from the snapshot writer: the state of checkpoint `id` it captured is written
/// (stage_core::on_state_written); `error` says what failed.
struct state_written_msg {
  std::uint64_t id;
  std::string state;
  std::string error;
};

/// A stage's counters as they are now, the answer to live_atom (live views).
struct live_metrics_msg {
  instance_metrics metrics;
};

using start_atom = caf::atom_constant<caf::atom("start")>;
using pump_atom = caf::atom_constant<caf::atom("pump")>;
using flush_atom = caf::atom_constant<caf::atom("flush")>;
using timer_atom = caf::atom_constant<caf::atom("timer")>;
/// An operator has asynchronous completions to emit (operator_logic::on_wakeup).
using wake_atom = caf::atom_constant<caf::atom("wake")>;
/// Asks a stage for a live_metrics_msg.
using live_atom = caf::atom_constant<caf::atom("live")>;
/// To a source stage: inject the barrier of checkpoint `id` (with a std::uint64_t).
using checkpoint_atom = caf::atom_constant<caf::atom("ckpt")>;
/// To every stage: checkpoint `id` (with a std::uint64_t) is complete; sinks commit.
using commit_atom = caf::atom_constant<caf::atom("commit")>;

}  // namespace tidemark::detail

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidemark::detail::data_msg)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidemark::detail::signal_msg)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidemark::detail::burst_msg)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidemark::detail::credit_msg)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidemark::detail::done_msg)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidemark::detail::copies_lost_msg)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidemark::detail::copy_dropped_msg)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidemark::detail::output_restored_msg)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidemark::detail::connect_msg)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidemark::detail::input_restored_msg)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidemark::detail::copy_caught_up_msg)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidemark::detail::failed_msg)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidemark::detail::state_written_msg)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidemark::detail::checkpointed_msg)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidemark::detail::live_metrics_msg)
