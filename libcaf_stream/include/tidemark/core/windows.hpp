// Windows: identifiers and results, the assigners (tumbling, sliding, session, count), the
// triggers that decide when a window fires (before its end and after it, for late data) and the
// incremental aggregates. The operators that use them are in window_operators.hpp.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tidemark/core/batch.hpp"

namespace tidemark {

/// A window [start, end): event times for time windows, per-key element positions for count
/// windows.
struct window_id {
  event_time start = 0;
  event_time end = 0;
  friend bool operator==(const window_id& a, const window_id& b) {
    return a.start == b.start && a.end == b.end;
  }
  friend bool operator!=(const window_id& a, const window_id& b) { return !(a == b); }
  friend bool operator<(const window_id& a, const window_id& b) {
    return a.start != b.start ? a.start < b.start : a.end < b.end;
  }
};

/// Why a window result was emitted.
enum class pane_timing : std::uint8_t {
  early,      ///< before the watermark passed the window's end (count / processing-time trigger)
  on_time,    ///< when the watermark passed the window's end
  late,       ///< after that: a late event changed the window, or its allowed lateness ended
  retracted,  ///< a late event merged this session into another; the window no longer exists
};

const char* to_string(pane_timing t) noexcept;

/// One result of a window for one key. Revisions of a (window, key) count 0, 1, 2, ... in
/// emission order; exactly one has `final == true` and it is the last.
template <class K, class R>
struct window_result {
  window_id window;
  K key;
  std::uint32_t revision = 0;
  bool final = false;
  pane_timing timing = pane_timing::on_time;
  R value;
  /// True when the window state could not be read completely (a lost or corrupt block on disk).
  bool incomplete = false;
};

template <class K, class R>
std::ostream& operator<<(std::ostream& out, const window_result<K, R>& r) {
  return out << "[" << r.window.start << "," << r.window.end << ") key=" << r.key
             << " rev=" << r.revision << (r.final ? " final " : " ") << to_string(r.timing) << " "
             << r.value << (r.incomplete ? " incomplete" : "");
}

// ---- assigners -------------------------------------------------------------------------------

/// Fixed-size, non-overlapping event-time windows [offset + i*size, offset + (i+1)*size).
struct tumbling {
  explicit tumbling(event_time size, event_time offset = 0);
  event_time size;
  event_time offset;

  template <class F>
  void assign(event_time t, F&& f) const {
    auto start = t - floor_mod(t - offset, size);
    f(window_id{start, start + size});
  }
  static event_time floor_mod(event_time a, event_time b) noexcept {
    auto m = a % b;
    return m < 0 ? m + b : m;
  }
};

/// Windows of `size` starting every `slide`: each event belongs to about size/slide windows.
struct sliding {
  sliding(event_time size, event_time slide, event_time offset = 0);
  event_time size;
  event_time slide;
  event_time offset;

  /// Calls f(window) for each window containing t, in ascending start order.
  template <class F>
  void assign(event_time t, F&& f) const {
    auto last = t - tumbling::floor_mod(t - offset, slide);
    auto first = last - (size - 1) / slide * slide;
    for (auto start = first; start <= last; start += slide)
      if (start + size > t) f(window_id{start, start + size});
  }
};

/// Per-key sessions: an event at t opens [t, t + gap); sessions that overlap or touch merge, so a
/// session ends after `gap` without events of its key.
struct session {
  explicit session(event_time gap);
  event_time gap;
};

/// Per-key windows of `size` consecutive elements (arrival order), sliding by `slide` elements;
/// slide == size gives tumbling count windows. A window fires when it is full; at the end of the
/// stream, partial windows fire with what they have.
struct count_window {
  count_window(std::uint64_t size, std::uint64_t slide);
  std::uint64_t size;
  std::uint64_t slide;
};

/// Tumbling count windows of `n` elements per key.
inline count_window count_tumbling(std::uint64_t n) { return count_window{n, n}; }
/// Count windows of `size` elements per key, one starting every `slide` elements.
inline count_window count_sliding(std::uint64_t size, std::uint64_t slide) {
  return count_window{size, slide};
}

// ---- triggers --------------------------------------------------------------------------------

/// When a window fires before the watermark passes its end. Every window also fires when the
/// watermark passes its end (the on-time result), so early firings only add results.
struct trigger {
  enum class kind : std::uint8_t { watermark, count, processing_time };
  kind k = kind::watermark;
  std::uint64_t count = 0;
  std::int64_t period_ms = 0;

