// How many elements adaptive batching puts in one batch of an output under load: what the
// receiver works through in a time budget, learnt from the pace of its credit.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>

namespace tidemark::detail {

/// Under a flood adaptive batching fills batches, and with `batch_size` 4096 and credit 8 a
/// receiver that spends 20 µs per element (a RIoTBench ETL task) has 0.6 s of work queued in front
/// of it: every hop adds that much latency, and a pipeline of such stages needs seconds to fill
/// and drain. A batch_bound keeps a batch on one output within what its receiver works through in
/// `budget` (docs/architecture.md, "Outputs"), so a flood queues at most about credit × budget in
/// front of each receiver, while a receiver that spends nanoseconds per element still gets full
/// batches.
///
/// The receiver's pace comes from its credit, which it returns when it is done with batches. The
/// batches a credit return acknowledges were worked on from when the first of them was sent, or
/// from the previous return if that came later (the receiver was busy with earlier ones), to now:
/// their elements over that time is the pace the receiver kept. A receiver that was waiting for
/// this sender in between looks slower than it is; then the sender is the slower one, and the
/// bound is what the sender produces in `budget`, which sends nothing late either. A receiver that
/// also works for other senders (a merge, a keyed stage) looks slower by that share, which is the
/// right bound too: its queue holds the batches of all of them. The pace is averaged over the last
/// returns; per-batch costs are part of it, so under a flood the limit settles where a batch's
/// work is the budget, (budget − cost per batch) / cost per element. It starts at `first` (small),
/// since the `credit` batches sent before the first return cannot be bounded by what was learnt,
/// and moves to what the first return shows.
///
/// Only for receivers in the same process: over a network the time from send to credit is mostly
/// the round trip, and reading it as work would shrink batches until the channel, limited by
/// credit × batch per round trip, falls behind (a 5–20 ms link carried 1/10 of its rate).
class batch_bound {
 public:
  using clock = std::chrono::steady_clock;

  /// Always `most`: learns nothing (fixed batching, a receiver in another process).
  explicit batch_bound(std::uint32_t most = 1) : most_(most), limit_(most) {}
  batch_bound(std::uint32_t most, std::uint32_t first, std::chrono::nanoseconds budget)
      : most_(most), limit_(std::min(first, most)), budget_ns_(static_cast<double>(budget.count())),
        learns_(true) {}

  /// The most elements a batch should hold now: at least 1, at most `most`.
  std::uint32_t limit() const { return limit_; }
  /// Whether sent() and credited() matter (the caller may spare the clock).
  bool learns() const { return learns_; }

  /// A batch of `elements` went out at `now` (it took one credit).
  void sent(std::size_t elements, clock::time_point now) {
    if (learns_) in_flight_.push_back({elements, now});
  }

  /// `n` credits came back at `now`.
  void credited(std::uint32_t n, clock::time_point now) {
    if (n == 0 || in_flight_.empty()) return;
    const auto start = std::max(in_flight_.front().sent, last_);
    double elements = 0;
    for (; n > 0 && !in_flight_.empty(); --n) {
      elements += static_cast<double>(in_flight_.front().elements);
      in_flight_.pop_front();
    }
    last_ = now;
    const double ns = static_cast<double>((now - start).count()) / elements;
    ns_per_element_ = ns_per_element_ > 0 ? (ns_per_element_ + ns) / 2 : ns;
    const double fits = budget_ns_ / std::max(ns_per_element_, 1e-3);
    limit_ = static_cast<std::uint32_t>(std::clamp(fits, 1.0, static_cast<double>(most_)));
  }

 private:
  struct batch {
    std::size_t elements;
    clock::time_point sent;
  };
  std::uint32_t most_ = 1;
  std::uint32_t limit_ = 1;
  double budget_ns_ = 0;
  double ns_per_element_ = 0;    // averaged over the credit returns, 0 before the first
  std::deque<batch> in_flight_;  // sent, not yet acknowledged
  clock::time_point last_;       // the last credit return
  bool learns_ = false;
};

}  // namespace tidemark::detail
