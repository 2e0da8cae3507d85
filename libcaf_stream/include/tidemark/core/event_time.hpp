// Timestamps and watermark generation: the watermark_strategy a job passes to
// stream<T>::assign_timestamps, and the operator logic that fills the batch's event-time column
// and emits watermarks (bounded out-of-orderness, periodic, punctuated) and idle flags.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tidemark/core/operators.hpp"

namespace tidemark {

/// Punctuation predicate of a strategy without punctuation.
struct no_punctuation {
  template <class T>
  bool operator()(const T&) const noexcept {
    return false;
  }
};

/// How assign_timestamps generates watermarks. The watermark is always
/// `max event time seen - max_delay`: elements with an event time below it are late. It is emitted
/// (only when it advances) at these points:
/// - every `period_ms` of processing time (on the operator's timer),
/// - after every `period_events` elements,
/// - right after each element for which the punctuation predicate returns true.
/// An input with no element for `idle_timeout_ms` of processing time is marked idle (consumers
/// leave it out of their minimum watermark); its next element marks it active again first.
template <class Punctuation = no_punctuation>
struct watermark_strategy {
  event_time max_delay = 0;
  std::int64_t period_ms = 0;
  std::uint64_t period_events = 0;
  std::int64_t idle_timeout_ms = 0;
  Punctuation punctuation{};

  /// Emit the watermark every `ms` milliseconds of processing time.
  watermark_strategy every_ms(std::int64_t ms) const {
    auto s = *this;
    s.period_ms = ms;
    return s;
  }
  /// Emit the watermark after every `n` elements.
  watermark_strategy every_events(std::uint64_t n) const {
    auto s = *this;
    s.period_events = n;
    return s;
  }
  /// Mark the stream idle after `ms` milliseconds of processing time without elements.
  watermark_strategy idle_after(std::int64_t ms) const {
    auto s = *this;
    s.idle_timeout_ms = ms;
    return s;
  }
  /// Emit the watermark right after every element `x` with `p(x) == true`.
  template <class P>
  watermark_strategy<P> punctuated(P p) const {
    return {max_delay, period_ms, period_events, idle_timeout_ms, std::move(p)};
  }
};

/// Watermarks that trail the highest event time seen by `max_delay` (bounded out-of-orderness).
/// Add at least one emission rule: every_ms, every_events or punctuated.
inline watermark_strategy<> bounded_out_of_orderness(event_time max_delay) {
  return watermark_strategy<>{max_delay};
}

/// Watermarks equal to the highest event time seen (for streams in event-time order).
inline watermark_strategy<> ascending_timestamps() { return watermark_strategy<>{0}; }

namespace ops {

/// Fills `times` with `ts(x)` and generates watermarks and idle flags per a watermark_strategy.
/// Upstream watermarks are not forwarded (this operator defines event time), except end_of_time.
/// A checkpoint saves the highest event time seen, the last watermark emitted and the count
/// towards the next periodic one; idleness and the processing-time schedule start afresh on
/// restore (they measure the wall clock of the running instance).
template <class T, class TsFn, class Punctuation>
class timestamp_logic final : public operator_logic {
 public:
  timestamp_logic(TsFn ts, watermark_strategy<Punctuation> s) : ts_(std::move(ts)), s_(std::move(s)) {}

  void process(std::size_t, batch_ptr in, emitter& out) override {
    auto& b = static_cast<batch<T>&>(*in);
    if (idle_) {
      idle_ = false;
      out.emit_idle(false);
    }
    seen_input_ = true;
    // The time column first, in a loop of its own; under error_policy::skip this drops the
    // elements whose timestamp function throws.
    if (on_error == error_policy::fail) {
      b.times.resize(b.values.size());
      event_time* column = b.times.data();
      const T* values = b.values.data();
      for (std::size_t i = 0; i < b.values.size(); ++i) column[i] = ts_(values[i]);
    } else {
      fill_times(b);
    }
    const std::size_t n = b.values.size();  // after fill_times dropped what it had to
    const T* xs = b.values.data();
    const event_time* times = b.times.data();
    event_time high = max_seen_;
    const bool punctuated = !std::is_same_v<Punctuation, no_punctuation>;
    if (!punctuated && s_.period_events == 0) {
      for (std::size_t i = 0; i < n; ++i) high = std::max(high, times[i]);
      max_seen_ = high;
      out.emit(std::move(in));
      return;
    }
    // Split the batch after each element that calls for a watermark, so that the watermark
    // travels right behind it: what follows the element moves to a new batch, and the batch
    // itself, cut behind the element, goes out.
    const std::uint64_t every = s_.period_events > 0 ? s_.period_events : UINT64_MAX;
    std::uint64_t since = since_watermark_;
    batch<T>* cur = &b;
    std::size_t size = n;
    for (std::size_t i = 0; i < size; ++i) {
      high = std::max(high, times[i]);
      bool due = ++since >= every;
      if constexpr (punctuated) due |= static_cast<bool>(s_.punctuation(xs[i]));
      if (!due) continue;
      max_seen_ = high;
      if (current() <= emitted_) continue;
      since = 0;
      batch_ptr rest = i + 1 < size ? split_after(*cur, i) : nullptr;
      out.emit(std::move(in));
      out.emit_watermark(emitted_ = current());
      if (!rest) break;
      in = std::move(rest);
      cur = static_cast<batch<T>*>(in.get());
      xs = cur->values.data();
      times = cur->times.data();
      size = cur->values.size();
      i = static_cast<std::size_t>(-1);  // the loop goes on at the new batch's first element
    }
    max_seen_ = high;
    since_watermark_ = since;
    if (in && size > 0) out.emit(std::move(in));
  }