  /// Default: one result when the watermark passes the window's end.
  static trigger on_watermark() { return {}; }
  /// Also an early result each time `n` elements joined a (window, key) since its last result.
  static trigger on_count(std::uint64_t n);
  /// Also an early result every `ms` of processing time for (window, key)s that changed.
  static trigger on_processing_time(std::int64_t ms);
};

/// What a late trigger knows about one (window, key) after its window expired.
struct fire_state {
  std::uint32_t revision = 0;      ///< revision of the next result
  std::uint32_t pending = 0;       ///< elements added since the last result
  std::int64_t last_fire_ms = 0;   ///< processing time of the last result
  std::int64_t expired_ms = 0;     ///< processing time when the window expired
  std::vector<std::int64_t> plan;  ///< planned re-fire times (processing time, ascending)
};

class lateness_estimator;
class state_writer;
class state_reader;

/// Re-fire offsets computed from the lateness distribution, kept per operator instance: one
/// schedule per allowed lateness, all dropped when the distribution shifts (a new estimator
/// generation), so schedules are computed once per shift rather than once per window.
class late_schedule_cache {
 public:
  /// The offsets for allowed lateness `lateness` under estimator generation `generation`;
  /// `compute()` makes them when they are not cached.
  template <class F>
  const std::vector<std::int64_t>& get(std::uint64_t generation, event_time lateness, F&& compute) {
    if (generation != generation_ || entries_.size() >= 64) {
      entries_.clear();
      generation_ = generation;
    }
    for (auto& [l, offsets] : entries_)
      if (l == lateness) return offsets;
    entries_.emplace_back(lateness, compute());
    return entries_.back().second;
  }

  /// Checkpoints save the cache rather than rebuild it: an entry was computed from the estimator
  /// as it was when the entry's generation first needed it, and the estimator moved on since, so
  /// recomputing after a restore would give windows other re-fire times than before the crash.
  void snapshot(state_writer& out) const;
  void restore(state_reader& in);

 private:
  std::uint64_t generation_ = ~std::uint64_t{0};
  std::vector<std::pair<event_time, std::vector<std::int64_t>>> entries_;
};

/// What a late policy may use when a window expires.
struct expiry_context {
  std::int64_t now_ms = 0;           ///< the operator's processing time
  event_time allowed_lateness = 0;   ///< how long this window accepts late events (event time)
  const lateness_estimator& lateness;  ///< the operator's observed lateness distribution
  late_schedule_cache& schedules;    ///< the operator's cache for computed schedules
};

/// Decides when an expired window re-fires with its late events. Implement this to add a policy.
/// Called only by the window operator's thread; `now_ms` is the operator's latest processing time.
/// One policy object serves every instance of an operator: keep per-instance state in fire_state
/// or the context's cache.
class late_policy {
 public:
  virtual ~late_policy() = default;
  /// The window expired (fired on time, or was created by its first late event).
  virtual void on_expire(fire_state& s, const expiry_context& c) const {}
  /// A late event joined the window (s.pending counts it). True: fire now.
  virtual bool on_late_event(const fire_state& s, std::int64_t now_ms) const = 0;
  /// Timer tick for a window with pending late events. True: fire now. The default fires when
  /// the first planned time in `s.plan` has come (and drops the planned times that passed).
  virtual bool on_tick(fire_state& s, std::int64_t now_ms) const;
  /// Period of on_tick calls in ms; 0 when the policy needs no timer.
  virtual std::int64_t tick_ms() const { return 0; }
  /// When the policy will fire next (processing time), if it can tell: lets a tiered store
  /// pre-stage the window's events ahead of it. Default: unknown.
  virtual std::optional<std::int64_t> next_fire_ms(const fire_state& s) const { return std::nullopt; }
};

/// A policy that re-fires (if late events arrived) at offsets after expiry that `offsets`
/// computes, checked every `tick_ms`. Offsets are processing-time ms: schedules over the event-time
/// lateness period assume event time advances at the rate of processing time (as with live sources).
class planned_late_policy : public late_policy {
 public:
  explicit planned_late_policy(std::int64_t tick_ms) : tick_ms_(tick_ms) {}
  void on_expire(fire_state& s, const expiry_context& c) const override;
  bool on_late_event(const fire_state&, std::int64_t) const override { return false; }
  std::int64_t tick_ms() const override { return tick_ms_; }
  /// The first planned re-fire (lets a tiered store pre-stage ahead of it).
  std::optional<std::int64_t> next_fire_ms(const fire_state& s) const override {
    if (s.plan.empty()) return std::nullopt;
    return s.plan.front();
  }

