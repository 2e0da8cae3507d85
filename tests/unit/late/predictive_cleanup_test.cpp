// Predictive cleanup on a synthetic stream: a window operator with a full-window function under a
// conservative fixed lateness and under lateness::predictive{0.99, 0.95}: the predictive bound
// settles just above the 99 % quantile of the observed lateness, keeps covering 99 % of late
// events, purges state from the window store, and changes exactly the results of dropped events.
#define BOOST_TEST_MODULE predictive_cleanup_test
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "../event_time/harness.hpp"
#include "tidemark/core/window_operators.hpp"

using namespace tidemark;
namespace tt = boost::test_tools;

namespace {

struct reading {
  int key = 0;
};
struct key_of {
  int operator()(const reading& r) const { return r.key; }
};
struct count_events {
  std::int64_t operator()(const int&, const window_id&, window_events<reading>& events) const {
    return std::distance(events.begin(), events.end());
  }
};

using fn_type = ops::process_function<reading, int, count_events>;
using result = window_result<int, std::int64_t>;

constexpr event_time window = 100;
constexpr event_time conservative = 100'000;

// One event per ms for 4 keys; 20 % arrive late by 100·X ms, X ~ LogNormal(0, 1); the
// watermark follows the clock every 50 events.
struct run_result {
  std::map<std::string, double> metrics;                      // before the end of the stream
  std::map<std::pair<event_time, int>, std::int64_t> finals;  // (window start, key) -> count
  std::vector<double> after_end;  // lateness after window end of late events
};

run_result run(window_config cfg) {
  run_result r;
  auto logic = ops::make_window_logic<reading, int>(
      tumbling{window}, key_of{},
      fn_type{count_events{}, std::make_unique<memory_window_store<int, reading>>()}, cfg, "w");
  test::recording_emitter out;
  std::mt19937_64 rng{11};
  std::bernoulli_distribution delayed{0.2};
  std::lognormal_distribution<double> x{0, 1};
  std::vector<reading> xs;
  std::vector<event_time> ts;
  std::vector<std::uint64_t> hs;
  auto collect = [&] {
    for (const auto& res : out.values<result>())
      if (res.final) r.finals[{res.window.start, res.key}] = res.value;
    out.log.clear();
  };
  event_time wm = 0;
  for (event_time now = 0; now < 200'000; ++now) {
    const auto t = now - (delayed(rng) ? static_cast<event_time>(window * x(rng)) : 0);
    if (t < 0) continue;
    const int key = static_cast<int>(now % 4);
    const event_time end = t - t % window + window;
    if (end <= wm) r.after_end.push_back(static_cast<double>(wm - end));
    xs.push_back({key});
    ts.push_back(t);
    hs.push_back(detail::mix_hash(static_cast<std::uint64_t>(key)));
    if (now % 50 == 49) {
      logic->process(0, test::make_batch(std::move(xs), std::move(ts), std::move(hs)), out);
      xs.clear(), ts.clear(), hs.clear();
      wm = now + 1;
      logic->on_watermark(wm, out);
      collect();
    }
  }
  logic->add_metrics(r.metrics);
  logic->finish(out);
  collect();
  return r;
}

double quantile(std::vector<double> xs, double q) {
  std::sort(xs.begin(), xs.end());
  return xs[static_cast<std::size_t>(q * static_cast<double>(xs.size() - 1))];
}

}  // namespace

BOOST_AUTO_TEST_CASE(predictive_cleanup_purges_state_and_keeps_the_coverage) {
  window_config fixed;
  fixed.allowed_lateness = conservative;
  window_config predictive;
  predictive.predictive_lateness = lateness::predictive{0.99, 0.95, conservative, 0, conservative};
  const auto a = run(fixed);
  const auto b = run(predictive);

  // The bound settled just above the 99 % quantile of the lateness after window end.
  const double bound = b.metrics.at("allowed_lateness");
  BOOST_TEST(bound >= quantile(b.after_end, 0.99) * 0.97);
  BOOST_TEST(bound <= quantile(b.after_end, 0.995));
  BOOST_TEST(a.metrics.at("allowed_lateness") == conservative);

  // Coverage: the conservative bound accepts every late event, the predictive one about 99 %.
  const double late = static_cast<double>(b.after_end.size());
  BOOST_TEST(a.metrics.at("late_events_dropped") == 0.0);
  const double dropped = b.metrics.at("late_events_dropped");
  BOOST_TEST(dropped > 0.0);
  BOOST_TEST(1 - dropped / late >= 0.985);

  // State: windows are purged from the store long before the conservative bound.
  BOOST_TEST(b.metrics.at("window_store_events") * 10 < a.metrics.at("window_store_events"));
  BOOST_TEST(b.metrics.at("window_panes") * 10 < a.metrics.at("window_panes"));

  // Results: exactly the dropped events are missing from the final results.
  std::int64_t missing = 0, changed = 0;
  for (const auto& [w, n] : a.finals) {
    auto it = b.finals.find(w);
    const std::int64_t m = it == b.finals.end() ? 0 : it->second;
    missing += n - m;
    changed += n != m;
  }
  BOOST_TEST(static_cast<double>(missing) == dropped);
  BOOST_TEST(changed > 0);
  BOOST_TEST(changed <= missing);
  BOOST_TEST_MESSAGE("bound " << bound << " q99 " << quantile(b.after_end, 0.99) << " late " << late
                              << " dropped " << dropped << " changed " << changed << " of "
                              << a.finals.size() << " store events "
                              << b.metrics.at("window_store_events") << " vs "
                              << a.metrics.at("window_store_events"));
}
