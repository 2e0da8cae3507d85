// The window benchmark's pipeline, shared by the benchmarks that measure it (window, checkpoint,
// latency with its own paced source):
// N events over 1000 keys, event time advancing so that each 1000-unit tumbling window holds 10,000
// events, through source -> timestamps -> map(value*2) -> filter(even key) -> key_by -> tumbling
// event-time window sum.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>

#include "support/bench_support.hpp"
#include "tidemark/runtime/runtime.hpp"

namespace tidemark::bench {

struct window_event {
  std::uint32_t key;
  event_time t;
  std::int64_t value;
};

constexpr std::uint32_t window_keys = 1000;
constexpr event_time window_size = 1000;
constexpr std::uint64_t events_per_time_unit = 10;  // 10,000 events per window

inline window_event make_window_event(std::uint64_t i) {
  return {static_cast<std::uint32_t>(i % window_keys), static_cast<event_time>(i / events_per_time_unit),
          static_cast<std::int64_t>(i)};
}

/// The pipeline after the source: timestamps -> map(value*2) -> filter(even key) -> key_by ->
/// tumbling event-time window sum, over any event with `key`, `t` and `value`. One punctuated
/// watermark per window boundary: the first element of a window closes the previous one, and
/// `on_boundary(event)` is called as it passes (window index: event.t / window_size).
template <class Event, class OnBoundary>
auto window_sums_of(stream<Event> source, OnBoundary on_boundary) {
  auto timestamped = std::move(source).assign_timestamps(
      [](const Event& e) { return e.t; },
      ascending_timestamps().punctuated([on_boundary](const Event& e) {
        if (e.t % window_size != 0) return false;
        on_boundary(e);
        return true;
      }),
      "timestamps");
  return doubled_even_keys<Event>(std::move(timestamped))
      .window(tumbling{window_size})
      .aggregate(agg::sum([](const Event& e) { return e.value; }), "window_sum");
}

/// Adds the pipeline for `events` events to `j` and returns the window's output (read results()
/// and, when wanted, late()); `on_boundary(window_index)` is called as each window's first
/// element is generated.
template <class OnBoundary>
auto window_sums(job& j, std::uint64_t events, OnBoundary on_boundary) {
  std::uint64_t i = 0;
  auto source = j.from_generator([i, events]() mutable -> std::optional<window_event> {
    if (i == events) return std::nullopt;
    return make_window_event(i++);
  }, "source");
  return window_sums_of(std::move(source), [on_boundary](const window_event& e) {
    on_boundary(static_cast<std::size_t>(e.t / window_size));
  });
}

}  // namespace tidemark::bench
