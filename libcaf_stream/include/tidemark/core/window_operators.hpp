// The logic of window operators: aligned event-time windows (tumbling, sliding), per-key session
// windows and count windows, over an incremental aggregate or a full-window process function.
// Keyed window state lives in open-addressing tables keyed by the hash key_by computed; results
// carry (window, key, revision, final) on the main output; events that no window takes (too late
// for all their windows, or in a gap between sliding windows) leave on the late port.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tidemark/core/detail/flat_hash_map.hpp"
#include "tidemark/core/lateness.hpp"
#include "tidemark/core/operator.hpp"
#include "tidemark/core/state.hpp"
#include "tidemark/core/window_store.hpp"
#include "tidemark/core/windows.hpp"

namespace tidemark {

/// The output port of a window operator that carries the events no window took (late() reads
/// it); results leave on the main port 0.
inline constexpr std::uint32_t late_port = 1;

/// Lateness and triggers of one window operator.
struct window_config {
  event_time allowed_lateness = 0;
  /// When set, new windows get the predictive bound instead of `allowed_lateness`.
  std::optional<lateness::predictive> predictive_lateness;
  trigger early = trigger::on_watermark();
  late_trigger late = late_trigger::every_event();
  /// The on-time results a watermark completes leave before the late re-executions it also
  /// triggers (final firings at the end of the allowed lateness), so reading a past window back
  /// from disk never delays the current one (the Aion paper's priority of current windows).
  /// False fires in window order. Tumbling and sliding windows; sessions fire in key order.
  bool on_time_first = true;
};

namespace ops {

/// Incremental aggregation: the pane's payload is the accumulator.
template <class T, class K, class Agg>
struct aggregate_function {
  using payload = typename Agg::template acc_type<T>;
  using value_type = std::decay_t<decltype(std::declval<const Agg&>().result(std::declval<const payload&>()))>;

  Agg agg;

  payload make() const { return agg.template init<T>(); }
  void add(payload& p, const window_id&, std::uint64_t, const K&, const T& x) { agg.add(p, x); }
  value_type result(payload& p, const window_id&, const window_id&, std::uint64_t, const K&) {
    return agg.result(p);
  }
  void merge(payload& into, payload& from, const window_id&, const window_id&, std::uint64_t,
             const K&) {
    agg.merge(into, from);
  }
  void expire(const window_id&, std::uint64_t, const K&) {}
  void purge(const window_id&, std::uint64_t, const K&) {}
  void expect_fire(const window_id&, std::uint64_t, const K&, std::int64_t) {}
  void on_watermark(event_time) {}
  std::int64_t tick_ms() const { return 0; }
  void tick() {}
  bool incomplete() const { return false; }
  std::uint64_t memory_bytes() const { return 0; }
  void add_metrics(std::map<std::string, double>&) const {}
  /// Checkpoints: the accumulator is the pane's whole state (a job_error names its type when it
  /// has no codec); the function keeps nothing else.
  void snapshot_payload(state_writer& out, const payload& p) const { out.write(p); }
  void restore_payload(state_reader& in, payload& p) const { in.read(p); }
  void snapshot(state_writer&) {}
  state_capture capture(std::uint64_t) { return nullptr; }
  void restore(state_reader&) {}
};

/// Full-window function `f(const K&, const window_id&, window_events<T>&) -> R`: events are kept
/// in a window_store and iterated when the window fires.
template <class T, class K, class F>
struct process_function {
  struct payload {};
  using value_type =
      std::decay_t<std::invoke_result_t<F&, const K&, const window_id&, window_events<T>&>>;

  F f;
  std::unique_ptr<window_store<K, T>> store;

  payload make() const { return {}; }
  void add(payload&, const window_id& w, std::uint64_t h, const K& k, const T& x) {
    store->append(w, h, k, x);
  }
  /// `w` is the window as reported, `state` the id its events are stored under.
  value_type result(payload&, const window_id& w, const window_id& state, std::uint64_t h, const K& k) {
    window_events<T> events{store->events(state, h, k)};
    incomplete_ = false;
    auto r = f(k, w, events);
    incomplete_ = !events.complete();
    return r;
  }
  void merge(payload&, payload&, const window_id& from, const window_id& into, std::uint64_t h,
             const K& k) {
    store->merge(from, into, h, k);
  }
  void expire(const window_id& w, std::uint64_t h, const K& k) { store->expire(w, h, k); }
  void purge(const window_id& w, std::uint64_t h, const K& k) { store->purge(w, h, k); }
  void expect_fire(const window_id& w, std::uint64_t h, const K& k, std::int64_t delay_ms) {
    store->expect_fire(w, h, k, delay_ms);
  }
  void on_watermark(event_time wm) { store->on_watermark(wm); }
  std::int64_t tick_ms() const { return store->tick_ms(); }
  void tick() { store->tick(); }
  /// Whether the last result missed events the store could not read.
  bool incomplete() const { return incomplete_; }
  /// Checkpoints: panes hold nothing; the events are in the store.
  void snapshot_payload(state_writer&, const payload&) const {}
  void restore_payload(state_reader&, payload&) const {}
  void snapshot(state_writer& out) { store->snapshot(out); }
  state_capture capture(std::uint64_t checkpoint) { return store->capture(checkpoint); }
  void restore(state_reader& in) { store->restore(in); }
  std::uint64_t memory_bytes() const { return store->memory_bytes(); }
  void add_metrics(std::map<std::string, double>& out) const {
    out["window_store_events"] = static_cast<double>(store->memory_events());
    store->add_metrics(out);
  }

