// The streaming lateness estimator: quantiles converge on known distributions (lognormal, uniform,
// normal, bursts), old observations decay so a shift is followed, and the predictive bound waits
// for enough observations before it covers the requested fraction.
#define BOOST_TEST_MODULE lateness_estimator_test
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <random>

#include "tidemark/core/lateness.hpp"

using namespace tidemark;
namespace tt = boost::test_tools;

namespace {

// 100 000 draws of `draw` into a histogram that barely decays.
template <class Draw>
decaying_histogram fill(Draw draw) {
  std::mt19937_64 rng{42};
  decaying_histogram h{1.0, 1e9};
  for (int i = 0; i < 100'000; ++i) h.add(draw(rng));
  return h;
}

}  // namespace

BOOST_AUTO_TEST_CASE(quantiles_converge_on_a_lognormal) {
  std::lognormal_distribution<double> d{0, 1};
  const auto h = fill([&](auto& rng) { return 1000 * d(rng); });
  // exp(z_q) · 1000 for z = 0, 1.2816, 2.3263
  BOOST_TEST(h.quantile(0.5) == 1000.0, tt::tolerance(0.03));
  BOOST_TEST(h.quantile(0.9) == 3602.0, tt::tolerance(0.03));
  BOOST_TEST(h.quantile(0.99) == 10240.0, tt::tolerance(0.05));
  BOOST_TEST(h.cdf(1000) == 0.5, tt::tolerance(0.02));
  BOOST_TEST(h.count() == 100'000u);
}

BOOST_AUTO_TEST_CASE(quantiles_converge_on_a_uniform) {
  std::uniform_real_distribution<double> d{0, 10'000};
  const auto h = fill([&](auto& rng) { return d(rng); });
  BOOST_TEST(h.quantile(0.5) == 5000.0, tt::tolerance(0.02));
  BOOST_TEST(h.quantile(0.9) == 9000.0, tt::tolerance(0.02));
  BOOST_TEST(h.quantile(0.99) == 9900.0, tt::tolerance(0.02));
}

BOOST_AUTO_TEST_CASE(quantiles_converge_on_a_normal) {
  std::normal_distribution<double> d{5000, 1000};
  const auto h = fill([&](auto& rng) { return d(rng); });
  BOOST_TEST(h.quantile(0.5) == 5000.0, tt::tolerance(0.02));
  BOOST_TEST(h.quantile(0.9) == 6282.0, tt::tolerance(0.02));
  BOOST_TEST(h.quantile(0.99) == 7326.0, tt::tolerance(0.02));
}

BOOST_AUTO_TEST_CASE(quantiles_converge_on_bursts) {
  // Half the late events around 2000, half around 8000.
  std::normal_distribution<double> first{2000, 100}, second{8000, 200};
  std::bernoulli_distribution which{0.5};
  const auto h = fill([&](auto& rng) { return which(rng) ? first(rng) : second(rng); });
  BOOST_TEST(h.quantile(0.25) == 2000.0, tt::tolerance(0.03));
  BOOST_TEST(h.quantile(0.75) == 8000.0, tt::tolerance(0.03));
  BOOST_TEST(h.cdf(5000) == 0.5, tt::tolerance(0.02));
}

BOOST_AUTO_TEST_CASE(old_observations_decay_so_a_shift_is_followed) {
  lateness_estimator e{2000};  // half-life: 2000 observations
  std::mt19937_64 rng{1};
  std::uniform_int_distribution<event_time> before{0, 1000}, after{5000, 6000};
  for (int i = 0; i < 20'000; ++i) e.observe(2000, before(rng), 1000);
  const auto generation = e.generation();
  BOOST_TEST(generation == 1u);  // the first check found a distribution where there was none
  BOOST_TEST(e.after_end().quantile(0.5) == 500.0, tt::tolerance(0.05));
  for (int i = 0; i < 20'000; ++i) e.observe(7000, after(rng), 1000);
  BOOST_TEST(e.generation() > generation);
  BOOST_TEST(e.after_end().quantile(0.5) == 5500.0, tt::tolerance(0.03));
  BOOST_TEST(e.after_end_windows().quantile(0.5) == 5.5, tt::tolerance(0.03));
  BOOST_TEST(e.behind_watermark().quantile(0.5) == 7000.0, tt::tolerance(0.05));
  // 20 000 observations ago weighs 2^-10: the effective sample is about 2000 / ln 2.
  BOOST_TEST(e.after_end().weight() == 2000 / std::log(2.0), tt::tolerance(0.01));
}

BOOST_AUTO_TEST_CASE(events_late_only_to_the_watermark_do_not_enter_the_window_distribution) {
  lateness_estimator e;
  e.observe(50, -10, 100);
  BOOST_TEST(e.behind_watermark().count() == 1u);
  BOOST_TEST(e.after_end().count() == 0u);
}

BOOST_AUTO_TEST_CASE(the_predictive_bound_covers_the_fraction_once_enough_is_observed) {
  lateness_estimator e{1e9};
  std::mt19937_64 rng{3};
  std::uniform_int_distribution<event_time> d{0, 9999};
  for (int i = 0; i < 200; ++i) e.observe(0, d(rng), 1000);
  // 99 % at 95 % confidence needs about 1.645² · 99 ≈ 270 observations.
  BOOST_TEST(!e.covering(0.99, 0.95).has_value());
  for (int i = 0; i < 9800; ++i) e.observe(0, d(rng), 1000);
  const auto bound = *e.covering(0.99, 0.95);
  BOOST_TEST(bound > 9900);   // above the 99 % quantile...
  BOOST_TEST(bound <= 9999);  // ...within what was seen
  // The lateness_bound starts from `initial` and then follows the estimate, within [min, max].
  lateness_estimator fresh;
  lateness_bound b{lateness::predictive{0.99, 0.95, 50'000, 100, 200'000}};
  BOOST_TEST(b.current(fresh, 100'000) == 50'000);
  // Until the stream was watched for `initial`, longer lateness could not have been seen.
  lateness_bound capped{lateness::predictive{0.99, 0.95, 50'000, 100, 50'000}};
  BOOST_TEST(capped.current(e, 49'999) == 50'000);
  BOOST_TEST(capped.current(e, 50'000) == bound);
  lateness_bound floor{lateness::predictive{0.99, 0.95, 50'000, 20'000, 50'000}};
  BOOST_TEST(floor.current(e, 50'000) == 20'000);
}