 protected:
  /// Ascending offsets (ms after expiry) of the planned re-fires of a window expiring in `c`.
  virtual const std::vector<std::int64_t>& offsets(const expiry_context& c) const = 0;

 private:
  std::int64_t tick_ms_;
};

/// When a window re-fires with late events that arrive within its allowed lateness. Whatever the
/// policy, the window fires a last, final time when its allowed lateness ends.
class late_trigger {
 public:
  /// Default: a new revision for every late event.
  static late_trigger every_event();
  /// A new revision every `n` late events.
  static late_trigger every_events(std::uint64_t n);
  /// A new revision every `ms` of processing time while late events arrive.
  static late_trigger every_ms(std::int64_t ms);
  /// New revisions at fixed processing-time offsets after the window expired (if late events
  /// arrived).
  static late_trigger at_offsets(std::vector<std::int64_t> offsets_ms);
  /// Staleness-bounded (Aion's trigger): per window at expiry, the fewest re-fires that keep the
  /// staleness t·n/(T·N) of every interval within `bound` under the observed late-arrival
  /// distribution, balanced to minimize the maximum; refreshed when the distribution shifts.
  static late_trigger staleness(double bound, std::int64_t tick_ms = 50);
  /// Baseline: `count` executions over the lateness period (the final one included), evenly in time.
  static late_trigger every_dt(std::size_t count, std::int64_t tick_ms = 50);
  /// Baseline: `count` executions, each after an equal share of the expected late events.
  static late_trigger every_devents(std::size_t count, std::int64_t tick_ms = 50);

  explicit late_trigger(std::shared_ptr<const late_policy> p) : policy_(std::move(p)) {}
  const late_policy& policy() const noexcept { return *policy_; }

 private:
  std::shared_ptr<const late_policy> policy_;
};

/// Parses a late-trigger spec: `every-event`, `every-events:N`, `every-ms:MS`,
/// `at-offsets:MS,MS,...`, `staleness:S` (0 < S <= 1), `every-dt:N`, `every-devents:N` (N
/// executions over the lateness period). Throws std::invalid_argument naming the spec, what is
/// wrong and the accepted forms.
late_trigger parse_late_trigger(std::string_view spec);

// ---- incremental aggregates ------------------------------------------------------------------
//
// An aggregate A for elements T provides: `template <class T> using acc_type`, `init<T>()`,
// `add(acc, x)`, `merge(acc, other)` (for session merges) and `result(acc)`. add and merge update
// the accumulator in place, so aggregating allocates nothing per element.

namespace agg {

/// The identity projection, for aggregating the elements themselves.
struct identity {
  template <class T>
  const T& operator()(const T& x) const noexcept {
    return x;
  }
};

template <class F>
struct sum_of {
  F f;
  template <class T>
  using acc_type = std::decay_t<std::invoke_result_t<const F&, const T&>>;
  template <class T>
  acc_type<T> init() const {
    return {};
  }
  template <class A, class T>
  void add(A& acc, const T& x) const {
    acc += f(x);
  }
  template <class A>
  void merge(A& acc, const A& other) const {
    acc += other;
  }
  template <class A>
  A result(const A& acc) const {
    return acc;
  }
};

struct count_of {
  template <class T>
  using acc_type = std::uint64_t;
  template <class T>
  std::uint64_t init() const {
    return 0;
  }
  template <class T>
  void add(std::uint64_t& acc, const T&) const {
    ++acc;
  }
  void merge(std::uint64_t& acc, std::uint64_t other) const { acc += other; }
  std::uint64_t result(std::uint64_t acc) const { return acc; }
};

/// Accumulator of min/max/reduce: a value once the first element arrived.
template <class V>
struct first_and_rest {
  V value{};
  bool any = false;
};

template <class F, bool Min>
struct extreme_of {
  F f;
  template <class T>
  using acc_type = first_and_rest<std::decay_t<std::invoke_result_t<const F&, const T&>>>;
  template <class T>
  acc_type<T> init() const {
    return {};
  }
  template <class A, class T>
  void add(A& acc, const T& x) const {
    take(acc, f(x));
  }
  template <class A>
  void merge(A& acc, const A& other) const {
    if (other.any) take(acc, other.value);
  }
  template <class A>
  auto result(const A& acc) const {
    return acc.value;
  }

