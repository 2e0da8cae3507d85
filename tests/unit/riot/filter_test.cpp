// RIoTBench filters on the sample data: per-field range marking and the Bloom filter's false
// positive rate and model round trip.
#define BOOST_TEST_MODULE riot_filter
#include <boost/test/unit_test.hpp>

#include <map>
#include <set>

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "sample_data.hpp"
#include "tidemark/riot/filter.hpp"
#include "tidemark/riot/model_codec.hpp"

using namespace tidemark::riot;

BOOST_AUTO_TEST_CASE(range_filter_marks_out_of_range_fields_of_city_messages) {
  auto obs = riot_test::observations(dataset::city, "SYS_sample_data_senml.csv");
  // The CITY bounds of tasks_CITY.properties, written out independently of the library.
  std::map<std::string, std::pair<double, double>> bounds{{"temperature", {-12.5, 43.1}},
                                                          {"humidity", {10.7, 95.2}},
                                                          {"light", {1345, 26282}},
                                                          {"dust", {186.61, 5188.21}},
                                                          {"airquality_raw", {17, 363}}};
  range_filter rgf(range_filter_config::for_dataset(dataset::city));
  std::map<std::string, int> marked;
  for (auto& o : obs) {
    auto [lo, hi] = bounds.at(o.obs_type);
    bool expected = o.value >= lo && o.value <= hi;
    BOOST_TEST(*rgf.process(o) == expected);
    BOOST_TEST(o.missing == !expected);
    marked[o.obs_type] += !expected;
  }
  // The first message: light 0 is below 1345, the other four fields pass.
  BOOST_TEST(obs[0].missing == false);  // temperature 8
  BOOST_TEST(obs[2].obs_type == "light");
  BOOST_TEST(obs[2].missing == true);
  BOOST_TEST(obs[4].missing == false);  // airquality_raw 140
  BOOST_TEST(marked["light"] > 0);
  BOOST_TEST(marked["light"] < 1000);
  BOOST_TEST(rgf.errors().count() == 0u);
}

BOOST_AUTO_TEST_CASE(range_filter_bounds_are_inclusive_and_other_fields_pass) {
  range_filter rgf(range_filter_config::parse("temperature:-12.5:43.1"));
  BOOST_TEST(rgf.check("temperature", -12.5));
  BOOST_TEST(rgf.check("temperature", 43.1));
  BOOST_TEST(!rgf.check("temperature", 43.11));
  BOOST_TEST(rgf.check("humidity", 1e9));
  observation o;
  o.obs_type = "temperature";
  o.text = "hot";
  BOOST_TEST(!rgf.process(o));
  BOOST_TEST(o.missing);
  BOOST_TEST(rgf.errors().count() == 1u);
}

BOOST_AUTO_TEST_CASE(range_filter_configuration_is_checked) {
  BOOST_TEST(range_filter_config::for_dataset(dataset::fit).ranges.size() == 11u);  // all intended ranges
  BOOST_TEST(range_filter_config::for_dataset(dataset::taxi).ranges.size() == 5u);
  BOOST_CHECK_THROW(range_filter_config::parse("temperature:1"), std::invalid_argument);
  BOOST_CHECK_THROW(range_filter_config::parse("temperature:5:1"), std::invalid_argument);
  BOOST_CHECK_THROW(range_filter_config::parse("t:a:1"), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(bloom_filter_sizes_itself_from_capacity_and_fpp) {
  bloom_filter f(1000, 0.01);
  BOOST_TEST(f.bit_count() == 9586u);  // ceil(-1000 ln 0.01 / ln^2 2)
  BOOST_TEST(f.hash_count() == 7u);    // round(9586 / 1000 ln 2)
  bloom_filter big(20'000'000, 0.01);  // the RIoTBench configuration
  BOOST_TEST(big.bit_count() == 191'701'168u);  // 24 MB, as the reference computes
  BOOST_CHECK_THROW(bloom_filter(0, 0.01), std::invalid_argument);
  BOOST_CHECK_THROW(bloom_filter(10, 1.5), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(bloom_filter_passes_every_trained_sensor_and_keeps_its_false_positive_bound) {
  auto obs = riot_test::observations(dataset::city, "SYS_sample_data_senml.csv");
  std::set<std::string> ids;
  for (auto& o : obs) ids.insert(o.sensor_id.str());
  BOOST_TEST(ids.size() == 788u);
  auto check = bloom_filter_check::from_ids({1000, 0.01}, {ids.begin(), ids.end()});
  for (auto& o : obs) BOOST_TEST_REQUIRE(check.process(o));  // no false negatives
  // 200 000 ids that were never inserted: the measured rate must stay within the configured 1 %
  // (788 of 1000 capacity used, so the expected rate is lower still; 3 sigma is 0.07 %).
  std::size_t false_positives = 0, probes = 200'000;
  for (std::size_t i = 0; i < probes; ++i) false_positives += check.check("not-a-sensor-" + std::to_string(i));
  auto rate = static_cast<double>(false_positives) / static_cast<double>(probes);
  BOOST_TEST_MESSAGE("bloom false-positive rate " << rate << " (configured 0.01)");
  BOOST_TEST(rate <= 0.01);
  BOOST_TEST(rate > 0.0);
  observation stranger;
  stranger.sensor_id = "ci-unknown";
  stranger.obs_type = "temperature";
  if (!check.process(stranger)) BOOST_TEST(stranger.missing);
}

BOOST_AUTO_TEST_CASE(bloom_filter_builds_from_a_file_and_round_trips_through_the_codec) {
  auto path = std::string("/tmp/riot_bloom_ids_") + std::to_string(::getpid()) + ".txt";
  {
    std::ofstream out(path);
    out << "meter-1\nmeter-2\n\nmeter-3\n";
  }
  auto check = bloom_filter_check::from_file({100, 0.001}, path);
  std::remove(path.c_str());
  BOOST_TEST(check.check("meter-2"));
  auto bytes = model_codec::encode(check.filter());
  auto back = model_codec::decode_bloom_filter(bytes);
  BOOST_REQUIRE_MESSAGE(back, riot_test::why(back));
  BOOST_TEST(back->words() == check.filter().words());
  BOOST_TEST(back->might_contain("meter-3"));
  bytes[bytes.size() - 3] ^= 0x10;
  BOOST_TEST(model_codec::decode_bloom_filter(bytes).error().message ==
             "model_codec: checksum mismatch: the model bytes are corrupt");
  BOOST_CHECK_THROW(bloom_filter_check::from_file({100, 0.01}, "/nonexistent/ids"), std::runtime_error);
}
