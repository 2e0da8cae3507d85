// The task adapters on tidemark::stream through the actor runtime: SenML parse -> range filter ->
// block average over the CITY sample gives exactly what the plain tasks give, and malformed
// messages are counted, not passed on; the values that flow between tasks cross processes
// unchanged.
#define BOOST_TEST_MODULE riot_streams
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <tuple>

#include "sample_data.hpp"
#include "tidemark/riot/parse.hpp"
#include "tidemark/riot/streams.hpp"
#include "tidemark/runtime/runtime.hpp"

using namespace tidemark::riot;

namespace {

using row = std::tuple<std::string, std::string, double>;  // sensor, meta, mean

std::vector<row> rows_of(const std::vector<observation>& xs) {
  std::vector<row> out;
  for (auto& o : xs) out.emplace_back(o.sensor_id.str(), o.meta.str(), o.value);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(senml_parse_range_filter_block_average_through_run) {
  auto lines = riot_test::lines("SYS_sample_data_senml.csv");
  auto averages = block_average_config::for_dataset(dataset::city);
  averages.window_size = 2;  // the sample has at most 4 messages per sensor

  // Expected, from the plain tasks.
  range_filter rgf(range_filter_config::for_dataset(dataset::city));
  block_average avg(averages);
  std::vector<observation> expected;
  for (auto o : riot_test::observations(dataset::city, "SYS_sample_data_senml.csv")) {
    rgf.process(o);
    if (auto out = avg.process(o)) expected.push_back(*out);
  }
  BOOST_REQUIRE(!expected.empty());

  auto input = lines;
  input.insert(input.begin() + 10, "1422748800000,{\"e\":[{\"n\":\"source\"");  // cut short
  input.insert(input.begin() + 20, R"({"bt":1,"e":[{"n":"source","sv":"x"},{"n":"colour","sv":"red"}]})");
  tidemark::job j("riot_streams_test");
  tidemark::error_sink errors;
  auto parsed = parse_senml(j.from_container(input), senml_fanout_config::for_dataset(dataset::city, riot_test::data_dir()), errors);
  auto filtered = range_filter_marks(parsed, range_filter_config::for_dataset(dataset::city), errors);
  auto result = block_average_of(filtered, averages).collect();
  tidemark::run(j);

  BOOST_TEST(errors.count() == 2u);
  auto messages = errors.messages();
  BOOST_REQUIRE_EQUAL(messages.size(), 2u);
  BOOST_TEST(messages[1] == "senml_fanout: message 20: field 'colour' is not in the dataset's schema");
  BOOST_TEST(rows_of(result.values()) == rows_of(expected));
  for (auto& o : result.values()) BOOST_TEST(o.obs_type == "AVG");
}

BOOST_AUTO_TEST_CASE(senml_parser_sends_the_lines_it_rejects_to_its_side_output) {
  auto input = riot_test::lines("SYS_sample_data_senml.csv");
  const std::string cut = "1422748800000,{\"e\":[{\"n\":\"source\"";
  const std::string unknown = R"({"bt":1,"e":[{"n":"source","sv":"x"},{"n":"colour","sv":"red"}]})";
  input.insert(input.begin() + 3, cut);
  input.insert(input.begin() + 30, unknown);
  tidemark::job j("riot_rejected_test");
  tidemark::error_sink errors;
  auto parsed =
      parse_senml(j.from_container(input),
                  senml_fanout_config::for_dataset(dataset::city, riot_test::data_dir()), errors);
  auto rejected = parsed.side_output(senml_rejected).collect();
  auto observations = parsed.count();
  tidemark::run(j);

  BOOST_REQUIRE_EQUAL(rejected.values().size(), 2u);
  std::vector<std::string> lines, reasons;
  for (const auto& r : rejected.values()) {
    lines.push_back(r.line);
    reasons.push_back(r.reason);
  }
  std::sort(lines.begin(), lines.end());
  BOOST_TEST(lines == (std::vector<std::string>{cut, unknown}));  // '1' sorts before '{'
  auto messages = errors.messages();  // the error sink still counts them
  std::sort(reasons.begin(), reasons.end());
  std::sort(messages.begin(), messages.end());
  BOOST_TEST(reasons == messages);
  BOOST_TEST(observations.value() == 5 * (input.size() - 2));  // CITY: 5 observables per line
}

BOOST_AUTO_TEST_CASE(kalman_and_interpolation_streams_match_the_plain_tasks) {
  auto obs = riot_test::observations(dataset::city, "SYS_sample_data_senml.csv");
  for (std::size_t i = 0; i < obs.size(); i += 7) obs[i].missing = true;  // injected gaps
  interpolation inp(interpolation_config::for_dataset(dataset::city));
  kalman_filter kal(kalman_config::for_dataset(dataset::city));
  std::vector<observation> expected;
  for (auto o : obs) {
    inp.process(o);
    if (kal.process(o)) expected.push_back(o);
  }
  tidemark::job j("riot_kalman_test");
  auto smoothed = kalman(interpolate(j.from_container(obs), interpolation_config::for_dataset(dataset::city)),
                         kalman_config::for_dataset(dataset::city))
                      .collect();
  tidemark::run(j);
  BOOST_TEST(smoothed.values().size() == expected.size());
  BOOST_TEST(rows_of(smoothed.values()) == rows_of(expected));
}

BOOST_AUTO_TEST_CASE(apply_task_runs_any_fallible_task_and_reports_its_errors) {
  std::vector<std::string> rows{"1,ci4lnqzte000002xpokc9d25v0,8", "2,no-such-sensor,9", "3,ci4lnqzte000002xpokc9d25v0,7"};
  tidemark::job j("riot_apply_test");
  tidemark::error_sink errors;
  auto config = annotate_config::for_dataset(dataset::city, riot_test::data_dir());
  auto annotated = apply_task<std::string>(j.from_container(rows), [config] { return annotate(config); }, errors,
                                           "annotate")
                       .collect();
  tidemark::run(j);
  auto values = annotated.values();
  std::sort(values.begin(), values.end());
  BOOST_TEST(values == (std::vector<std::string>{"1,ci4lnqzte000002xpokc9d25v0,8,building4,analog",
                                                 "3,ci4lnqzte000002xpokc9d25v0,7,building4,analog"}));
  BOOST_TEST(errors.count() == 1u);
  BOOST_TEST(errors.messages() == std::vector<std::string>{"annotate: no metadata for key 'no-such-sensor'"});
}

// Every field of an observation, and an accumulated window, survive the wire codec: a field left
// out of TIDEMARK_FIELDS would come back at its default here.
BOOST_AUTO_TEST_CASE(observations_and_windows_cross_processes_unchanged) {
  observation o{42, 1'500'000'000'000, "sensor-7", "a,b", "temperature", "21.5", 21.5, true, true};
  std::vector<std::uint8_t> bytes;
  tidemark::encode(o, bytes);
  auto back = tidemark::decode<observation>(bytes.data(), bytes.size());
  BOOST_TEST(back.msg_id == 42);
  BOOST_TEST(back.timestamp == 1'500'000'000'000);
  BOOST_TEST(back.sensor_id == "sensor-7");
  BOOST_TEST(back.meta == "a,b");
  BOOST_TEST(back.obs_type == "temperature");
  BOOST_TEST(back.text == "21.5");
  BOOST_TEST(back.value == 21.5);
  BOOST_TEST(back.numeric);
  BOOST_TEST(back.missing);

  accumulated w{{"sensor-7\x1ftemperature", {{"temp", {{1, 20.0}, {2, 21.5}}}}}};
  bytes.clear();
  tidemark::encode(w, bytes);
  BOOST_TEST((tidemark::decode<accumulated>(bytes.data(), bytes.size()) == w));
}