  void on_watermark(event_time wm, emitter& out) override {
    if (wm == end_of_time) out.emit_watermark(wm);
  }

  std::int64_t timer_period_ms() const override {
    std::int64_t p = s_.period_ms;
    if (s_.idle_timeout_ms > 0) {
      // Tick often enough that idleness is detected within 1.25 x the timeout.
      auto idle_tick = std::max<std::int64_t>(1, s_.idle_timeout_ms / 4);
      p = p > 0 ? std::min(p, idle_tick) : idle_tick;
    }
    return p;
  }

  void on_timer(std::int64_t now_ms, emitter& out) override {
    if (last_input_ms_ == unset || seen_input_) last_input_ms_ = now_ms;
    seen_input_ = false;
    if (s_.period_ms > 0 && (last_periodic_ms_ == unset || now_ms - last_periodic_ms_ >= s_.period_ms)) {
      last_periodic_ms_ = now_ms;
      if (current() > emitted_) out.emit_watermark(emitted_ = current());
    }
    if (s_.idle_timeout_ms > 0 && !idle_ && now_ms - last_input_ms_ >= s_.idle_timeout_ms) {
      idle_ = true;
      out.emit_idle(true);
    }
  }

  void snapshot(state_writer& out) override {
    out.write(max_seen_);
    out.write(emitted_);
    out.write(since_watermark_);
  }
  void restore(state_reader& in) override {
    in.read(max_seen_);
    in.read(emitted_);
    in.read(since_watermark_);
  }

  void add_metrics(std::map<std::string, double>& out) const override {
    out["watermark"] = static_cast<double>(emitted_);
    out["watermark_lag"] = emitted_ == start_of_time ? 0.0 : static_cast<double>(max_seen_ - emitted_);
    out["idle"] = idle_ ? 1.0 : 0.0;
  }

 private:
  static constexpr std::int64_t unset = INT64_MIN;

  event_time current() const noexcept {
    return max_seen_ == start_of_time ? start_of_time : max_seen_ - s_.max_delay;
  }

  /// Computes the times under error_policy::skip, dropping elements whose timestamp throws.
  void fill_times(batch<T>& b) {
    b.times.resize(b.values.size());
    std::vector<std::uint8_t> keep(b.values.size(), 1);
    std::size_t kept = 0;
    for (std::size_t i = 0; i < b.values.size(); ++i) {
      keep[i] = guarded([&] { b.times[i] = ts_(b.values[i]); });
      if (keep[i]) {
        if (kept != i) b.values[kept] = std::move(b.values[i]);
        ++kept;
      }
    }
    if (kept == b.values.size()) return;
    b.values.resize(kept);
    compact_columns(b, keep);
  }

  /// Moves the elements after position i (and their columns) to a new batch.
  static batch_ptr split_after(batch<T>& b, std::size_t i) {
    auto rest = std::make_unique<batch<T>>();
    const auto tail = [i](auto& column, auto& into) {
      into.assign(std::make_move_iterator(column.begin() + i + 1), std::make_move_iterator(column.end()));
      column.erase(column.begin() + i + 1, column.end());
    };
    tail(b.values, rest->values);
    tail(b.times, rest->times);
    if (!b.hashes.empty()) tail(b.hashes, rest->hashes);
    return rest;
  }

  TsFn ts_;
  watermark_strategy<Punctuation> s_;
  event_time max_seen_ = start_of_time;
  event_time emitted_ = start_of_time;
  std::uint64_t since_watermark_ = 0;
  bool idle_ = false;
  bool seen_input_ = false;
  std::int64_t last_input_ms_ = unset;
  std::int64_t last_periodic_ms_ = unset;
};

}  // namespace ops
}  // namespace tidemark
