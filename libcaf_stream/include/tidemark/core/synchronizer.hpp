// Synchronizers (docs/timezones.md): plan compilation puts a gate on every input edge of every
// timezone; the gates of one timezone share a coordinator that admits one time slice at a time
// and the next only when every exit of the timezone (its sinks) has reported the slice's end as
// its watermark. Pure logic: the runtime only delivers wakeups.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tidemark/core/graph.hpp"
#include "tidemark/core/plan.hpp"
#include "tidemark/core/timezones.hpp"

namespace tidemark {

struct synchronizer_options {
  /// false turns synchronizers off (a debug option: timezones then see out-of-order input).
  bool enabled = true;
  /// Width of the time slices admitted one at a time: 1 admits one timestamp at a time.
  event_time time_slice = 1;
  /// A gate holding at least this many elements stops taking input while its timezone is busy
  /// with a slice (backpressure through the synchronizer).
  std::size_t max_buffered = 1 << 16;
};

/// The shared state of one timezone's synchronizer: gate watermarks and lowest buffered times,
/// the admitted bound, and the exits' progress. Thread-safe; gates and exits run on any thread.
class timezone_coordinator {
 public:
  timezone_coordinator(std::uint32_t gates, std::uint32_t exits, event_time time_slice);

  /// Gate `gate` is woken through `wake` when a new slice is admitted.
  void set_wake(std::uint32_t gate, std::function<void()> wake);
  /// Records a gate's input watermark and returns the admitted bound: the gate releases every
  /// element below it and then emits it as its watermark. `lowest_from(b)` gives the lowest event
  /// time the gate buffers at or above b (nullopt: none); it is called under the lock, so what the
  /// gate is about to release never counts as waiting. Wakes the other gates when the bound moved.
  event_time sync_gate(std::uint32_t gate, event_time wm,
                       const std::function<std::optional<event_time>(event_time)>& lowest_from);
  /// Records that exit `exit` has processed everything below `wm`.
  void report_exit(std::uint32_t exit, event_time wm);

  // ---- restore from a checkpoint (docs/timezones.md, "Checkpoints of a synchronizer") ----
  // The coordinator is not in the dataflow, so no checkpoint holds it: it is rebuilt from what
  // every gate and exit saved. From the first of these calls until every gate and exit has made
  // one, nothing is admitted; then the bound is the lowest bound any gate had emitted, the
  // timezone is busy while an exit is below it, and every gate is woken.

  /// Gate `gate` restored: its input watermark, the bound it had emitted and its lowest buffered
  /// time (nullopt: nothing buffered). A gate of a stage that had finished restores with
  /// end_of_time for both and nothing buffered.
  void restore_gate(std::uint32_t gate, event_time wm, event_time emitted,
                    std::optional<event_time> lowest);
  /// Exit `exit` restored with the watermark it had reported (end_of_time when its stage had
  /// finished).
  void restore_exit(std::uint32_t exit, event_time wm);
  /// A slice has been admitted and not yet finished by every exit.
  bool busy() const;

  /// Slices admitted so far (elements entered the timezone) and watermark-only steps.
  std::uint64_t slices() const;
  std::uint64_t progress_steps() const;

 private:
  bool advance();  // under the lock; true when the admitted bound moved or elements entered
  void wake_others(std::uint32_t except);
  // under the lock: marks one gate or exit restored; true when it was the last one
  bool restored(std::vector<bool>& marks, std::uint32_t index);

