// Staleness-bounded schedules: greedy fewest executions, minimax by bisection on the bound,
// balancing by coordinate descent, and the every-Δt / every-Δevents baselines.
#include "tidemark/core/staleness.hpp"

#include "tidemark/core/lateness.hpp"
#include "tidemark/core/windows.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace tidemark {

arrival_curve::arrival_curve(const std::function<double(double)>& cdf, double period,
                             std::size_t steps) {
  if (steps == 0) throw std::invalid_argument("arrival_curve: steps must be > 0");
  if (!(period > 0)) throw std::invalid_argument("arrival_curve: period must be > 0");
  const double f0 = cdf(0);
  const double total = cdf(period) - f0;
  if (!(total > 0)) {
    *this = uniform(steps);
    return;
  }
  g_.resize(steps + 1);
  for (std::size_t i = 0; i <= steps; ++i) {
    const double g =
        (cdf(period * static_cast<double>(i) / static_cast<double>(steps)) - f0) / total;
    g_[i] = std::clamp(i == 0 ? 0.0 : std::max(g, g_[i - 1]), 0.0, 1.0);
  }
  g_[steps] = 1.0;
}

arrival_curve arrival_curve::uniform(std::size_t steps) {
  if (steps == 0) throw std::invalid_argument("arrival_curve: steps must be > 0");
  std::vector<double> g(steps + 1);
  for (std::size_t i = 0; i <= steps; ++i)
    g[i] = static_cast<double>(i) / static_cast<double>(steps);
  return arrival_curve{std::move(g)};
}

double arrival_curve::staleness(std::size_t a, std::size_t b) const {
  return static_cast<double>(b - a) / static_cast<double>(steps()) * (g_[b] - g_[a]);
}

std::vector<double> interval_staleness(const arrival_curve& c, const schedule& s) {
  std::vector<double> st;
  std::size_t prev = 0;
  for (auto x : s) {
    st.push_back(c.staleness(prev, x));
    prev = x;
  }
  st.push_back(c.staleness(prev, c.steps()));
  return st;
}

double max_staleness(const arrival_curve& c, const schedule& s) {
  const auto st = interval_staleness(c, s);
  return *std::max_element(st.begin(), st.end());
}

namespace {

// Greedy placement: each execution at the last grid point that keeps the interval within `bound`
// (or the next point when even one step exceeds it, which then violates the bound).
schedule greedy(const arrival_curve& c, double bound) {
  schedule s;
  const std::size_t m = c.steps();
  std::size_t a = 0;
  while (c.staleness(a, m) > bound) {
    // staleness(a, b) grows with b: bisect for the last b with staleness(a, b) <= bound.
    std::size_t lo = a + 1, hi = m;  // staleness(a, hi) > bound
    if (c.staleness(a, lo) > bound) {
      s.push_back(lo);
      a = lo;
      continue;
    }
    while (hi - lo > 1) {
      const std::size_t mid = lo + (hi - lo) / 2;
      (c.staleness(a, mid) <= bound ? lo : hi) = mid;
    }
    s.push_back(lo);
    a = lo;
  }
  return s;
}

// Moves each interior time to equalize its two intervals; returns whether anything moved.
bool balance_sweep(const arrival_curve& c, schedule& s) {
  bool moved = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const std::size_t prev = i == 0 ? 0 : s[i - 1];
    const std::size_t next = i + 1 == s.size() ? c.steps() : s[i + 1];
    if (next - prev < 2) continue;
    // left(x) = st(prev, x) grows and right(x) = st(x, next) shrinks with x: find the crossing.
    std::size_t lo = prev + 1, hi = next - 1;
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if (c.staleness(prev, mid) >= c.staleness(mid, next))
        hi = mid;
      else
        lo = mid + 1;
    }
    auto cost = [&](std::size_t x) { return std::max(c.staleness(prev, x), c.staleness(x, next)); };
    std::size_t best = lo;
    if (lo > prev + 1 && cost(lo - 1) < cost(lo)) best = lo - 1;
    if (cost(best) < cost(s[i]) && best != s[i]) {
      s[i] = best;
      moved = true;
    }
  }
  return moved;
}

bool balanced(const std::vector<double>& st) {
  double mean = 0;
  for (auto x : st) mean += x;
  mean /= static_cast<double>(st.size());
  if (mean <= 0) return true;
  double var = 0;
  for (auto x : st) var += (x - mean) * (x - mean);
  return std::sqrt(var / static_cast<double>(st.size())) / mean < 1e-3;
}

}  // namespace

schedule fewest_executions(const arrival_curve& c, double bound) {
  if (!(bound >= 1.0 / static_cast<double>(c.steps())))
    throw std::invalid_argument("staleness bound " + std::to_string(bound) +
                                " is finer than the grid (1/" + std::to_string(c.steps()) +
                                "): use more steps or a larger bound");
  return greedy(c, bound);
}

