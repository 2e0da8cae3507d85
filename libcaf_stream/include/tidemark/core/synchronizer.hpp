// Synchronizers (docs/timezones.md): plan compilation puts a gate on every input edge of every
// timezone; the gates and exits (sinks) of one timezone report to its synchronizer, which admits
// one time slice at a time and the next only when every exit has reported the slice's end as its
// watermark. Pure logic: the runtime carries the reports and bounds as messages.
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

/// A gate's or an exit's message to the synchronizer of its timezone.
struct sync_report {
  enum class kind : std::uint8_t { gate, exit, gate_restored, exit_restored };
  kind what = kind::gate;
  std::uint32_t index = 0;  ///< the gate's or the exit's number in its timezone
  /// gate: its input watermark; exit: everything below it has passed the exit
  event_time wm = INT64_MIN;
  /// gate: the last bound it took (and emitted); `lowest` is counted from there
  event_time bound = INT64_MIN;
  /// gate: its lowest buffered event time at or above `bound` (nullopt: none)
  std::optional<event_time> lowest;
};

/// The synchronizer's message to every gate of its timezone.
struct sync_bound {
  event_time bound = INT64_MIN;  ///< release every element below it, then emit it as watermark
  bool busy = false;             ///< a slice is inside the timezone (for backpressure)
  std::uint64_t slices = 0;      ///< slices admitted so far (metrics)
  std::uint64_t steps = 0;       ///< watermark-only steps so far (metrics)
};

/// The state machine of one timezone's synchronizer (docs/timezones.md): it takes the reports of
/// the timezone's gates and exits, in the order they arrive, and admits one time slice at a time.
/// Not thread-safe: the runtime runs it in one actor (embedded) or in the cluster coordinator.
class synchronizer_logic {
 public:
  synchronizer_logic(std::uint32_t gates, std::uint32_t exits, event_time time_slice);

  /// Takes a report; true when the bound or `busy` changed: current() then goes to every gate.
  /// A report naming a gate or exit the timezone does not have throws std::out_of_range.
  bool apply(const sync_report& r);
  sync_bound current() const { return {admitted_, in_flight_, slices_, steps_}; }

 private:
  bool advance();  // true when the admitted bound moved or `busy` changed
  // Restores (docs/timezones.md, "Checkpoints of a synchronizer"): the state is rebuilt from
  // what every gate and exit saved; from the first restore report until every gate and exit
  // has sent one nothing is admitted. True when it was the last one.
  bool restored(std::vector<bool>& marks, std::uint32_t index);

  event_time slice_;
  std::vector<event_time> gate_wm_;
  std::vector<event_time> gate_known_;  // the bound each gate's last report counts from
  std::vector<std::optional<event_time>> gate_lowest_;
  std::vector<event_time> exit_wm_;
  event_time admitted_ = INT64_MIN;
  bool in_flight_ = false;
  std::uint64_t slices_ = 0;
  std::uint64_t steps_ = 0;
  bool restoring_ = false;
  std::size_t left_to_restore_ = 0;
  std::vector<bool> gate_restored_;
  std::vector<bool> exit_restored_;
};

/// The synchronizer of one timezone as the gates and exits of one process see it: their reports
/// leave through the sender the runtime sets (a message to the synchronizer actor, or a control
/// frame to the cluster coordinator), and the bounds it admits come back through deliver(),
/// which keeps the latest and wakes the local gates. Thread-safe.
class timezone_link {
 public:
  using sender = std::function<void(const sync_report&)>;

  timezone_link(std::uint32_t timezone, std::uint32_t gates, std::uint32_t exits,
                event_time time_slice);

  std::uint32_t timezone() const { return timezone_; }
  std::uint32_t gates() const { return gates_; }
  std::uint32_t exits() const { return exits_; }
  event_time time_slice() const { return slice_; }

  /// Where reports go; set before the gates and exits run (null: they are dropped).
  void set_sender(sender s);
  void send(const sync_report& r) const;
  /// Gate `gate` of this process is woken through `wake` when a bound arrives.
  void set_wake(std::uint32_t gate, std::function<void()> wake);
  /// A bound from the synchronizer (from any thread, in the order it sent them).
  void deliver(const sync_bound& b);
  sync_bound latest() const;

