// The lateness estimator (decaying log-bucketed histograms) and the allowed-lateness policies.
#include "tidemark/core/lateness.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "tidemark/core/state.hpp"

namespace tidemark {

namespace {

constexpr int octaves = 64;
constexpr std::uint64_t shift_check_every = 256;
constexpr double shift_distance = 0.05;
constexpr std::uint64_t bound_refresh_every = 64;

// z with P(Z <= z) = p for a standard normal Z (bisection on erfc; called rarely).
double normal_quantile(double p) {
  double lo = -10, hi = 10;
  for (int i = 0; i < 100; ++i) {
    const double mid = (lo + hi) / 2;
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

}  // namespace

decaying_histogram::decaying_histogram(double resolution, double half_life, int buckets_per_octave)
    : resolution_(resolution),
      alpha_(std::exp2(1.0 / half_life)),
      per_octave_(buckets_per_octave),
      w_(1 + static_cast<std::size_t>(octaves * buckets_per_octave), 0.0) {
  if (!(resolution > 0) || !(half_life > 0) || buckets_per_octave <= 0)
    throw std::invalid_argument(
        "decaying_histogram: resolution, half_life and buckets_per_octave "
        "must be > 0");
}

std::size_t decaying_histogram::bucket(double x) const {
  if (!(x >= resolution_)) return 0;
  const auto b = 1 + static_cast<std::size_t>(std::floor(std::log2(x / resolution_) * per_octave_));
  return std::min(b, w_.size() - 1);
}

double decaying_histogram::lower(std::size_t b) const {
  return b == 0 ? 0.0
                : resolution_ *
                      std::exp2(static_cast<double>(b - 1) / static_cast<double>(per_octave_));
}

void decaying_histogram::add(double x) {
  // Instead of shrinking every bucket, newer observations weigh more; rescale before overflow.
  inc_ *= alpha_;
  if (inc_ > 1e150) {
    for (auto& w : w_) w /= inc_;
    total_ /= inc_;
    inc_ = 1;
  }
  x = std::max(x, 0.0);
  w_[bucket(x)] += inc_;
  total_ += inc_;
  min_ = count_ == 0 ? x : std::min(min_, x);
  max_ = count_ == 0 ? x : std::max(max_, x);
  ++count_;
}

double decaying_histogram::cdf(double x) const {
  if (total_ <= 0 || x < 0) return 0;
  const auto b = bucket(x);
  double below = 0;
  for (std::size_t i = 0; i < b; ++i) below += w_[i];
  const auto [lo, hi] = span(b);
  const double frac = hi > lo ? std::clamp((x - lo) / (hi - lo), 0.0, 1.0) : (x >= hi ? 1.0 : 0.0);
  return std::min(1.0, (below + frac * w_[b]) / total_);
}

double decaying_histogram::quantile(double q) const {
  if (total_ <= 0) return 0;
  const double target = std::clamp(q, 0.0, 1.0) * total_;
  double cum = 0;
  for (std::size_t b = 0; b < w_.size(); ++b) {
    if (w_[b] > 0 && cum + w_[b] >= target) {
      const double frac = (target - cum) / w_[b];
      const auto [lo, hi] = span(b);
      return lo + frac * (hi - lo);
    }
    cum += w_[b];
  }
  return max_;
}

std::pair<double, double> decaying_histogram::span(std::size_t b) const {
  // Observations fill a bucket up to its edges, except where the smallest or largest ever seen
  // lies inside it (a distribution with a hard edge would otherwise spill past it).
  return {std::max(lower(b), min_), std::min(lower(b + 1), max_)};
}

std::vector<double> decaying_histogram::masses() const {
  std::vector<double> m(w_.size(), 0.0);
  if (total_ > 0)
    for (std::size_t b = 0; b < w_.size(); ++b) m[b] = w_[b] / total_;
  return m;
}

void decaying_histogram::snapshot(state_writer& out) const {
  out.write(w_);
  out.write(inc_);
  out.write(total_);
  out.write(min_);
  out.write(max_);
  out.write(count_);
}

void decaying_histogram::restore(state_reader& in) {
  auto w = in.read<std::vector<double>>();
  if (w.size() != w_.size())
    throw wire_error("lateness histogram has " + std::to_string(w.size()) + " buckets, expected " +
                     std::to_string(w_.size()));
  w_ = std::move(w);
  in.read(inc_);
  in.read(total_);
  in.read(min_);
  in.read(max_);
  in.read(count_);
}

lateness_estimator::lateness_estimator(double half_life)
    : behind_(1.0, half_life), after_end_(1.0, half_life), windows_(1.0 / 64, half_life) {}

void lateness_estimator::observe(event_time behind, event_time after_end,
                                 event_time window_length) {
  behind_.add(static_cast<double>(behind));
  if (after_end < 0) return;
  after_end_.add(static_cast<double>(after_end));
  windows_.add(static_cast<double>(after_end) /
               static_cast<double>(std::max<event_time>(1, window_length)));
  if (after_end_.count() % shift_check_every != 0) return;
  auto now = after_end_.masses();
  // Kolmogorov–Smirnov: a shift when the distance exceeds both the configured one and the 99 %
  // critical value for the two (effective) sample sizes, so sampling noise is no shift.
  const double n = after_end_.weight();
  const double critical = std::max(shift_distance, 1.63 * std::sqrt(1 / n + 1 / snapshot_weight_));
  double distance = 0, a = 0, b = 0;
  for (std::size_t i = 0; i < now.size() && !snapshot_.empty(); ++i) {
    a += now[i];
    b += snapshot_[i];
    distance = std::max(distance, std::abs(a - b));
  }
  if (snapshot_.empty() || distance > critical) {
    snapshot_ = std::move(now);
    snapshot_weight_ = n;
    ++generation_;
  }
}

void lateness_estimator::snapshot(state_writer& out) const {
  behind_.snapshot(out);
  after_end_.snapshot(out);
  windows_.snapshot(out);
  out.write(snapshot_);
  out.write(snapshot_weight_);
  out.write(generation_);
}

void lateness_estimator::restore(state_reader& in) {
  behind_.restore(in);
  after_end_.restore(in);
  windows_.restore(in);
  in.read(snapshot_);
  in.read(snapshot_weight_);
  in.read(generation_);
}

std::optional<event_time> lateness_estimator::covering(double coverage, double confidence) const {
  const double n = after_end_.weight();
  if (n < 1) return std::nullopt;
  // The rank of the order statistic that bounds the coverage quantile from above with the given
  // confidence: binomial(n, coverage) rank, normal approximation plus one for continuity.
  const double level =
      coverage + normal_quantile(confidence) * std::sqrt(coverage * (1 - coverage) / n) + 1 / n;
  if (level >= 1) return std::nullopt;
  return static_cast<event_time>(std::ceil(after_end_.quantile(level)));
}

lateness::lateness(fixed f) : v_(f) {
  if (f.ms < 0)
    throw std::invalid_argument("lateness::fixed: ms must be >= 0, got " + std::to_string(f.ms));
}

lateness::lateness(predictive p) : v_(p) {
  auto fraction = [](double x, const char* what) {
    if (!(x > 0 && x < 1))
      throw std::invalid_argument(std::string{"lateness::predictive: "} + what +
                                  " must be in (0, 1), got " + std::to_string(x));
  };
  fraction(p.coverage, "coverage");
  fraction(p.confidence, "confidence");
  if (p.min < 0 || p.min > p.max || p.initial < p.min || p.initial > p.max)
    throw std::invalid_argument("lateness::predictive: need 0 <= min <= initial <= max, got min " +
                                std::to_string(p.min) + ", initial " + std::to_string(p.initial) +
                                ", max " + std::to_string(p.max));
}

lateness_bound::lateness_bound(lateness policy)
    : policy_(policy),
      value_(policy.as_fixed() ? policy.as_fixed()->ms : policy.as_predictive()->initial) {}

event_time lateness_bound::current(const lateness_estimator& e, event_time horizon) {
  const auto* p = policy_.as_predictive();
  if (!p || horizon < p->initial || e.after_end().count() < seen_ + bound_refresh_every)
    return value_;
  seen_ = e.after_end().count();
  if (auto v = e.covering(p->coverage, p->confidence)) value_ = std::clamp(*v, p->min, p->max);
  return value_;
}

void lateness_bound::snapshot(state_writer& out) const {
  out.write(value_);
  out.write(seen_);
}

void lateness_bound::restore(state_reader& in) {
  in.read(value_);
  in.read(seen_);
}

}  // namespace tidemark