  bool incomplete_ = false;
};

/// What every window operator shares: result emission with revisions, triggers, lateness
/// bookkeeping, the late output (port late_port) and metrics. Fn is aggregate_function or
/// process_function.
template <class T, class K, class KeyFn, class Fn>
class window_logic_base : public operator_logic {
 public:
  using value_type = typename Fn::value_type;
  using result_type = window_result<K, value_type>;

  void add_metrics(std::map<std::string, double>& out) const override {
    out["watermark"] = static_cast<double>(wm_);
    out["watermark_lag"] =
        wm_ == start_of_time || max_seen_ < wm_ ? 0.0 : static_cast<double>(max_seen_ - wm_);
    out["late_events_accepted"] = static_cast<double>(late_accepted_);
    out["late_events_dropped"] = static_cast<double>(late_dropped_);
    out["gap_events_dropped"] = static_cast<double>(gap_dropped_);
    out["window_results"] = static_cast<double>(results_);
    out["window_panes"] = static_cast<double>(panes_);
    out["window_state_bytes"] = static_cast<double>(table_bytes() + fn_.memory_bytes());
    out["on_time_releases"] = static_cast<double>(on_time_releases_);
    out["on_time_delay_ms_mean"] =
        on_time_releases_ ? on_time_delay_ms_sum_ / static_cast<double>(on_time_releases_) : 0.0;
    out["on_time_delay_ms_max"] = on_time_delay_ms_max_;
    out["allowed_lateness"] = static_cast<double>(current_lateness_);
    out["late_events_observed"] = static_cast<double>(estimator_.behind_watermark().count());
    out["lateness_after_end_p50"] = estimator_.after_end().quantile(0.5);
    out["lateness_after_end_p99"] = estimator_.after_end().quantile(0.99);
    out["lateness_after_end_windows_p99"] = estimator_.after_end_windows().quantile(0.99);
    out["lateness_behind_watermark_p99"] = estimator_.behind_watermark().quantile(0.99);
    fn_.add_metrics(out);
  }

  /// Everything the instance continues from: watermark, counters, the lateness estimator and
  /// bound, cached late schedules, every open window and pane with its fire state, and the
  /// function's state (the events of a process function's store). Output batches are always
  /// flushed when a hook returns, so none is pending here.
  void snapshot(state_writer& out) override {
    snapshot_operator(out);
    fn_.snapshot(out);
  }

  /// The operator's own state (O(windows)) is written at the capture; the function's (the events
  /// of a process function) is captured by its window store.
  state_capture capture(std::uint64_t checkpoint) override {
    std::vector<std::uint8_t> head;
    state_writer out{checkpoint, head};
    snapshot_operator(out);
    return captured_bytes(std::move(head), fn_.capture(checkpoint));
  }

  void restore(state_reader& in) override {
    if (in.read<std::uint32_t>() != state_format)
      throw job_error("window operator '" + name_ + "': checkpoint holds another state format");
    if (in.read<std::uint8_t>() != kind_tag())
      throw job_error("window operator '" + name_ + "': checkpoint holds another kind of window");
    in.read(wm_);
    in.read(max_seen_);
    in.read(now_ms_);
    in.read(late_accepted_);
    in.read(late_dropped_);
    in.read(gap_dropped_);
    in.read(results_);
    in.read(panes_);
    in.read(skipped);
    in.read(current_lateness_);
    in.read(purged_end_);
    in.read(first_wm_);
    estimator_.restore(in);
    bound_.restore(in);
    schedules_.restore(in);
    restore_windows(in);
    fn_.restore(in);
  }

  std::int64_t timer_period_ms() const override {
    std::int64_t p = 0;
    for (auto q : {cfg_.late.policy().tick_ms(),
                   cfg_.early.k == trigger::kind::processing_time ? cfg_.early.period_ms : 0,
                   fn_.tick_ms()})
      if (q > 0) p = p > 0 ? std::min(p, q) : q;
    return p;
  }

 protected:
  struct pane {
    typename Fn::payload data;
    fire_state state;
  };

