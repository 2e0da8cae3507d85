// Staleness-bounded schedules: every interval within the bound, the fewest executions (checked
// against brute force on small grids), minimax balancing, the baselines, and the trigger policy
// that computes schedules from an operator's observed lateness.
#define BOOST_TEST_MODULE staleness_test
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <random>

#include "tidemark/core/lateness.hpp"
#include "tidemark/core/staleness.hpp"
#include "tidemark/core/windows.hpp"

using namespace tidemark;

namespace {

double normal_cdf(double x, double mean, double sd) {
  return 0.5 * std::erfc(-(x - mean) / (sd * std::sqrt(2.0)));
}

// The four late-arrival distributions of the paper's figure 9, over a lateness period of 10.
std::vector<arrival_curve> paper_curves(std::size_t steps) {
  return {
      arrival_curve([](double x) { return x <= 0 ? 0.0 : normal_cdf(std::log(x), 0, 1); }, 10,
                    steps),
      arrival_curve([](double x) { return x / 10; }, 10, steps),
      arrival_curve([](double x) { return normal_cdf(x, 5, 1.5); }, 10, steps),
      arrival_curve(
          [](double x) {
            return 0.4 * normal_cdf(x, 1.5, 0.3) + 0.35 * normal_cdf(x, 4.5, 0.3) +
                   0.25 * normal_cdf(x, 8, 0.3);
          },
          10, steps),
  };
}

// A curve over `steps` grid intervals with the given masses per interval.
arrival_curve curve_of(const std::vector<double>& masses) {
  std::vector<double> cum{0};
  for (auto m : masses) cum.push_back(cum.back() + m);
  const double steps = static_cast<double>(masses.size());
  return arrival_curve(
      [&](double x) {
        const auto i = static_cast<std::size_t>(std::min(x, steps - 1));
        return cum[i] + (x - static_cast<double>(i)) * masses[std::min(i, masses.size() - 1)];
      },
      steps, masses.size());
}

// Over every subset of the interior grid points with at most `limit` points: the fewest points
// keeping all intervals within `bound` (SIZE_MAX if none), and the least maximum staleness.
std::pair<std::size_t, double> brute_force(const arrival_curve& c, double bound,
                                           std::size_t limit) {
  const std::size_t interior = c.steps() - 1;
  std::size_t fewest = SIZE_MAX;
  double least_max = 2;
  for (std::uint32_t mask = 0; mask < (1u << interior); ++mask) {
    schedule s;
    for (std::size_t i = 0; i < interior; ++i)
      if (mask & (1u << i)) s.push_back(i + 1);
    const double m = max_staleness(c, s);
    if (m <= bound) fewest = std::min(fewest, s.size());
    if (s.size() <= limit) least_max = std::min(least_max, m);
  }
  return {fewest, least_max};
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_interval_of_a_staleness_schedule_is_within_the_bound) {
  for (const auto& c : paper_curves(2000))
    for (double bound : {0.1, 0.05, 0.01, 0.002}) {
      const auto fewest = fewest_executions(c, bound);
      const auto s = staleness_schedule(c, bound);
      BOOST_TEST(max_staleness(c, fewest) <= bound);
      BOOST_TEST(max_staleness(c, s) <= bound);
      BOOST_TEST(s.size() == fewest.size());  // balancing keeps the minimum count
      BOOST_TEST(std::is_sorted(s.begin(), s.end()));
    }
}

BOOST_AUTO_TEST_CASE(the_number_of_executions_is_the_brute_force_minimum_on_small_grids) {
  std::mt19937 rng{7};
  std::uniform_real_distribution<double> mass{0, 1};
  for (int round = 0; round < 300; ++round) {
    const std::size_t steps = 4 + rng() % 9;  // 4..12 grid intervals
    std::vector<double> masses(steps);
    for (auto& m : masses) m = rng() % 3 == 0 ? 0.0 : mass(rng);
    masses[rng() % steps] += 0.1;  // never all zero
    const auto c = curve_of(masses);
    const double bound = 1.0 / static_cast<double>(steps) + mass(rng) * 0.3;
    const auto s = fewest_executions(c, bound);
    const std::size_t count = executions(s);
    const auto [fewest, least_max] = brute_force(c, bound, count - 1);
    BOOST_TEST(s.size() == fewest);
    // With that many executions, balancing reaches the least possible maximum.
    BOOST_TEST(max_staleness(c, balanced_schedule(c, count)) == least_max,
               boost::test_tools::tolerance(1e-9));
  }
}

BOOST_AUTO_TEST_CASE(schedules_on_a_uniform_distribution_are_evenly_spaced) {
  const auto c = arrival_curve::uniform(12);
  // st = (Δu)²: 0.12 allows Δu <= 0.346, so 3 intervals of 4 steps.
  BOOST_TEST(fewest_executions(c, 0.12) == (schedule{4, 8}));
  BOOST_TEST(staleness_schedule(c, 0.12) == (schedule{4, 8}));
  BOOST_TEST(every_dt_schedule(c, 3) == (schedule{4, 8}));
  BOOST_TEST(every_devents_schedule(c, 4) == (schedule{3, 6, 9}));
  BOOST_TEST(interval_staleness(c, {4, 8}) == (std::vector<double>{1.0 / 9, 1.0 / 9, 1.0 / 9}),
             boost::test_tools::tolerance(1e-12) << boost::test_tools::per_element());
  BOOST_CHECK_THROW(fewest_executions(c, 0.05), std::invalid_argument);  // finer than 1/12
}

BOOST_AUTO_TEST_CASE(the_baselines_ignore_where_late_events_concentrate) {
  // All late events arrive, evenly, in the first half of the period.
  std::vector<double> masses(40, 0.0);
  std::fill(masses.begin(), masses.begin() + 20, 1.0);
  const auto c = curve_of(masses);
  BOOST_TEST(every_dt_schedule(c, 5) == (schedule{8, 16, 24, 32}));
  BOOST_TEST(every_devents_schedule(c, 5) == (schedule{4, 8, 12, 16}));
  // every-Δt: [0, 0.2] holds 40 % of the events; every-Δevents: [0.4, 1] is 60 % of the time.
  BOOST_TEST(max_staleness(c, every_dt_schedule(c, 5)) == 0.08,
             boost::test_tools::tolerance(1e-12));
  BOOST_TEST(max_staleness(c, every_devents_schedule(c, 5)) == 0.12,
             boost::test_tools::tolerance(1e-12));
  // Balanced: the first half cut into quarters, (1/8)·(1/4) each; the fourth time moves back to
  // share the rest with the last interval.
  BOOST_TEST(balanced_schedule(c, 5) == (schedule{5, 10, 15, 19}));
  BOOST_TEST(max_staleness(c, balanced_schedule(c, 5)) == 0.03125,
             boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(on_a_lognormal_distribution_the_staleness_trigger_needs_fewer_executions) {
  const auto c = paper_curves(2000).front();
  const auto ours = executions(fewest_executions(c, 0.05));
  auto fewest_baseline = [&](auto make) {
    for (std::size_t n = 1; n <= 30; ++n)
      if (max_staleness(c, make(c, n)) <= 0.05) return n;
    return std::size_t{31};
  };
  BOOST_TEST(ours < fewest_baseline(every_dt_schedule));
  BOOST_TEST(ours < fewest_baseline(every_devents_schedule));
}

BOOST_AUTO_TEST_CASE(the_trigger_plans_from_the_observed_distribution_and_refreshes_on_a_shift) {
  const auto trigger = late_trigger::staleness(0.05);
  lateness_estimator observed;
  late_schedule_cache cache;
  fire_state s;
  // Nothing observed yet: late events are assumed uniform over T; st = (Δu)² <= 0.05 needs five
  // intervals, balanced (with T = 256 the 256-step grid is in ms): 52, 52, 51, 51, 50.
  trigger.policy().on_expire(s, expiry_context{1000, 256, observed, cache});
  BOOST_TEST(s.plan == (std::vector<std::int64_t>{1052, 1104, 1155, 1206}));
  // 512 late events, all within the first 10 % of the period: the plan moves there.
  BOOST_TEST(observed.generation() == 0);
  for (int i = 0; i < 512; ++i) observed.observe(20, i % 10, 100);
  BOOST_TEST(observed.generation() == 1);
  trigger.policy().on_expire(s, expiry_context{2000, 100, observed, cache});
  BOOST_TEST(!s.plan.empty());
  BOOST_TEST(s.plan.front() < 2010);
  // every-Δt: evenly in time whatever was observed.
  fire_state d;
  late_trigger::every_dt(4).policy().on_expire(d, expiry_context{0, 200, observed, cache});
  BOOST_TEST(d.plan == (std::vector<std::int64_t>{50, 100, 150}));
}