schedule balanced_schedule(const arrival_curve& c, std::size_t count, std::size_t max_iterations) {
  if (count == 0) throw std::invalid_argument("balanced_schedule: count must be > 0");
  // The smallest bound whose greedy schedule needs at most `count` executions is the minimum of
  // the maximum staleness (greedy is optimal for every bound); bisect for it.
  double lo = 0, hi = c.staleness(0, c.steps());
  for (int i = 0; i < 60 && hi - lo > 1e-12; ++i) {
    const double mid = (lo + hi) / 2;
    const auto s = greedy(c, mid);
    if (executions(s) <= count && max_staleness(c, s) <= mid)
      hi = mid;
    else
      lo = mid;
  }
  schedule s = greedy(c, hi);
  for (std::size_t it = 0; it < max_iterations && !balanced(interval_staleness(c, s)); ++it)
    if (!balance_sweep(c, s)) break;
  return s;
}

schedule staleness_schedule(const arrival_curve& c, double bound) {
  return balanced_schedule(c, executions(fewest_executions(c, bound)));
}

schedule every_dt_schedule(const arrival_curve& c, std::size_t count) {
  schedule s;
  for (std::size_t i = 1; i < count; ++i) {
    const auto x = static_cast<std::size_t>(
        std::llround(static_cast<double>(i * c.steps()) / static_cast<double>(count)));
    if (x > 0 && x < c.steps() && (s.empty() || x > s.back())) s.push_back(x);
  }
  return s;
}

schedule every_devents_schedule(const arrival_curve& c, std::size_t count) {
  schedule s;
  std::size_t x = 1;
  for (std::size_t i = 1; i < count; ++i) {
    const double share = static_cast<double>(i) / static_cast<double>(count);
    while (x < c.steps() && c.events_by(x) < share) ++x;
    if (x < c.steps() && (s.empty() || x > s.back())) s.push_back(x);
  }
  return s;
}

namespace {

// The schedule-based late triggers: at expiry, the window's schedule over its lateness period T,
// computed from the operator's observed after-end lateness (uniform while nothing was observed).
class schedule_policy final : public planned_late_policy {
 public:
  enum class kind { staleness, every_dt, every_devents };

  schedule_policy(kind k, double bound, std::size_t count, std::int64_t tick_ms)
      : planned_late_policy(tick_ms), k_(k), bound_(bound), count_(count) {}

 protected:
  const std::vector<std::int64_t>& offsets(const expiry_context& c) const override {
    return c.schedules.get(c.lateness.generation(), c.allowed_lateness, [&] {
      std::vector<std::int64_t> out;
      if (c.allowed_lateness <= 0) return out;
      const auto& h = c.lateness.after_end();
      const std::size_t steps =
          k_ == kind::staleness
              ? std::max<std::size_t>(256, static_cast<std::size_t>(std::ceil(1 / bound_)))
              : std::max<std::size_t>(256, 4 * count_);
      const auto curve = h.weight() > 0
                             ? arrival_curve([&](double x) { return h.cdf(x); },
                                             static_cast<double>(c.allowed_lateness), steps)
                             : arrival_curve::uniform(steps);
      const schedule s = k_ == kind::staleness  ? staleness_schedule(curve, bound_)
                         : k_ == kind::every_dt ? every_dt_schedule(curve, count_)
                                                : every_devents_schedule(curve, count_);
      for (auto x : s)
        out.push_back(
            std::llround(static_cast<double>(x) * static_cast<double>(c.allowed_lateness) /
                         static_cast<double>(steps)));
      return out;
    });
  }

 private:
  kind k_;
  double bound_;
  std::size_t count_;
};

void require_tick(std::int64_t tick_ms, const char* who) {
  if (tick_ms <= 0)
    throw std::invalid_argument(std::string{who} + ": tick_ms must be > 0, got " +
                                std::to_string(tick_ms));
}

void require_count(std::size_t count, const char* who) {
  if (count == 0) throw std::invalid_argument(std::string{who} + ": count must be > 0");
}

}  // namespace

late_trigger late_trigger::staleness(double bound, std::int64_t tick_ms) {
  if (!(bound > 0 && bound <= 1))
    throw std::invalid_argument("late_trigger::staleness: bound must be in (0, 1], got " +
                                std::to_string(bound));
  require_tick(tick_ms, "late_trigger::staleness");
  return late_trigger{
      std::make_shared<schedule_policy>(schedule_policy::kind::staleness, bound, 0, tick_ms)};
}

late_trigger late_trigger::every_dt(std::size_t count, std::int64_t tick_ms) {
  require_count(count, "late_trigger::every_dt");
  require_tick(tick_ms, "late_trigger::every_dt");
  return late_trigger{
      std::make_shared<schedule_policy>(schedule_policy::kind::every_dt, 0, count, tick_ms)};
}

late_trigger late_trigger::every_devents(std::size_t count, std::int64_t tick_ms) {
  require_count(count, "late_trigger::every_devents");
  require_tick(tick_ms, "late_trigger::every_devents");
  return late_trigger{
      std::make_shared<schedule_policy>(schedule_policy::kind::every_devents, 0, count, tick_ms)};
}

}  // namespace tidemark