  window_logic_base(KeyFn key, Fn fn, window_config cfg, std::string name, bool timed)
      : key_(std::move(key)), fn_(std::move(fn)), cfg_(std::move(cfg)), name_(std::move(name)),
        timed_(timed),
        early_count_(cfg_.early.k == trigger::kind::count ? cfg_.early.count : UINT64_MAX),
        bound_(cfg_.predictive_lateness ? lateness{*cfg_.predictive_lateness}
                                        : lateness{lateness::fixed{cfg_.allowed_lateness}}),
        current_lateness_(bound_.current(estimator_, 0)) {}

  /// The batch's elements with their columns, after checking that window() can use them.
  batch<T>& input(batch_ptr& in) {
    auto& b = static_cast<batch<T>&>(*in);
    if (timed_ && b.times.empty() && !b.values.empty())
      throw job_error("window operator '" + name_ +
                      "' received elements without event time: call assign_timestamps(...) "
                      "before key_by(...).window(...)");
    if (b.hashes.empty() && !b.values.empty())
      throw job_error("window operator '" + name_ + "' received elements without key hashes: "
                      "windows need a keyed stream (key_by(...).window(...))");
    return b;
  }

  pane make_pane() {
    ++panes_;
    return pane{fn_.make(), {}};
  }

  void forget_pane() { --panes_; }

  /// Bytes of the operator's own window tables (not the window store's).
  virtual std::uint64_t table_bytes() const = 0;

  /// Version of what snapshot writes; restore refuses other versions.
  static constexpr std::uint32_t state_format = 1;
  /// Tells the window kinds apart in a checkpoint (aligned 1, session 2, count 3).
  virtual std::uint8_t kind_tag() const = 0;
  /// Writes / reads the windows and panes of the concrete window kind.
  virtual void snapshot_windows(state_writer& out) const = 0;
  virtual void restore_windows(state_reader& in) = 0;

  void snapshot_pane(state_writer& out, const pane& p) const {
    fn_.snapshot_payload(out, p.data);
    out.write(p.state);
  }
  void restore_pane(state_reader& in, pane& p) {
    fn_.restore_payload(in, p.data);
    in.read(p.state);
  }

  /// Everything but the function's state, which snapshot writes last.
  void snapshot_operator(state_writer& out) const {
    out.write(state_format);
    out.write(kind_tag());
    out.write(wm_);
    out.write(max_seen_);
    out.write(now_ms_);
    out.write(late_accepted_);
    out.write(late_dropped_);
    out.write(gap_dropped_);
    out.write(results_);
    out.write(panes_);
    out.write(skipped);
    out.write(current_lateness_);
    out.write(purged_end_);
    out.write(first_wm_);
    estimator_.snapshot(out);
    bound_.snapshot(out);
    schedules_.snapshot(out);
    snapshot_windows(out);
  }

  /// Fires and expires what the watermark `wm` completes (time-based windows only); may send
  /// the on-time results early through release_on_time(out).
  virtual void advance(event_time /*wm*/, emitter& /*out*/) {}

  void on_watermark(event_time wm, emitter& out) override {
    if (first_wm_ == start_of_time) first_wm_ = wm;
    watermark_at_ = std::chrono::steady_clock::now();
    advance(wm, out);
    fn_.on_watermark(wm);
    release_on_time(out);
    flush(out);
    out.emit_watermark(wm);
  }

  /// Sends the on-time results fired since the watermark arrived now, and records how long they
  /// waited for it (on_time_delay_ms_*: the time late re-executions held them back).
  void release_on_time(emitter& out) {
    if (!on_time_waiting_) return;
    on_time_waiting_ = false;
    flush(out);
    out.flush();
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - watermark_at_)
            .count();
    ++on_time_releases_;
    on_time_delay_ms_sum_ += ms;
    on_time_delay_ms_max_ = std::max(on_time_delay_ms_max_, ms);
  }

  /// `state` names the pane in the function's storage; `w` is the window results report (they
  /// differ only for sessions that grew by merging).
  void emit(const window_id& w, const window_id& state, std::uint64_t h, const K& k, pane& p,
            pane_timing timing, bool final) {
    guarded([&] {
      result_type r{w, k, p.state.revision, final, timing, fn_.result(p.data, w, state, h, k)};
      r.incomplete = fn_.incomplete();
      results_out_->values.push_back(std::move(r));
      if (timed_) results_out_->times.push_back(w.end - 1);
      ++results_;
    });
    ++p.state.revision;
    p.state.pending = 0;
    p.state.last_fire_ms = now_ms_;
  }

  /// Sends an event that no window takes to the late output: `in_gap` when no window contains
  /// its time (sliding windows with slide > size), otherwise it is too late for all of them.
  void drop_event(T&& x, event_time t, bool in_gap) {
    ++(in_gap ? gap_dropped_ : late_dropped_);
    late_out_->values.push_back(std::move(x));
    late_out_->times.push_back(t);
  }

  /// add() for a window that has not passed its end.
  void add_on_time(const window_id& w, std::uint64_t h, const K& k, pane& p, const T& x) {
    fn_.add(p.data, w, h, k, x);
    if (++p.state.pending >= early_count_) emit(w, w, h, k, p, pane_timing::early, false);
  }

