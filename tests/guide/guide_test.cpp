// The code of docs/guide.md, compiled and run so that the guide never goes stale. Each region
// between a pair of `//!` markers is quoted verbatim by the guide (checked by guide_in_sync).
#define BOOST_TEST_MODULE user guide
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>

#include "../support/environment.hpp"
#include "tidemark/observe/dashboard.hpp"
#include "tidemark/runtime/live.hpp"
#include "tidemark/tidemark.hpp"

BOOST_AUTO_TEST_CASE(first_job) {
  //! [first_job]
  tidemark::job job{"first"};
  auto squares = job.from_container(std::vector<int>{1, 2, 3, 4, 5})
                     .map([](int x) { return x * x; })
                     .filter([](int x) { return x % 2 == 1; })
                     .collect();
  tidemark::run(job);
  // squares.values() holds 1, 9 and 25, in some order
  //! [first_job]
  auto got = squares.values();
  std::sort(got.begin(), got.end());
  BOOST_TEST(got == (std::vector<int>{1, 9, 25}));
}

BOOST_AUTO_TEST_CASE(files_and_bad_input) {
  auto path = tidemark::test::data_dir() + "/SYS_sample_data_senml.csv";
  //! [files_and_bad_input]
  tidemark::job job{"timestamps"};
  auto times = job.from_text_file(path, "lines")
                   .map([](const std::string& line) { return std::stoll(line.substr(0, line.find(','))); },
                        "leading_timestamp")
                   .on_error(tidemark::error_policy::skip)  // drop and count lines that do not parse
                   .collect();
  auto result = tidemark::run(job);
  std::cout << result.summary();  // events in/out and skipped elements per operator
  //! [files_and_bad_input]
  BOOST_TEST(times.values().size() == 1000u);
  BOOST_TEST(*std::min_element(times.values().begin(), times.values().end()) == 1422748800000LL);
}

BOOST_AUTO_TEST_CASE(side_outputs) {
  //! [side_outputs]
  const tidemark::output_tag<std::string> bad_lines{"bad-lines"};  // port 1 of the operator
  tidemark::job job{"side_outputs"};
  auto parsed = job.from_container(std::vector<std::string>{"12", "x7", "30"})
                    .flat_map<long>(
                        [bad_lines](const std::string& line, tidemark::collector<long>& out) {
                          if (line.find_first_not_of("0123456789") == std::string::npos)
                            out(std::stol(line));
                          else
                            out.side(bad_lines, line);  // keeps the element's event time
                        },
                        "parse");
  auto numbers = parsed.collect();
  auto rejected = parsed.side_output(bad_lines).collect();
  tidemark::run(job);
  // numbers.values(): 12 and 30; rejected.values(): "x7"
  //! [side_outputs]
  auto got = numbers.values();
  std::sort(got.begin(), got.end());
  BOOST_TEST(got == (std::vector<long>{12, 30}));
  BOOST_TEST(rejected.values() == std::vector<std::string>{"x7"});
}

BOOST_AUTO_TEST_CASE(keyed_state) {
  //! [keyed_state]
  struct reading {
    std::string sensor;
    double celsius;
  };
  tidemark::job job{"keyed"};
  auto readings = job.from_container(std::vector<reading>{
      {"a", 20.5}, {"b", 18.0}, {"a", 21.5}, {"c", 5.0}, {"b", 19.0}, {"a", 22.0}});
  auto running_max = readings.key_by([](const reading& r) { return r.sensor; })
                         .reduce([](reading acc, const reading& r) {
                           acc.celsius = std::max(acc.celsius, r.celsius);
                           return acc;
                         })
                         .parallelism(2)  // two instances; each sensor's state lives in one
                         .collect();
  auto readings_per_sensor = readings.key_by([](const reading& r) { return r.sensor; })
                                 .fold(0, [](int n, const reading&) { return n + 1; })
                                 .collect();
  tidemark::run(job);
  // running_max: one updated maximum per reading, e.g. a 20.5, a 21.5, a 22.0 for sensor "a"
  // readings_per_sensor: pairs (sensor, count so far): ("a", 1), ("a", 2), ("a", 3), ("b", 1), ...
  //! [keyed_state]
  double max_a = 0;
  for (auto& r : running_max.values())
    if (r.sensor == "a") max_a = std::max(max_a, r.celsius);
  BOOST_TEST(max_a == 22.0);
  BOOST_TEST(running_max.values().size() == 6u);
  auto counts = readings_per_sensor.values();
  BOOST_TEST(std::count(counts.begin(), counts.end(), std::pair<std::string, int>{"a", 3}) == 1);
}

