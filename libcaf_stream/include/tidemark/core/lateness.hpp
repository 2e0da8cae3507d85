// Lateness of late events and how long windows wait for them (Aion's cleanup): a bounded-memory
// streaming estimator of the lateness distribution (log-bucketed histograms with exponential
// decay), and the allowed-lateness policies: fixed, or predictive (covers a fraction of late
// events at a confidence, starting conservative and adapting).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "tidemark/core/batch.hpp"

namespace tidemark {

class state_writer;
class state_reader;

/// A histogram of non-negative values in logarithmic buckets (`buckets_per_octave` per doubling
/// above `resolution`, one bucket below it) whose observations decay exponentially: each one
/// weighs half as much after `half_life` further observations. Memory is fixed; add is O(1).
class decaying_histogram {
 public:
  explicit decaying_histogram(double resolution = 1.0, double half_life = 10'000,
                              int buckets_per_octave = 8);

  /// Adds one observation (negative values count as 0).
  void add(double x);
  /// Observations ever added.
  std::uint64_t count() const noexcept { return count_; }
  /// Decayed weight of all observations (the effective sample size).
  double weight() const noexcept { return total_ / inc_; }
  /// Fraction of the (decayed) weight at or below x, interpolating inside buckets.
  double cdf(double x) const;
  /// The smallest x with cdf(x) >= q (0 when empty).
  double quantile(double q) const;
  /// Normalized bucket masses (for shift detection).
  std::vector<double> masses() const;
  /// Checkpoints: writes the observations (not the configuration); restore reads them into a
  /// histogram constructed alike and throws wire_error when the bucket count differs.
  void snapshot(state_writer& out) const;
  void restore(state_reader& in);

 private:
  std::size_t bucket(double x) const;
  double lower(std::size_t b) const;
  std::pair<double, double> span(std::size_t b) const;

  double resolution_;
  double alpha_;  // per-observation growth of the increment (decay of older weight)
  int per_octave_;
  std::vector<double> w_;
  double inc_ = 1;
  double total_ = 0;
  double min_ = 0;  // smallest and largest observation ever added
  double max_ = 0;
  std::uint64_t count_ = 0;
};

/// What a window operator learned about its late events. Every event behind the watermark is
/// observed, including those beyond the allowed lateness (so the distribution is not truncated by
/// the bound it feeds): how far behind the watermark (event time), and for events whose window
/// already passed its end, how far the watermark was past that end, in event time and in windows.
class lateness_estimator {
 public:
  explicit lateness_estimator(double half_life = 10'000);

  /// An event `behind` event-time units behind the watermark; `after_end` is how far the
  /// watermark was past the end of the event's earliest window of length `window_length`
  /// (negative: that window had not ended, the event is late only to the watermark).
  void observe(event_time behind, event_time after_end, event_time window_length);

  const decaying_histogram& behind_watermark() const noexcept { return behind_; }
  const decaying_histogram& after_end() const noexcept { return after_end_; }
  const decaying_histogram& after_end_windows() const noexcept { return windows_; }

  /// Changes whenever the after-end distribution moved (Kolmogorov–Smirnov distance of the bucket
  /// masses since the last change above 0.05 and above the 99 % critical value of the two
  /// effective sample sizes, checked every 256 observations): schedules computed
  /// from the distribution are refreshed then.
  std::uint64_t generation() const noexcept { return generation_; }

  /// The lateness covering `coverage` of late events (after window end) with `confidence`: the
  /// upper confidence bound of that quantile (normal approximation of the order statistic). Empty
  /// while too few observations support it.
  std::optional<event_time> covering(double coverage, double confidence) const;

  /// Checkpoints: every histogram and the shift detector's reference, so that generations and
  /// bounds continue exactly as they would have.
  void snapshot(state_writer& out) const;
  void restore(state_reader& in);

 private:
  decaying_histogram behind_;
  decaying_histogram after_end_;
  decaying_histogram windows_;
  std::vector<double> snapshot_;
  double snapshot_weight_ = 0;
  std::uint64_t generation_ = 0;
};

/// How long windows accept late events after their end.
class lateness {
 public:
  /// Every window waits `ms` of event time.
  struct fixed {
    event_time ms = 0;
  };
  /// New windows wait long enough to cover `coverage` of late events with `confidence`, estimated
  /// from the operator's observations; `initial` (conservative) until enough are observed; always
  /// within [min, max].
  struct predictive {
    double coverage = 0.99;
    double confidence = 0.95;
    event_time initial = 600'000;
    event_time min = 0;
    event_time max = 600'000;
  };

  /// Implicit, so that a `lateness::fixed{...}` or `lateness::predictive{...}` is a lateness.
  /// Throws std::invalid_argument for negative times, fractions outside (0, 1) or unless
  /// min <= initial <= max.
  lateness(fixed f);       // NOLINT(google-explicit-constructor)
  lateness(predictive p);  // NOLINT(google-explicit-constructor)

  const fixed* as_fixed() const noexcept { return std::get_if<fixed>(&v_); }
  const predictive* as_predictive() const noexcept { return std::get_if<predictive>(&v_); }

 private:
  std::variant<fixed, predictive> v_;
};

/// Parses a lateness spec: `fixed:MS` (or just `MS`), `predictive:COVERAGE,CONFIDENCE` with
/// optional `,INITIAL[,MIN[,MAX]]` (ms; MAX defaults to INITIAL, INITIAL to 600000). Throws
/// std::invalid_argument naming the spec and what is wrong.
lateness parse_lateness(std::string_view spec);

/// The allowed lateness an operator gives its new windows under a policy: fixed, or the
/// predictive bound refreshed from the estimator every 64 observations. The predictive bound stays
/// at `initial` until the operator has watched for `initial` of event time: before that, lateness
/// longer than what has elapsed cannot have been observed, and the estimate would be too low.
class lateness_bound {
 public:
  explicit lateness_bound(lateness policy);
  /// The allowed lateness for a window created now, after watching the stream for `horizon`
  /// (event time since the operator's first watermark).
  event_time current(const lateness_estimator& e, event_time horizon);

  /// Checkpoints: the bound in force and when it was computed (the policy is configuration).
  void snapshot(state_writer& out) const;
  void restore(state_reader& in);

 private:
  lateness policy_;
  event_time value_;
  std::uint64_t seen_ = 0;  // estimator observations when value_ was computed
};

}  // namespace tidemark