  /// Adds x to pane p of window w (stored under `state`); `expired` says whether w already
  /// passed its end.
  void add(const window_id& w, const window_id& state, std::uint64_t h, const K& k, pane& p,
           const T& x, bool expired) {
    fn_.add(p.data, state, h, k, x);
    ++p.state.pending;
    if (expired) {
      // Tell the store when the window will re-fire so it can pre-stage (0: soon or unknown).
      const auto next = cfg_.late.policy().next_fire_ms(p.state);
      fn_.expect_fire(state, h, k, next ? std::max<std::int64_t>(0, *next - now_ms_) : 0);
      if (cfg_.late.policy().on_late_event(p.state, now_ms_))
        emit(w, state, h, k, p, pane_timing::late, false);
    } else if (p.state.pending >= early_count_) {
      emit(w, state, h, k, p, pane_timing::early, false);
    }
  }

  /// Pane p's window (allowed lateness `lateness`) passed its end without being purged: it now
  /// waits for late events.
  void expire(const window_id& state, std::uint64_t h, const K& k, pane& p, event_time lateness) {
    p.state.expired_ms = now_ms_;
    cfg_.late.policy().on_expire(p.state, expiry_context{now_ms_, lateness, estimator_, schedules_});
    fn_.expire(state, h, k);
  }

  /// The watermark reached the end of window w (expired says whether it did before): fires on
  /// time, or finally when the allowed lateness also ended. Returns true when the pane is done.
  bool fire_due(const window_id& w, const window_id& state, std::uint64_t h, const K& k, pane& p,
                bool& expired, event_time lateness) {
    const bool done = purge_time(w, lateness) <= wm_;
    if (!expired) {
      expired = true;
      emit(w, state, h, k, p, pane_timing::on_time, done);
      on_time_waiting_ = true;
      if (!done) expire(state, h, k, p, lateness);
    } else if (done) {
      emit(w, state, h, k, p, pane_timing::late, true);
    }
    if (done) {
      fn_.purge(state, h, k);
      forget_pane();
      purged_end_ = std::max(purged_end_, w.end);
    }
    return done;
  }

  /// Timer tick for one pane: early processing-time results, or late re-fires. Late policies
  /// see every tick (planned times pass even when nothing is pending); results need news.
  void tick(const window_id& w, const window_id& state, std::uint64_t h, const K& k, pane& p,
            bool expired) {
    const bool due = expired ? cfg_.late.policy().on_tick(p.state, now_ms_)
                             : cfg_.early.k == trigger::kind::processing_time &&
                                   now_ms_ - p.state.last_fire_ms >= cfg_.early.period_ms;
    if (due && p.state.pending > 0)
      emit(w, state, h, k, p, expired ? pane_timing::late : pane_timing::early, false);
  }

  static event_time purge_time(const window_id& w, event_time lateness) noexcept {
    return w.end > end_of_time - lateness ? end_of_time : w.end + lateness;
  }

  /// The allowed lateness for a window created now: fixed, or the predictive bound.
  event_time new_window_lateness() {
    current_lateness_ = bound_.current(estimator_, first_wm_ == start_of_time ? 0 : wm_ - first_wm_);
    return current_lateness_;
  }

  /// Whether a late event may create window w with allowed lateness `lateness`: not when w is past
  /// it, nor when w ends no later than a purged window (windows never reopen, even when a
  /// predictive bound grew since).
  bool may_open(const window_id& w, event_time lateness) const noexcept {
    return purge_time(w, lateness) > wm_ && w.end > purged_end_;
  }

  /// An event at t arrived behind the watermark; `first` is its earliest window.
  void observe_late(event_time t, const window_id& first) {
    estimator_.observe(wm_ - t, wm_ - first.end, first.end - first.start);
  }

  /// Start of a timer tick: the operator's processing time, and the store's tick.
  void start_tick(std::int64_t now_ms) {
    now_ms_ = now_ms;
    fn_.tick();
  }

  void flush(emitter& out) {
    if (!results_out_->values.empty()) {
      out.emit(std::move(results_out_));
      results_out_ = std::make_unique<batch<result_type>>();
    }
    if (!late_out_->values.empty()) {
      out.emit(late_port, std::move(late_out_));
      late_out_ = std::make_unique<batch<T>>();
    }
  }