BOOST_AUTO_TEST_CASE(keyed_process) {
  //! [keyed_process]
  struct reading {
    std::string sensor;
    double celsius;
  };
  struct trend {  // one per sensor, kept in place between its readings
    int rising = 0;
    double last = 0;
  };
  tidemark::job job{"keyed_process"};
  auto alerts =
      job.from_container(std::vector<reading>{{"a", 20}, {"a", 21}, {"b", 5}, {"a", 23}, {"a", 22}})
          .key_by([](const reading& r) { return r.sensor; })
          .process<std::string>(
              [] { return trend{}; },  // the state of a new key
              [](trend& t, const reading& r, tidemark::collector<std::string>& out) {
                t.rising = r.celsius > t.last ? t.rising + 1 : 0;
                t.last = r.celsius;
                if (t.rising == 3) out(r.sensor + " rose three times");
              },
              "rising")
          .collect();
  tidemark::run(job);
  // alerts.values(): "a rose three times" (at 23; b has one reading)
  //! [keyed_process]
  BOOST_TEST(alerts.values() == std::vector<std::string>{"a rose three times"});
}

BOOST_AUTO_TEST_CASE(per_instance_and_sinks) {
  //! [per_instance_and_sinks]
  tidemark::job job{"per_instance"};
  auto words = job.from_container(std::vector<std::string>{"a", "bb", "ccc"});
  // Each instance builds its own function object (a client, a parser with its buffers) once.
  auto labelled = words
                      .map(tidemark::per_instance([](const tidemark::instance_info& info) {
                             return [prefix = "#" + std::to_string(info.index) +
                                              " "](const std::string& w) { return prefix + w; };
                           }),
                           "label")
                      .parallelism(2);
  // A user sink: make returns a function, or a std::unique_ptr<tidemark::operator_logic> for
  // sinks that flush at the end or report metrics.
  auto letters = std::make_shared<std::atomic<std::size_t>>(0);
  labelled.sink("count_letters", [letters](const tidemark::instance_info&) {
    return [letters](const std::string& w) { *letters += w.size(); };
  });
  tidemark::run(job);
  // *letters == 15: "#0 " or "#1 " before each of the 6 letters
  //! [per_instance_and_sinks]
  BOOST_TEST(letters->load() == 15u);
}

BOOST_AUTO_TEST_CASE(shapes_and_plans) {
  //! [shapes_and_plans]
  tidemark::job job{"shapes"};
  auto left = job.from_container(std::vector<int>{1, 2, 3}, "left");
  auto right = job.from_container(std::vector<int>{10, 20}, "right");
  auto both = left.merge(right).map([](int x) { return x + 1; }, "plus_one").parallelism(2);
  auto total = both.rebalance().count("total");
  auto everywhere = both.broadcast().filter([](int) { return true; }, "all").parallelism(3).count();
  auto plan = tidemark::compile(job.graph());
  std::cout << tidemark::to_text(job.graph(), plan);  // stages, fusion, partitioning
  tidemark::run_options options;
  options.batch_size = 256;        // elements per batch between actors
  options.credit = 4;              // batches in flight per channel (0: 32,768 elements' worth)
  options.report_path = "shapes.json";  // JSON metrics report
  tidemark::run(job, options);
  // total.value() == 5; everywhere.value() == 15 (each of the 3 instances sees all 5)
  //! [shapes_and_plans]
  BOOST_TEST(total.value() == 5u);
  BOOST_TEST(everywhere.value() == 15u);
  std::remove("shapes.json");
}

BOOST_AUTO_TEST_CASE(dashboard) {
  tidemark::job job{"watched"};
  auto total = job.from_container(std::vector<int>{1, 2, 3}, "numbers").count("total");
  //! [dashboard]
  tidemark::observe::http_server server{"127.0.0.1:0"};  // port 0: any free port
  tidemark::run_options options;
  options.live = std::make_shared<tidemark::live_view>();  // counters, refreshed every 500 ms
  tidemark::observe::add_dashboard(server, options.live);
  server.start();  // the page is at server.url(), its JSON at server.url() + "/api/job"
  tidemark::run(job, options);
  //! [dashboard]
  BOOST_TEST(total.value() == 3u);
  auto last = options.live->latest();
  BOOST_REQUIRE(last);
  BOOST_TEST(last->finished);
  BOOST_TEST(tidemark::observe::job_json(*last, nullptr).find("\"total\"") != std::string::npos);
}