  mutable std::mutex mutex_;
  event_time slice_;
  std::vector<event_time> gate_wm_;
  std::vector<std::optional<event_time>> gate_lowest_;
  std::vector<std::function<void()>> wake_;
  std::vector<event_time> exit_wm_;
  event_time admitted_ = INT64_MIN;
  bool in_flight_ = false;
  std::uint64_t slices_ = 0;
  std::uint64_t steps_ = 0;
  // a restore in progress: which gates and exits have restored, and the bounds the gates emitted
  bool restoring_ = false;
  std::size_t left_to_restore_ = 0;
  std::vector<bool> gate_restored_;
  std::vector<bool> exit_restored_;
  std::vector<event_time> gate_emitted_;
};

/// A synchronizer placed by plan compilation: the gate nodes on the inputs of one timezone.
struct synchronizer_info {
  std::uint32_t timezone = 0;
  std::vector<node_id> gates;  ///< node ids in the synchronized graph
};

/// A job's graph with synchronizers in place, and what the analysis found.
struct synchronized_graph {
  logical_graph graph;                       ///< original node ids kept; gates appended
  std::vector<timezone> timezones;           ///< over the original node ids
  std::vector<synchronizer_info> synchronizers;  ///< empty when synchronizers are off
  synchronizer_options options;
};

/// Finds the timezones of a valid graph and, unless turned off, rewrites every timezone input
/// edge u -> v into u -> gate -> v (gates of nested timezones in sequence, outer first) and makes
/// the timezone's sinks report their progress. Each call creates fresh coordinators: call it once
/// per run.
synchronized_graph synchronize(const logical_graph& g, const synchronizer_options& opts = {});

/// The plan (see to_text in plan.hpp) followed by its timezones and their synchronizers.
std::string to_text(const synchronized_graph& s, const physical_plan& p);
/// The plan's DOT with timezone members filled in one colour per timezone (labelled with the
/// timezones they belong to) and synchronizer gates drawn as octagons.
std::string to_dot(const synchronized_graph& s, const physical_plan& p);

namespace ops {

/// One instance of a synchronizer gate: buffers its input by event time and releases what the
/// coordinator admitted, each release followed by the slice's end as watermark. A checkpoint
/// saves its watermarks and buffered elements (through `codec`, the guarded port's batch codec;
/// null: a checkpoint with elements buffered fails naming the timezone).
class gate_logic final : public operator_logic {
 public:
  gate_logic(std::shared_ptr<timezone_coordinator> coordinator, std::uint32_t gate,
             std::size_t max_buffered, std::string timezone_name,
             const batch_codec* codec = nullptr);

  void set_wakeup(std::function<void()> wake) override;
  void process(std::size_t input, batch_ptr in, emitter& out) override;
  void on_watermark(event_time wm, emitter& out) override;
  void on_wakeup(emitter& out) override { release(out); }
  void snapshot(state_writer& out) override;
  /// Also gives the coordinator this gate's part of its state (restore_gate).
  void restore(state_reader& in) override;
  void restore_finished(std::uint64_t id) override;
  bool pending() const override { return !buckets_.empty() || emitted_wm_ < wm_; }
  bool saturated() const override;
  void add_metrics(std::map<std::string, double>& out) const override;

 private:
  void release(emitter& out);

  std::shared_ptr<timezone_coordinator> coordinator_;
  std::uint32_t gate_;
  std::size_t max_buffered_;
  std::string timezone_name_;
  const batch_codec* codec_;
  std::map<event_time, batch_ptr> buckets_;  // buffered elements by event time
  std::size_t buffered_ = 0;
  event_time wm_ = INT64_MIN;
  event_time emitted_wm_ = INT64_MIN;
  std::uint64_t late_ = 0;
  std::size_t max_buffered_seen_ = 0;
  std::vector<std::uint32_t> targets_;
  std::vector<batch_base*> outs_;
};

/// Wraps a sink of a timezone: forwards everything and reports its watermark to the
/// coordinators of every timezone it belongs to. A checkpoint saves the watermark it reported
/// before the sink's own state.
class exit_reporter final : public operator_logic {
 public:
  exit_reporter(std::unique_ptr<operator_logic> inner,
                std::vector<std::pair<std::shared_ptr<timezone_coordinator>, std::uint32_t>> to);

  void set_wakeup(std::function<void()> wake) override { inner_->set_wakeup(std::move(wake)); }
  void process(std::size_t input, batch_ptr in, emitter& out) override;
  void on_watermark(event_time wm, emitter& out) override;
  void finish(emitter& out) override { inner_->finish(out); }
  std::int64_t timer_period_ms() const override { return inner_->timer_period_ms(); }
  void on_timer(std::int64_t now_ms, emitter& out) override { inner_->on_timer(now_ms, out); }
  void on_wakeup(emitter& out) override { inner_->on_wakeup(out); }
  bool pending() const override { return inner_->pending(); }
  bool saturated() const override { return inner_->saturated(); }
  void add_metrics(std::map<std::string, double>& out) const override { inner_->add_metrics(out); }
  void snapshot(state_writer& out) override;
  void restore(state_reader& in) override;
  void restore_finished(std::uint64_t id) override;
  void on_checkpoint_complete(std::uint64_t id) override { inner_->on_checkpoint_complete(id); }

 private:
  std::unique_ptr<operator_logic> inner_;
  std::vector<std::pair<std::shared_ptr<timezone_coordinator>, std::uint32_t>> to_;
  event_time reported_ = INT64_MIN;
};

}  // namespace ops
}  // namespace tidemark