  KeyFn key_;
  Fn fn_;
  window_config cfg_;
  std::string name_;
  bool timed_;
  /// Elements that make an early result (the count trigger); no count trigger: never.
  std::uint64_t early_count_;
  event_time wm_ = start_of_time;
  event_time max_seen_ = start_of_time;
  std::int64_t now_ms_ = 0;
  std::uint64_t late_accepted_ = 0;
  std::uint64_t late_dropped_ = 0;
  std::uint64_t gap_dropped_ = 0;
  std::uint64_t results_ = 0;
  std::uint64_t panes_ = 0;
  lateness_estimator estimator_;
  lateness_bound bound_;
  event_time current_lateness_;
  late_schedule_cache schedules_;
  event_time purged_end_ = start_of_time;  // latest end of a purged window
  event_time first_wm_ = start_of_time;    // the first watermark: lateness is observed since
  // on-time result delay: when the watermark arrived, whether its on-time results wait to be sent
  std::chrono::steady_clock::time_point watermark_at_;
  bool on_time_waiting_ = false;
  std::uint64_t on_time_releases_ = 0;
  double on_time_delay_ms_sum_ = 0;
  double on_time_delay_ms_max_ = 0;
  std::unique_ptr<batch<result_type>> results_out_ = std::make_unique<batch<result_type>>();
  std::unique_ptr<batch<T>> late_out_ = std::make_unique<batch<T>>();
};

/// Tumbling and sliding windows: the same windows for every key, ordered by start (all windows
/// of one operator have the same size, so also by end).
template <class T, class K, class KeyFn, class Fn, class Assigner>
class aligned_window_logic final : public window_logic_base<T, K, KeyFn, Fn> {
  using base = window_logic_base<T, K, KeyFn, Fn>;
  using pane = typename base::pane;

 public:
  aligned_window_logic(Assigner a, KeyFn key, Fn fn, window_config cfg, std::string name)
      : base(std::move(key), std::move(fn), std::move(cfg), std::move(name), true),
        assigner_(std::move(a)) {}

  void process(std::size_t, batch_ptr in, emitter& out) override {
    auto& b = this->input(in);
    const std::size_t n = b.values.size();
    const event_time* times = b.times.data();
    const std::uint64_t* hashes = b.hashes.data();
    T* xs = b.values.data();
    event_time high = this->max_seen_;
    for (std::size_t i = 0; i < n; ++i) {
      const auto t = times[i];
      const auto h = hashes[i];
      high = std::max(high, t);
      this->guarded([&] {
        const K k(this->key_(xs[i]));
        if constexpr (std::is_same_v<Assigner, tumbling>) {
          // Consecutive events mostly share a window: skip the assigner's division.
          if (t >= on_time_from_ && t < on_time_to_) {
            auto [p, fresh] = last_->panes.find_or_add(h, k);
            if (fresh) p = this->make_pane();
            this->add_on_time(last_->w, h, k, p, xs[i]);
            return;
          }
        }
        if (t >= this->wm_) {  // no window of t has passed its end
          bool in_gap = true;
          assigner_.assign(t, [&](const window_id& w) {
            in_gap = false;
            this->add(w, w, h, k, pane_of(entry(w), h, k), xs[i], false);
          });
          if (in_gap) this->drop_event(std::move(xs[i]), t, true);
        } else {
          add_late(xs[i], t, h, k);
        }
      });
    }
    this->max_seen_ = high;
    this->flush(out);
  }

  void on_timer(std::int64_t now_ms, emitter& out) override {
    this->start_tick(now_ms);
    for (auto& entry : windows_) {
      auto& e = entry.second;  // not a structured binding: clang 14 cannot capture those
      e.panes.for_each_hashed(
          [&](std::uint64_t h, const K& k, pane& p) { this->tick(e.w, e.w, h, k, p, e.expired); });
    }
    this->flush(out);
  }

  void finish(emitter& out) override {
    this->watermark_at_ = std::chrono::steady_clock::now();
    advance(end_of_time, out);
    this->release_on_time(out);
    this->flush(out);
  }

 private:
  struct window_entry {
    window_id w;
    bool expired = false;  // the watermark passed w.end
    event_time lateness = 0;  // allowed lateness, fixed when the window was created
    detail::flat_hash_map<K, pane> panes;
  };

  window_entry& entry(const window_id& w) {
    if (last_ && last_->w.start == w.start) return *last_;
    auto [it, inserted] = windows_.try_emplace(w.start);
    if (inserted) {
      it->second.panes = std::move(spare_);  // reuses the last purged window's slots
      it->second.w = w;
      it->second.expired = w.end <= this->wm_;
      it->second.lateness = this->new_window_lateness();
    }
    set_last(&it->second);
    return *last_;
  }

  /// The window the last event went to; events in [on_time_from_, on_time_to_) go to it on time.
  void set_last(window_entry* e) {
    last_ = e;
    if (!e || e->expired) {
      on_time_from_ = on_time_to_ = 0;
    } else {
      on_time_from_ = std::max(e->w.start, this->wm_);
      on_time_to_ = e->w.end;
    }
  }

  pane& pane_of(window_entry& e, std::uint64_t h, const K& k) {
    bool created = false;
    auto& p = e.panes.find_or_insert(h, k, [&] {
      created = true;
      return this->make_pane();
    });
    if (created && e.expired) this->expire(e.w, h, k, p, e.lateness);  // a window born late
    return p;
  }

