// The source of the example jobs: element i is make(i), for i in [0, events), optionally paced at
// `rate` elements per second. Replayable: a checkpoint saves the next index, and after a restore
// the pace counts from it (the first element is due at once).
#pragma once

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "tidemark/core/state.hpp"

namespace tidemark::examples {

template <class T, class Make>
class indexed_source final : public source_logic {
 public:
  indexed_source(std::string name, std::int64_t events, std::int64_t rate, Make make)
      : name_(std::move(name)), events_(events), rate_(rate), make_(std::move(make)) {}

  bool pull(std::size_t max, emitter& out) override {
    auto until = std::min(events_, next_ + static_cast<std::int64_t>(max));
    if (rate_ > 0) {
      auto now = std::chrono::steady_clock::now();
      if (!started_) started_ = now;
      auto due = first_ + std::chrono::duration_cast<std::chrono::microseconds>(now - *started_).count() *
                              rate_ / 1'000'000;
      if (due <= next_) return true;  // nothing due: the stage pulls again when it is (idle_for)
      until = std::min(until, due);
    }
    auto b = std::make_unique<batch<T>>();
    b->values.reserve(static_cast<std::size_t>(until - next_));
    for (; next_ < until; ++next_) b->values.push_back(make_(next_));
    if (!b->values.empty()) out.emit(std::move(b));
    return next_ < events_;
  }

  /// Element next_ is due once rate × the microseconds since the start reach next_ - first_ + 1.
  std::chrono::nanoseconds idle_for() const override {
    if (rate_ <= 0 || !started_) return std::chrono::nanoseconds::zero();
    const auto due = *started_ + std::chrono::microseconds{
                                     ((next_ - first_ + 1) * 1'000'000 + rate_ - 1) / rate_};
    return std::max(std::chrono::nanoseconds::zero(), due - std::chrono::steady_clock::now());
  }

  bool replayable() const override { return true; }
  void snapshot(state_writer& out) override { out.write(next_); }
  void restore(state_reader& in) override {
    in.read(next_);
    if (next_ < 0 || next_ > events_)
      throw job_error(name_ + ": the checkpoint is at element " + std::to_string(next_) + " of " +
                      std::to_string(events_) + " (restore it with the same --events)");
    first_ = next_;
    started_.reset();
  }

 private:
  std::string name_;
  std::int64_t events_;
  std::int64_t rate_;
  Make make_;
  std::int64_t next_ = 0;
  std::int64_t first_ = 0;  // the index pacing counts from
  std::optional<std::chrono::steady_clock::time_point> started_;
};

/// A factory of indexed sources for job::from_source.
template <class T, class Make>
auto indexed(std::string name, std::int64_t events, std::int64_t rate, Make make) {
  return [=](const instance_info&) {
    return std::make_unique<indexed_source<T, Make>>(name, events, rate, make);
  };
}

}  // namespace tidemark::examples
