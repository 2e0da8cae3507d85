// The contract between operators and the runtime. An operator instance transforms whole
// batches; the runtime owns channels, credit, batching and threads. Pure logic: no actors here,
// so every operator can be tested by calling it directly.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "tidemark/core/batch.hpp"

namespace tidemark {

/// What an operator does when its user function throws on one element.
enum class error_policy {
  fail,  ///< fail the job with the operator's name and the exception's message (default)
  skip,  ///< drop the element, count it in the operator's `skipped` metric, go on
};

/// Where an operator's output goes: the next operators of its stage, or the channels.
/// An operator has one or more output ports: port 0 is its main output, further ports carry side
/// outputs (late events of a window, records a parser rejected). Signals (watermarks, idleness)
/// hold for every port. Emitting on a port nobody reads is allowed and drops the batch.
class emitter {
 public:
  virtual ~emitter() = default;
  /// Emits on the main output (port 0).
  void emit(batch_ptr b) { emit_on(0, std::move(b)); }
  /// Emits on output `port` of the operator.
  void emit(std::uint32_t port, batch_ptr b) { emit_on(port, std::move(b)); }
  /// Announces that no element with an event time below `wm` follows on any port.
  virtual void emit_watermark(event_time wm) = 0;
  /// Marks this output idle (true) or active again (false). Consumers leave idle inputs out of the
  /// minimum watermark, so a quiet partition does not hold the job back.
  virtual void emit_idle(bool idle) = 0;
  /// Asks the runtime to send partly filled output batches now instead of after the linger time
  /// (a synchronizer does so after each time slice it admits).
  virtual void flush() {}

 protected:
  /// What implementations provide: deliver `b` (not null) emitted on `port`.
  virtual void emit_on(std::uint32_t port, batch_ptr b) = 0;
};

/// Watermark of a stream that has ended or that carries no event time: nothing can follow it.
inline constexpr event_time end_of_time = INT64_MAX;
/// Watermark of an input before its first watermark.
inline constexpr event_time start_of_time = INT64_MIN;

class block_storage;
class state_writer;
class state_reader;

/// A checkpoint's state of one operator, captured at the barrier and written later, possibly on
/// another thread (operator_logic::capture): it writes into the writer exactly what snapshot()
/// would have written at the capture, whatever the operator did since. It owns what it needs.
using state_capture = std::function<void(state_writer& out)>;

/// Which instance of which operator a logic object serves.
struct instance_info {
  std::string name;
  std::uint32_t index = 0;
  std::uint32_t parallelism = 1;
  std::size_t batch_size = 4096;
  /// The node's storage service for tiered window state (the runtime supplies it; may be null).
  std::shared_ptr<block_storage> storage;
};

/// One instance of a (non-source) operator.
class operator_logic {
 public:
  virtual ~operator_logic() = default;
  /// Processes one batch that arrived on input `input` (0 unless the operator has several).
  virtual void process(std::size_t input, batch_ptr in, emitter& out) = 0;
  /// The minimum watermark over all inputs advanced to `wm`. The default forwards it.
  virtual void on_watermark(event_time wm, emitter& out) { out.emit_watermark(wm); }
  /// Every input has ended; emit what remains.
  virtual void finish(emitter& out) {}

  /// Processing-time timer: when > 0, the runtime calls on_timer at least every this many ms
  /// (more often when a fused neighbour asks for a shorter period: compare `now_ms` with your own
  /// schedule).
  virtual std::int64_t timer_period_ms() const { return 0; }
  /// `now_ms` is the wall-clock time in milliseconds since the epoch.
  virtual void on_timer(std::int64_t now_ms, emitter& out) {}

  /// Adds operator-specific metrics (late events, memory by tier, ...) to the instance's report.
  virtual void add_metrics(std::map<std::string, double>& out) const {}

  // ---- asynchronous completion (async.hpp, synchronizer.hpp) ----