  void add_late(T& x, event_time t, std::uint64_t h, const K& k) {
    bool accepted = false;
    bool late = false;
    bool first = true;
    assigner_.assign(t, [&](const window_id& w) {
      if (first) this->observe_late(t, w);
      first = false;
      auto it = windows_.find(w.start);
      if (it != windows_.end() ? this->purge_time(w, it->second.lateness) <= this->wm_
                               : !this->may_open(w, this->new_window_lateness()))
        return;
      accepted = true;
      auto& e = entry(w);
      late |= e.expired;
      this->add(w, w, h, k, pane_of(e, h, k), x, e.expired);
    });
    if (!accepted) this->drop_event(std::move(x), t, first);  // first: no window contains t
    this->late_accepted_ += late;
  }

  void advance(event_time wm, emitter& out) override {
    if (wm <= this->wm_) return;
    this->wm_ = wm;
    if (this->cfg_.on_time_first) {
      fire_through(wm, true, false);
      this->release_on_time(out);
      fire_through(wm, false, true);
    } else {
      fire_through(wm, true, true);
    }
    set_last(last_);
  }

  /// Fires what `wm` completes among windows that have not expired yet (`on_time`) and among
  /// those whose allowed lateness it ends (`late`).
  void fire_through(event_time wm, bool on_time, bool late) {
    for (auto it = windows_.begin(); it != windows_.end() && it->second.w.end <= wm;) {
      auto& e = it->second;
      const bool waiting = e.expired && this->purge_time(e.w, e.lateness) > wm;  // for late events
      if (waiting || !(e.expired ? late : on_time)) {
        ++it;
        continue;
      }
      bool done = false;
      e.panes.for_each_hashed([&](std::uint64_t h, const K& k, pane& p) {
        bool expired = e.expired;
        done = this->fire_due(e.w, e.w, h, k, p, expired, e.lateness);
      });
      e.expired = true;
      if (done || e.panes.empty()) {
        spare_ = std::move(e.panes);
        spare_.clear();
        it = windows_.erase(it);
        last_ = nullptr;
      } else {
        ++it;
      }
    }
  }

  std::uint64_t table_bytes() const override {
    std::uint64_t n = 0;
    for (const auto& [start, e] : windows_) n += sizeof(window_entry) + e.panes.memory_bytes();
    return n;
  }

  std::uint8_t kind_tag() const override { return 1; }

  void snapshot_windows(state_writer& out) const override {
    out.write(static_cast<std::uint64_t>(windows_.size()));
    for (const auto& entry : windows_) {
      const auto& e = entry.second;
      out.write(e.w);
      out.write(e.expired);
      out.write(e.lateness);
      detail::snapshot_table(out, e.panes, [&](state_writer& o, const pane& p) { this->snapshot_pane(o, p); });
    }
    // The reused slot array decides the layout, hence the result order, of the next new window.
    out.write(static_cast<std::uint64_t>(spare_.slot_count()));
  }

  void restore_windows(state_reader& in) override {
    windows_.clear();
    set_last(nullptr);
    for (auto n = detail::read_count(in); n > 0; --n) {
      window_entry e;
      in.read(e.w);
      in.read(e.expired);
      in.read(e.lateness);
      detail::restore_table(in, e.panes, [&](state_reader& i, pane& p) { this->restore_pane(i, p); });
      const auto start = e.w.start;
      if (!windows_.emplace(start, std::move(e)).second)
        throw wire_error("window state: window starting at " + std::to_string(start) + " twice");
    }
    spare_.reset(static_cast<std::size_t>(in.read<std::uint64_t>()));
  }

  Assigner assigner_;
  std::map<event_time, window_entry> windows_;
  window_entry* last_ = nullptr;
  event_time on_time_from_ = 0;
  event_time on_time_to_ = 0;
  detail::flat_hash_map<K, pane> spare_;
};

/// Session windows: per key, a short list of sessions ordered by start. A session keeps the id it
/// was created with as the name of its stored state while its reported window grows by merging.
template <class T, class K, class KeyFn, class Fn>
class session_window_logic final : public window_logic_base<T, K, KeyFn, Fn> {
  using base = window_logic_base<T, K, KeyFn, Fn>;
  using pane = typename base::pane;

 public:
  session_window_logic(session s, KeyFn key, Fn fn, window_config cfg, std::string name)
      : base(std::move(key), std::move(fn), std::move(cfg), std::move(name), true), gap_(s.gap) {}

  void process(std::size_t, batch_ptr in, emitter& out) override {
    auto& b = this->input(in);
    const std::size_t n = b.values.size();
    for (std::size_t i = 0; i < n; ++i) {
      const auto t = b.times[i];
      const auto h = b.hashes[i];
      this->max_seen_ = std::max(this->max_seen_, t);
      this->guarded([&] {
        const K k(this->key_(b.values[i]));
        auto& list = keys_.find_or_insert(h, k, [] { return std::vector<session_pane>{}; });
        add_to_sessions(list, b.values[i], t, h, k);
      });
    }
    this->flush(out);
  }