 private:
  template <class A, class V>
  static void take(A& acc, const V& v) {
    if (!acc.any || (Min ? v < acc.value : acc.value < v)) acc.value = v;
    acc.any = true;
  }
};

struct mean_acc {
  double sum = 0;
  std::uint64_t n = 0;
};

template <class F>
struct mean_of {
  F f;
  template <class T>
  using acc_type = mean_acc;
  template <class T>
  mean_acc init() const {
    return {};
  }
  template <class T>
  void add(mean_acc& acc, const T& x) const {
    acc.sum += static_cast<double>(f(x));
    ++acc.n;
  }
  void merge(mean_acc& acc, const mean_acc& other) const {
    acc.sum += other.sum;
    acc.n += other.n;
  }
  double result(const mean_acc& acc) const { return acc.n ? acc.sum / static_cast<double>(acc.n) : 0.0; }
};

template <class F>
struct reduce_of {
  F f;
  template <class T>
  using acc_type = first_and_rest<T>;
  template <class T>
  acc_type<T> init() const {
    return {};
  }
  template <class A, class T>
  void add(A& acc, const T& x) const {
    acc.value = acc.any ? f(std::move(acc.value), x) : x;
    acc.any = true;
  }
  template <class A>
  void merge(A& acc, const A& other) const {
    if (other.any) add(acc, other.value);
  }
  template <class A>
  auto result(const A& acc) const {
    return acc.value;
  }
};

/// Marks a fold without a merge function: it cannot be used with session windows.
struct no_merge {};

template <class A, class F, class M>
struct fold_of {
  A init_value;
  F f;
  M m;
  template <class T>
  using acc_type = A;
  template <class T>
  A init() const {
    return init_value;
  }
  template <class T>
  void add(A& acc, const T& x) const {
    acc = f(std::move(acc), x);
  }
  void merge(A& acc, const A& other) const {
    static_assert(!std::is_same_v<M, no_merge>,
                  "session windows merge accumulators: use agg::fold(init, f, merge) with "
                  "merge(A, const A&) -> A");
    if constexpr (!std::is_same_v<M, no_merge>) acc = m(std::move(acc), other);
  }
  A result(const A& acc) const { return acc; }
};

/// Sum of `f(x)` (or of the elements).
template <class F = identity>
sum_of<F> sum(F f = {}) {
  return {std::move(f)};
}
/// Number of elements.
inline count_of count() { return {}; }
/// Smallest `f(x)` (or element).
template <class F = identity>
extreme_of<F, true> min(F f = {}) {
  return {std::move(f)};
}
/// Largest `f(x)` (or element).
template <class F = identity>
extreme_of<F, false> max(F f = {}) {
  return {std::move(f)};
}
/// Arithmetic mean of `f(x)` (or of the elements) as double.
template <class F = identity>
mean_of<F> mean(F f = {}) {
  return {std::move(f)};
}
/// `f(T acc, const T& x) -> T` over the window's elements; the first element starts it.
template <class F>
reduce_of<F> reduce(F f) {
  return {std::move(f)};
}
/// `f(A acc, const T& x) -> A` starting at `init`; session windows need the merge form.
template <class A, class F>
fold_of<A, F, no_merge> fold(A init, F f) {
  return {std::move(init), std::move(f), {}};
}
/// Fold whose accumulators merge with `m(A acc, const A& other) -> A` (for session windows).
template <class A, class F, class M>
fold_of<A, F, M> fold(A init, F f, M m) {
  return {std::move(init), std::move(f), std::move(m)};
}

}  // namespace agg
}  // namespace tidemark