 private:
  std::uint32_t timezone_, gates_, exits_;
  event_time slice_;
  mutable std::mutex mutex_;
  sender send_;
  std::vector<std::function<void()>> wake_;
  sync_bound latest_;
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
  /// One per timezone (by timezone id) when synchronizers are on: the runtime connects each to
  /// its synchronizer before the gates and exits run.
  std::vector<std::shared_ptr<timezone_link>> links;
  synchronizer_options options;
};

/// Finds the timezones of a valid graph and, unless turned off, rewrites every timezone input
/// edge u -> v into u -> gate -> v (gates of nested timezones in sequence, outer first) and makes
/// the timezone's sinks report their progress. Each call creates fresh links: call it once per
/// run (per deployment on a cluster).
synchronized_graph synchronize(const logical_graph& g, const synchronizer_options& opts = {});

/// The plan (see to_text in plan.hpp) followed by its timezones and their synchronizers.
std::string to_text(const synchronized_graph& s, const physical_plan& p);
/// The plan's DOT with timezone members filled in one colour per timezone (labelled with the
/// timezones they belong to) and synchronizer gates drawn as octagons.
std::string to_dot(const synchronized_graph& s, const physical_plan& p);

namespace ops {

/// One instance of a synchronizer gate: buffers its input by event time, reports to the
/// synchronizer and releases what it admitted, each release followed by the slice's end as
/// watermark. A checkpoint
/// saves its watermarks and buffered elements (through `codec`, the guarded port's batch codec;
/// null: a checkpoint with elements buffered fails naming the timezone).
class gate_logic final : public operator_logic {
 public:
  /// `feedback`: the gate guards a loop's feedback edge (docs/timezones.md, "Loops at run time").
  gate_logic(std::shared_ptr<timezone_link> link, std::uint32_t gate,
             std::size_t max_buffered, std::string timezone_name,
             const batch_codec* codec = nullptr, bool feedback = false);

  void set_wakeup(std::function<void()> wake) override;
  void process(std::size_t input, batch_ptr in, emitter& out) override;
  void on_watermark(event_time wm, emitter& out) override;
  void on_wakeup(emitter& out) override { release(out); }
  void snapshot(state_writer& out) override;
  /// Also sends the synchronizer this gate's part of its state (a gate_restored report).
  void restore(state_reader& in) override;
  void restore_finished(std::uint64_t id) override;
  bool pending() const override { return !buckets_.empty() || emitted_wm_ < wm_; }
  /// Only the elements count: a watermark still to emit is no work in a loop.
  event_time lowest_pending() const override {
    return buckets_.empty() ? end_of_time : buckets_.begin()->first;
  }
  bool saturated() const override;
  void add_metrics(std::map<std::string, double>& out) const override;

 private:
  void release(emitter& out);
  void report(sync_report::kind what);

  std::shared_ptr<timezone_link> link_;
  std::uint32_t gate_;
  std::size_t max_buffered_;
  std::string timezone_name_;
  const batch_codec* codec_;
  bool feedback_;
  std::map<event_time, batch_ptr> buckets_;  // buffered elements by event time
  std::size_t buffered_ = 0;
  event_time wm_ = INT64_MIN;
  event_time emitted_wm_ = INT64_MIN;
  event_time taken_ = INT64_MIN;  // the latest bound taken (emitted too unless feedback_)
  std::uint64_t late_ = 0;
  std::size_t max_buffered_seen_ = 0;
  sync_bound seen_;               // the latest bound taken (its counters are the metrics)
  std::optional<sync_report> sent_;  // the last report, not sent again unchanged
  std::vector<std::uint32_t> targets_;
  std::vector<batch_base*> outs_;
};

/// Wraps a sink of a timezone: forwards everything and reports its watermark to the
/// synchronizers of every timezone it belongs to. A checkpoint saves the watermark it reported
/// before the sink's own state.
class exit_reporter final : public operator_logic {
 public:
  exit_reporter(std::unique_ptr<operator_logic> inner,
                std::vector<std::pair<std::shared_ptr<timezone_link>, std::uint32_t>> to);

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
  void report(sync_report::kind what) const;

  std::vector<std::pair<std::shared_ptr<timezone_link>, std::uint32_t>> to_;
  event_time reported_ = INT64_MIN;
};

}  // namespace ops
}  // namespace tidemark