  void on_timer(std::int64_t now_ms, emitter& out) override {
    this->start_tick(now_ms);
    keys_.for_each_hashed([&](std::uint64_t h, const K& k, std::vector<session_pane>& list) {
      for (auto& s : list) this->tick(s.w, s.state, h, k, s.p, s.expired);
    });
    this->flush(out);
  }

  void finish(emitter& out) override {
    this->watermark_at_ = std::chrono::steady_clock::now();
    advance(end_of_time, out);
    this->release_on_time(out);
    this->flush(out);
  }

 private:
  struct session_pane {
    window_id w;      // the session as results report it
    window_id state;  // the id its state is stored under (its first window)
    bool expired = false;
    event_time lateness = 0;  // allowed lateness, fixed when the session was created
    pane p;
  };

  void add_to_sessions(std::vector<session_pane>& list, T& x, event_time t, std::uint64_t h,
                       const K& k) {
    const window_id own{t, t + gap_};
    if (t < this->wm_) this->observe_late(t, own);
    // Sessions are disjoint and ordered, so those that overlap or touch `own` are adjacent.
    auto first = std::find_if(list.begin(), list.end(),
                              [&](const session_pane& s) { return s.w.end >= own.start; });
    auto last = std::find_if(first, list.end(),
                             [&](const session_pane& s) { return s.w.start > own.end; });
    if (first == last) {
      const auto lateness = this->new_window_lateness();
      if (!this->may_open(own, lateness)) {
        this->drop_event(std::move(x), t, false);
        return;
      }
      auto& s = *list.insert(
          first, session_pane{own, own, own.end <= this->wm_, lateness, this->make_pane()});
      if (s.expired) this->expire(s.state, h, k, s.p, s.lateness);
      next_due_ = std::min(next_due_, s.expired ? this->purge_time(s.w, s.lateness) : s.w.end);
      add_event(s, x, h, k);
      return;
    }
    window_id merged{std::min(first->w.start, own.start), std::max((last - 1)->w.end, own.end)};
    // The first session survives and absorbs the others; windows whose id changes and that have
    // already reported results are retracted.
    for (auto it = first; it != last; ++it)
      if (it->w != merged && it->p.state.revision > 0)
        this->emit(it->w, it->state, h, k, it->p, pane_timing::retracted, true);
    auto& survivor = *first;
    if (survivor.w != merged) survivor.p.state.revision = 0;
    for (auto it = first + 1; it != last; ++it) {
      this->fn_.merge(survivor.p.data, it->p.data, it->state, survivor.state, h, k);
      survivor.p.state.pending += it->p.state.pending;
      this->fn_.purge(it->state, h, k);
      this->forget_pane();
    }
    list.erase(first + 1, last);
    survivor.w = merged;
    const bool was_expired = survivor.expired;
    survivor.expired = merged.end <= this->wm_;
    if (survivor.expired && !was_expired)
      this->expire(survivor.state, h, k, survivor.p, survivor.lateness);
    next_due_ = std::min(next_due_, survivor.expired ? this->purge_time(merged, survivor.lateness)
                                                     : merged.end);
    add_event(survivor, x, h, k);
  }

  void add_event(session_pane& s, const T& x, std::uint64_t h, const K& k) {
    this->late_accepted_ += s.expired;
    this->add(s.w, s.state, h, k, s.p, x, s.expired);
  }

  void advance(event_time wm, emitter&) override {
    if (wm <= this->wm_) return;
    this->wm_ = wm;
    if (wm < next_due_) return;
    next_due_ = end_of_time;
    std::vector<std::pair<std::uint64_t, K>> emptied;
    keys_.for_each_hashed([&](std::uint64_t h, const K& k, std::vector<session_pane>& list) {
      list.erase(std::remove_if(list.begin(), list.end(),
                                [&](session_pane& s) {
                                  if (s.w.end <= wm &&
                                      this->fire_due(s.w, s.state, h, k, s.p, s.expired, s.lateness))
                                    return true;
                                  next_due_ = std::min(next_due_, s.expired
                                                                      ? this->purge_time(s.w, s.lateness)
                                                                      : s.w.end);
                                  return false;
                                }),
                 list.end());
      if (list.empty()) emptied.emplace_back(h, k);
    });
    for (auto& [h, k] : emptied) keys_.erase(h, k);
  }

  std::uint64_t table_bytes() const override {
    return keys_.memory_bytes() + this->panes_ * sizeof(session_pane);
  }

  std::uint8_t kind_tag() const override { return 2; }

  void snapshot_windows(state_writer& out) const override {
    detail::snapshot_table(out, keys_, [&](state_writer& o, const std::vector<session_pane>& list) {
      o.write(static_cast<std::uint64_t>(list.size()));
      for (const auto& s : list) {
        o.write(s.w);
        o.write(s.state);
        o.write(s.expired);
        o.write(s.lateness);
        this->snapshot_pane(o, s.p);
      }
    });
    out.write(next_due_);
  }

