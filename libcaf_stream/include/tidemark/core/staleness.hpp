// Staleness-bounded re-execution schedules for past windows (Aion's trigger): the
// staleness of an interval between two executions is st = t·n/(T·N); given the late-arrival
// distribution over a window's lateness period, find the fewest executions keeping every interval
// within a bound, then balance them. Also the every-Δt and every-Δevents baselines. Pure logic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace tidemark {

/// The late-arrival distribution over one window's lateness period, normalized to [0, 1] in time
/// (u = t / T) and in events (G(u) = fraction of the expected late events that arrived by u),
/// sampled on a uniform grid of `steps` intervals. Schedules are grid indices.
class arrival_curve {
 public:
  /// G(u) = cdf(u·T) / cdf(T) for T = `period`; a distribution without mass in [0, T] becomes
  /// uniform. `cdf` must be non-decreasing.
  arrival_curve(const std::function<double(double)>& cdf, double period, std::size_t steps);
  /// Late events uniformly spread over the period.
  static arrival_curve uniform(std::size_t steps);

  std::size_t steps() const noexcept { return g_.size() - 1; }
  /// Fraction of expected late events arrived by grid point i.
  double events_by(std::size_t i) const { return g_[i]; }
  /// Staleness of the interval between grid points a < b: (b − a)/steps · (G(b) − G(a)).
  double staleness(std::size_t a, std::size_t b) const;

 private:
  explicit arrival_curve(std::vector<double> g) : g_(std::move(g)) {}
  std::vector<double> g_;
};

/// Re-execution times of a past window as grid indices in (0, steps), ascending. The window also
/// executes at 0 (its on-time result) and at `steps` (the final result when its lateness ends), so
/// a schedule of k times makes k + 1 intervals; we count those k + 1 executions.
using schedule = std::vector<std::size_t>;

/// Staleness of each interval of `s`: k + 1 values.
std::vector<double> interval_staleness(const arrival_curve& c, const schedule& s);
/// The largest interval staleness of `s`.
double max_staleness(const arrival_curve& c, const schedule& s);
/// Executions (intervals) of `s`: s.size() + 1.
inline std::size_t executions(const schedule& s) {
  return s.size() + 1;
}

/// The fewest re-execution times keeping every interval within `bound`: each goes at the last grid
/// point before the staleness since the previous one would exceed the bound (optimal, since the
/// staleness of an interval grows with its end and shrinks with its start). Requires
/// bound >= 1/steps (so one grid step never exceeds it); throws std::invalid_argument otherwise.
schedule fewest_executions(const arrival_curve& c, double bound);

/// The schedule with at most `count` executions minimizing the maximum interval staleness, then
/// balanced: interior times move (coordinate descent, at most `max_iterations` sweeps) to equalize
/// neighbouring intervals until their staleness values are balanced. Never exceeds the minimum.
schedule balanced_schedule(const arrival_curve& c, std::size_t count,
                           std::size_t max_iterations = 100);

/// The staleness-bounded trigger's schedule: the fewest executions for `bound`, balanced.
schedule staleness_schedule(const arrival_curve& c, double bound);

/// Baseline: `count` executions evenly spaced in time.
schedule every_dt_schedule(const arrival_curve& c, std::size_t count);
/// Baseline: `count` executions each after an equal share of the expected late events.
schedule every_devents_schedule(const arrival_curve& c, std::size_t count);

}  // namespace tidemark