  /// Called by the runtime before any other call. `wake`, called from any thread, makes the
  /// runtime call on_wakeup soon on the operator's own thread.
  virtual void set_wakeup(std::function<void()> wake) {}
  /// Emit what completed since the last call (async results, admitted time slices).
  virtual void on_wakeup(emitter& out) {}
  /// Work accepted but not yet emitted. At the end of the input the runtime waits for it before
  /// it finishes the next operator of the chain and ends the outputs.
  virtual bool pending() const { return false; }
  /// The lowest event time of the work accepted but not yet emitted (end_of_time: none). A loop
  /// is quiet below a time only while no operator in it holds work below it (docs/timezones.md,
  /// "Loops at run time"). By default pending work may be of any time.
  virtual event_time lowest_pending() const { return pending() ? start_of_time : end_of_time; }
  /// The operator cannot take more input now: the runtime stops feeding the chain (backpressure
  /// reaches the senders) until a wakeup.
  virtual bool saturated() const { return false; }

  // ---- checkpoints (tidemark/core/state.hpp, docs/fault-tolerance.md) ----

  /// Writes everything this instance needs to continue exactly where it is, for checkpoint
  /// `out.checkpoint()`. Called on the operator's thread between two calls of the other hooks,
  /// when the checkpoint's barrier has arrived on every input; the default writes nothing, which
  /// is right for stateless operators only. A sink with external effects stages here what it
  /// produced since the last checkpoint and commits it in on_checkpoint_complete.
  virtual void snapshot(state_writer& out) {}
  /// Captures the state snapshot() would write for checkpoint `checkpoint`, at the same moment,
  /// so that the runtime can write it on another thread while the operator goes on (asynchronous
  /// snapshots). Override it when the state is large and can be captured in less time than it
  /// takes to write (copy on write); the default runs snapshot() now and keeps its bytes, which is
  /// right for everything else, including sinks that stage their output in snapshot().
  virtual state_capture capture(std::uint64_t checkpoint);
  /// Loads what snapshot wrote, before any other call but set_wakeup. `in.checkpoint()` is
  /// always a completed checkpoint, so a sink commits what that snapshot staged (idempotently:
  /// it may have been committed before the crash).
  virtual void restore(state_reader& in) {}
  /// Instead of restore, when the stage had ended before checkpoint `id`: everything the operator
  /// emitted, its end included, is in its receivers' state, and only on_wakeup and
  /// on_checkpoint_complete follow.
  /// For an operator that shares state outside the dataflow (a synchronizer's coordinator).
  virtual void restore_finished(std::uint64_t id) {}
  /// Checkpoint `id` is complete (every piece is durable): commit what was staged for it.
  virtual void on_checkpoint_complete(std::uint64_t id) {}

  error_policy on_error = error_policy::fail;
  /// Elements dropped under error_policy::skip.
  std::uint64_t skipped = 0;

 protected:
  /// Runs `f` for one element under the operator's error policy.
  template <class F>
  bool guarded(F&& f) {
    try {
      f();
      return true;
    } catch (...) {
      if (on_error == error_policy::fail) throw;
      ++skipped;
      return false;
    }
  }
};

/// The first operator of a job: produces batches until it is exhausted.
class source_logic {
 public:
  virtual ~source_logic() = default;
  /// Called once before the first pull; throws when the source cannot start (missing file).
  virtual void open() {}
  /// Emits at most `max` elements; returns false once the source is exhausted.
  virtual bool pull(std::size_t max, emitter& out) = 0;
  /// Asked after a pull that emitted nothing: how long until the source has more, when it knows
  /// (a paced source knows when its next element is due). The stage pulls again after that long
  /// and holds no thread meanwhile, where a source sleeping in pull() would take a scheduler
  /// thread from every other stage. Zero, the default, pulls again once the stage's mailbox is
  /// worked off.
  virtual std::chrono::nanoseconds idle_for() const { return std::chrono::nanoseconds::zero(); }

  // ---- checkpoints: see operator_logic ----

  /// Whether restore() makes the source emit again exactly what followed the snapshot. A job
  /// with a source that cannot replay runs at-least-once at best, and says so when it starts.
  virtual bool replayable() const { return false; }
  /// Writes the source's position (between two pulls).
  virtual void snapshot(state_writer& out) {}
  /// Moves the source back to the position snapshot wrote; called after open().
  virtual void restore(state_reader& in) {}
  virtual void on_checkpoint_complete(std::uint64_t id) {}
};

/// A job that could not be built or that failed while running. The message names the operator.
class job_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tidemark