  void restore_windows(state_reader& in) override {
    detail::restore_table(in, keys_, [&](state_reader& i, std::vector<session_pane>& list) {
      list.resize(detail::read_count(i));
      for (auto& s : list) {
        i.read(s.w);
        i.read(s.state);
        i.read(s.expired);
        i.read(s.lateness);
        this->restore_pane(i, s.p);
      }
    });
    in.read(next_due_);
  }

  event_time gap_;
  detail::flat_hash_map<K, std::vector<session_pane>> keys_;
  event_time next_due_ = end_of_time;  // no session needs the watermark before this time
};

/// Count windows: per key, windows of `size` consecutive elements starting every `slide`. Each
/// fires once, when full (or at the end of the stream with what it has), as a final result.
template <class T, class K, class KeyFn, class Fn>
class count_window_logic final : public window_logic_base<T, K, KeyFn, Fn> {
  using base = window_logic_base<T, K, KeyFn, Fn>;
  using pane = typename base::pane;

 public:
  count_window_logic(count_window c, KeyFn key, Fn fn, window_config cfg, std::string name)
      : base(std::move(key), std::move(fn), std::move(cfg), std::move(name), false), c_(c) {}

  void process(std::size_t, batch_ptr in, emitter& out) override {
    auto& b = this->input(in);
    const std::size_t n = b.values.size();
    for (std::size_t i = 0; i < n; ++i) {
      const auto h = b.hashes[i];
      this->guarded([&] {
        const K k(this->key_(b.values[i]));
        auto& ks = keys_.find_or_insert(h, k, [] { return key_state{}; });
        const auto pos = ks.next++;
        if (pos % c_.slide == 0) {
          const auto start = static_cast<event_time>(pos);
          ks.open.push_back(
              count_pane{{start, start + static_cast<event_time>(c_.size)}, this->make_pane()});
        }
        for (auto& c : ks.open) this->fn_.add(c.p.data, c.w, h, k, b.values[i]);
        if (!ks.open.empty() && ks.open.front().w.end == static_cast<event_time>(ks.next)) {
          close(ks.open.front(), h, k);
          ks.open.erase(ks.open.begin());
        }
      });
    }
    this->flush(out);
  }

  void on_timer(std::int64_t now_ms, emitter&) override { this->start_tick(now_ms); }

  void finish(emitter& out) override {
    keys_.for_each_hashed([&](std::uint64_t h, const K& k, key_state& ks) {
      for (auto& c : ks.open) close(c, h, k);
      ks.open.clear();
    });
    this->flush(out);
  }

 private:
  struct count_pane {
    window_id w;
    pane p;
  };
  struct key_state {
    std::uint64_t next = 0;  // position of the key's next element
    std::vector<count_pane> open;
  };

  void close(count_pane& c, std::uint64_t h, const K& k) {
    this->emit(c.w, c.w, h, k, c.p, pane_timing::on_time, true);
    this->fn_.purge(c.w, h, k);
    this->forget_pane();
  }

  std::uint64_t table_bytes() const override {
    return keys_.memory_bytes() + this->panes_ * sizeof(count_pane);
  }

  std::uint8_t kind_tag() const override { return 3; }

  void snapshot_windows(state_writer& out) const override {
    detail::snapshot_table(out, keys_, [&](state_writer& o, const key_state& ks) {
      o.write(ks.next);
      o.write(static_cast<std::uint64_t>(ks.open.size()));
      for (const auto& c : ks.open) {
        o.write(c.w);
        this->snapshot_pane(o, c.p);
      }
    });
  }

  void restore_windows(state_reader& in) override {
    detail::restore_table(in, keys_, [&](state_reader& i, key_state& ks) {
      i.read(ks.next);
      ks.open.resize(detail::read_count(i));
      for (auto& c : ks.open) {
        i.read(c.w);
        this->restore_pane(i, c.p);
      }
    });
  }

  count_window c_;
  detail::flat_hash_map<K, key_state> keys_;
};

/// The window operator logic for an assigner.
template <class T, class K, class KeyFn, class Fn, class Assigner>
std::unique_ptr<operator_logic> make_window_logic(const Assigner& a, KeyFn key, Fn fn,
                                                  window_config cfg, std::string name) {
  if constexpr (std::is_same_v<Assigner, session>)
    return std::make_unique<session_window_logic<T, K, KeyFn, Fn>>(a, std::move(key), std::move(fn),
                                                                   std::move(cfg), std::move(name));
  else if constexpr (std::is_same_v<Assigner, count_window>)
    return std::make_unique<count_window_logic<T, K, KeyFn, Fn>>(a, std::move(key), std::move(fn),
                                                                 std::move(cfg), std::move(name));
  else
    return std::make_unique<aligned_window_logic<T, K, KeyFn, Fn, Assigner>>(
        a, std::move(key), std::move(fn), std::move(cfg), std::move(name));
}

}  // namespace ops
}  // namespace tidemark
