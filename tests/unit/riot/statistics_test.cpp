// RIoTBench statistics tasks with exact expected values: Kalman sequence of one CITY sensor,
// interpolation of an injected missing value, block averages, accumulator windows, LogLog within
// its error bound, and the AMS second moment.
#define BOOST_TEST_MODULE riot_statistics
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <map>
#include <numeric>

#include "sample_data.hpp"
#include "tidemark/riot/statistics.hpp"

using namespace tidemark::riot;

namespace {

// The CITY sensor with the most messages in the sample (4) and its observations of `field`.
const char* busiest = "ci4v5vrcu000602s7g2cur4b213";

std::vector<observation> of_sensor(const std::string& field) {
  std::vector<observation> out;
  for (auto& o : riot_test::observations(dataset::city, "SYS_sample_data_senml.csv"))
    if (o.sensor_id == busiest && o.obs_type == field) out.push_back(o);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(kalman_sequence_of_one_city_sensor_temperature) {
  auto temps = of_sensor("temperature");
  BOOST_REQUIRE_EQUAL(temps.size(), 4u);
  // Closed-form recurrences with q = 0.125, r = 0.32, p0 = 30, x0 = 0, computed here step by step:
  // p' = p + q, K = p' / (p' + r), x = x + K (z - x), p = (1 - K) p'.
  std::vector<double> expected;
  double x = 0, p = 30;
  for (auto& o : temps) {
    auto pp = p + 0.125;
    auto k = pp / (pp + 0.32);
    x = x + k * (o.value - x);
    p = (1 - k) * pp;
    expected.push_back(x);
  }
  // The first value by hand: 28.1 * 30.125 / 30.445.
  BOOST_TEST(expected[0] == 28.1 * 30.125 / 30.445, boost::test_tools::tolerance(1e-12));
  kalman_filter kal(kalman_config::for_dataset(dataset::city));
  for (std::size_t i = 0; i < temps.size(); ++i) {
    auto out = temps[i];
    BOOST_REQUIRE(kal.process(out));
    BOOST_TEST(out.value == expected[i], boost::test_tools::tolerance(1e-12));
    BOOST_TEST(out.obs_type == "temperature");
  }
  BOOST_TEST(expected.back() == 28.11345520067583, boost::test_tools::tolerance(1e-12));
  // Other sensors start their own filter; unconfigured fields are not filtered.
  auto other = temps[0];
  other.sensor_id = "another";
  BOOST_REQUIRE(kal.process(other));
  BOOST_TEST(other.value == expected[0], boost::test_tools::tolerance(1e-12));
  other.obs_type = "longitude";
  BOOST_TEST(!kal.process(other));
  BOOST_TEST(other.value == expected[0]);  // untouched
}

BOOST_AUTO_TEST_CASE(interpolation_fills_an_injected_missing_value_with_the_window_mean) {
  auto temps = of_sensor("temperature");
  interpolation inp(interpolation_config::for_dataset(dataset::city));
  for (std::size_t i = 0; i < 3; ++i) BOOST_TEST(inp.process(temps[i]));
  auto injected = temps[3];
  injected.missing = true;  // as the range filter marks it
  BOOST_TEST(inp.process(injected));
  BOOST_TEST(!injected.missing);
  BOOST_TEST(injected.value == (temps[0].value + temps[1].value + temps[2].value) / 3);
  // A missing value without history stays missing; unconfigured fields pass untouched.
  auto lonely = temps[0];
  lonely.sensor_id = "never-seen";
  lonely.missing = true;
  BOOST_TEST(!inp.process(lonely));
  BOOST_TEST(lonely.missing);
  auto lon = temps[0];
  lon.obs_type = "longitude";
  lon.missing = true;
  BOOST_TEST(!inp.process(lon));
  BOOST_TEST(lon.missing);
}

BOOST_AUTO_TEST_CASE(interpolation_window_keeps_only_the_last_values) {
  interpolation inp({{"energyconsumed"}, 3});
  observation o;
  o.sensor_id = "m1";
  o.obs_type = "energyconsumed";
  o.numeric = true;
  for (double v : {1.0, 2.0, 3.0, 4.0, 5.0}) {
    o.value = v;
    o.missing = false;
    inp.process(o);
  }
  o.missing = true;
  inp.process(o);
  BOOST_TEST(o.value == 4.0);  // mean of 3, 4, 5
}

BOOST_AUTO_TEST_CASE(block_average_emits_the_mean_of_each_block_per_sensor_and_field) {
  auto dust = of_sensor("dust");
  BOOST_REQUIRE_EQUAL(dust.size(), 4u);
  auto config = block_average_config::for_dataset(dataset::city);
  BOOST_TEST(config.window_size == 5u);
  config.window_size = 2;  // the sample has at most 4 messages per sensor
  block_average avg(config);
  std::vector<double> means;
  for (auto& o : dust)
    if (auto out = avg.process(o)) {
      BOOST_TEST(out->obs_type == "AVG");
      BOOST_TEST(out->meta == o.meta.str() + ",dust");
      means.push_back(out->value);
    }
  BOOST_REQUIRE_EQUAL(means.size(), 2u);
  BOOST_TEST(means[0] == (dust[0].value + dust[1].value) / 2);
  BOOST_TEST(means[1] == (dust[2].value + dust[3].value) / 2);
  // The bare step, as a keyed stream fold uses it.
  block_average::state s;
  block_average five(block_average_config::for_dataset(dataset::city));
  std::vector<std::optional<double>> outs;
  for (double v : {1.0, 2.0, 3.0, 4.0, 5.0, 6.0}) outs.push_back(five.step(s, v));
  BOOST_TEST(!outs[3]);
  BOOST_TEST(*outs[4] == 3.0);
  BOOST_TEST(!outs[5]);
}

BOOST_AUTO_TEST_CASE(accumulator_groups_by_sensor_type_and_field_in_time_order) {
  accumulator acc({4, {"SLR"}});
  auto make = [](std::string sensor, std::string type, std::string meta, std::int64_t ts, std::string text) {
    observation o;
    o.sensor_id = std::move(sensor);
    o.obs_type = std::move(type);
    o.meta = std::move(meta);
    o.timestamp = ts;
    o.text = std::move(text);
    o.value = std::atof(o.text.c_str());
    o.numeric = true;
    return o;
  };
  BOOST_TEST(!*acc.process(make("s1", "AVG", "1,s1,temperature", 20, "21.5")));
  BOOST_TEST(!*acc.process(make("s1", "AVG", "1,s1,temperature", 10, "20.5")));
  BOOST_TEST(!*acc.process(make("s1", "SLR", "1,s1,dust", 30, "1#2#3")));
  auto bad = make("s2", "AVG", "1,s2,light", 5, "x");
  bad.numeric = false;
  auto r = acc.process(bad);  // the 4th input closes the window but its value is rejected
  BOOST_REQUIRE(!r);
  BOOST_TEST(r.error().message == "accumulator: message 0, AVG: value \"x\" is not a number");
  BOOST_TEST(acc.errors().count() == 1u);
  BOOST_TEST(!*acc.process(make("s1", "AVG", "1,s1,temperature", 7, "1")));  // a new window began
  BOOST_TEST(!*acc.process(make("s1", "SLR", "1,s1,dust", 3, "4#5")));
  BOOST_TEST(!*acc.process(make("s1", "SLR", "1,s1,dust", 1, "6")));
  auto w = acc.process(make("s1", "AVG", "1,s1,temperature", 2, "9"));
  BOOST_REQUIRE(w);
  BOOST_REQUIRE(*w);
  auto& done = **w;
  BOOST_TEST(done.size() == 2u);
  BOOST_TEST((done.at("s1AVG").at("temperature") == std::vector<timed_value>{{2, 9}, {7, 1}}));
  BOOST_TEST((done.at("s1SLR").at("dust") == std::vector<timed_value>{{1, 6}, {3, 4}, {3, 5}}));
  // A list with an element that is not a number adds none of its values.
  accumulator two({2, {"SLR"}});
  auto list = two.process(make("s3", "SLR", "1,s3,dust", 5, "1#x#3"));
  BOOST_REQUIRE(!list);
  BOOST_TEST(list.error().message ==
             "accumulator: message 0, SLR: list element \"x\" is not a number");
  auto closed = two.process(make("s3", "SLR", "1,s3,dust", 6, "7"));
  BOOST_REQUIRE(closed);
  BOOST_REQUIRE(*closed);
  BOOST_TEST(((**closed).at("s3SLR").at("dust") == std::vector<timed_value>{{6, 7}}));
}

BOOST_AUTO_TEST_CASE(loglog_estimates_known_cardinalities_within_three_standard_errors) {
  for (std::size_t n : {500u, 3000u, 20000u, 200000u}) {
    distinct_count dac(distinct_count_config::for_dataset(dataset::city));
    double estimate = 0;
    for (int pass = 0; pass < 2; ++pass)  // every item twice: repeats must not count
      for (std::size_t i = 0; i < n; ++i) estimate = dac.process("item-" + std::to_string(i));
    auto error = std::abs(estimate - static_cast<double>(n)) / static_cast<double>(n);
    BOOST_TEST_MESSAGE("LogLog n=" << n << " estimate=" << estimate << " relative error=" << error);
    BOOST_TEST(error <= 3 * dac.standard_error());  // 3 * 1.30 / sqrt(1024) = 12.2 %
  }
}

BOOST_AUTO_TEST_CASE(loglog_counts_the_city_sensors) {
  distinct_count dac(distinct_count_config::for_dataset(dataset::city));
  double estimate = 0;
  for (auto& o : riot_test::observations(dataset::city, "SYS_sample_data_senml.csv"))
    estimate = dac.process(o.sensor_id.view());
  BOOST_TEST_MESSAGE("LogLog CITY sensors: estimate " << estimate << " of 788");
  BOOST_TEST(std::abs(estimate - 788) / 788 <= 3 * dac.standard_error());
}

BOOST_AUTO_TEST_CASE(second_moment_is_exact_on_distinct_streams_and_unbiased_on_real_data) {
  second_order_moment som(second_order_moment_config::for_dataset(dataset::city));
  double f2 = 0;
  for (int i = 0; i < 1000; ++i) f2 = som.process("v" + std::to_string(i));
  BOOST_TEST(f2 == 1000.0);  // every estimator's r is 1: n (2 - 1) = n
  // F2 of the CITY humidity values, exactly, against the mean of many independent estimates.
  std::vector<std::string> values;
  std::map<std::string, double> counts;
  for (auto& o : riot_test::observations(dataset::city, "SYS_sample_data_senml.csv"))
    if (o.obs_type == "humidity") {
      values.push_back(o.text);
      ++counts[o.text];
    }
  double exact = 0;
  for (auto& [v, c] : counts) exact += c * c;
  double sum = 0;
  int runs = 300;
  for (int seed = 1; seed <= runs; ++seed) {
    second_order_moment s({10, static_cast<std::uint64_t>(seed)});
    double est = 0;
    for (auto& v : values) est = s.process(v);
    sum += est;
  }
  auto mean = sum / runs;
  BOOST_TEST_MESSAGE("AMS F2 of CITY humidity: exact " << exact << ", mean estimate " << mean);
  BOOST_TEST(std::abs(mean - exact) / exact < 0.1);
}
