// Event-time windows end to end through tidemark::run: results, revisions and the late output
// of a keyed tumbling window with parallel instances, a session window with a process function,
// and a job whose second input is idle but whose windows still fire.
#define BOOST_TEST_MODULE window_job
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <thread>

#include "tidemark/runtime/runtime.hpp"

using namespace tidemark;

namespace {

struct ev {
  int key = 0;
  event_time t = 0;
  long v = 0;
};

auto time_of = [](const ev& e) { return e.t; };
auto key_of = [](const ev& e) { return e.key; };
auto v_of = [](const ev& e) { return e.v; };

run_options small_batches() {
  run_options o;
  o.batch_size = 16;
  o.credit = 4;
  return o;
}

double metric(const job_result& r, const std::string& op_name, const std::string& key) {
  for (const auto& m : r.per_operator())
    if (m.name == op_name) return m.extra.count(key) ? m.extra.at(key) : -1;
  return -1;
}

}  // namespace

BOOST_AUTO_TEST_CASE(tumbling_sums_with_lateness_through_the_runtime) {
  std::vector<ev> events;
  for (int i = 0; i < 2000; ++i) {
    if (i == 1000) events.push_back({0, 985, 100000});  // late, within the lateness of [980,990)
    if (i == 1500) events.push_back({1, 100, 200000});  // after the lateness of [100,110)
    events.push_back({i % 5, i, i});
  }
  job j{"tumbling"};
  auto windows = j.from_container(events, "source")
                     .assign_timestamps(time_of, bounded_out_of_orderness(5).every_events(1))
                     .key_by(key_of)
                     .window(tumbling{10})
                     .allowed_lateness(20)
                     .aggregate(agg::sum(v_of), "sums");
  windows.parallelism(2);
  auto results = windows.results().collect();
  auto late = windows.late().collect();
  auto r = run(j, small_batches());

  std::map<std::pair<int, event_time>, long> expected;
  for (const auto& e : events)
    if (e.v != 200000) expected[{e.key, e.t - e.t % 10}] += e.v;
  std::map<std::pair<int, event_time>, long> finals;
  std::map<std::pair<int, event_time>, std::uint32_t> revisions;
  for (const auto& x : results.values()) {
    auto k = std::make_pair(x.key, x.window.start);
    BOOST_TEST(x.window.end == x.window.start + 10);
    ++revisions[k];
    if (x.final) finals[k] = x.value;
  }
  BOOST_TEST((finals == expected));
  // On time and final for every pane; the window with the accepted late event also re-fired.
  auto revisions_of = [&](int key, event_time start) { return revisions[{key, start}]; };
  BOOST_TEST(revisions_of(0, 980) == 3u);
  BOOST_TEST(revisions_of(1, 980) == 2u);
  BOOST_REQUIRE_EQUAL(late.values().size(), 1u);
  BOOST_TEST(late.values()[0].v == 200000);
  BOOST_TEST(metric(r, "sums", "late_events_dropped") == 1.0);
  BOOST_TEST(metric(r, "sums", "late_events_accepted") == 1.0);
}

BOOST_AUTO_TEST_CASE(session_process_function_through_the_runtime) {
  std::vector<ev> events;
  for (event_time t : {0, 3, 6, 20, 22, 50})
    for (int k = 0; k < 4; ++k) events.push_back({k, t + k, k * 100 + t});
  job j{"sessions"};
  auto spans = j.from_container(events)
                   .assign_timestamps(time_of, bounded_out_of_orderness(10).every_events(4))
                   .key_by(key_of)
                   .window(session{5})
                   .process([](const int& key, const window_id& w, window_events<ev>& es) {
                     long n = 0;
                     for (const auto& e : es) n += e.v >= 0;
                     return std::to_string(key) + ":" + std::to_string(w.start) + "-" +
                            std::to_string(w.end) + "x" + std::to_string(n);
                   })
                   .results()
                   .collect();
  run(j, small_batches());
  std::vector<std::string> got;
  for (const auto& x : spans.values()) {
    BOOST_TEST(x.final);
    got.push_back(x.value);
  }
  std::sort(got.begin(), got.end());
  std::vector<std::string> expected;
  for (int k = 0; k < 4; ++k)
    for (auto s : {std::to_string(k) + "-" + std::to_string(k + 11) + "x3",
                   std::to_string(20 + k) + "-" + std::to_string(27 + k) + "x2",
                   std::to_string(50 + k) + "-" + std::to_string(55 + k) + "x1"})
      expected.push_back(std::to_string(k) + ":" + s);
  std::sort(expected.begin(), expected.end());
  BOOST_TEST(got == expected);
}

BOOST_AUTO_TEST_CASE(an_idle_input_does_not_hold_back_the_windows) {
  // Input `quiet` produces nothing until a window result has reached the sink (or 10 s passed).
  // Without idleness the windows could not fire before `quiet` ends, so it would time out.
  auto first_result = std::make_shared<std::atomic<bool>>(false);
  auto result_before_quiet_ended = std::make_shared<std::atomic<bool>>(false);
  job j{"idle"};
  std::vector<ev> events;
  for (int i = 0; i < 100; ++i) events.push_back({i % 3, i, 1});
  auto busy = j.from_container(events, "busy").assign_timestamps(
      time_of, ascending_timestamps().every_events(10).idle_after(50));
  auto quiet = j.from_generator(
                    [first_result, result_before_quiet_ended, done = false]() mutable -> std::optional<ev> {
                      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
                      while (!done && !*first_result && std::chrono::steady_clock::now() < deadline)
                        std::this_thread::sleep_for(std::chrono::milliseconds(5));
                      if (!done) *result_before_quiet_ended = first_result->load();
                      done = true;
                      return std::nullopt;
                    },
                    "quiet")
                   .rebalance()  // its own actor, so its timer runs while the source blocks
                   .assign_timestamps(time_of, ascending_timestamps().every_events(10).idle_after(50));
  auto counts = busy.merge(quiet)
                    .key_by(key_of)
                    .window(tumbling{10})
                    .aggregate(agg::count())
                    .results();
  counts.for_each([first_result](const window_result<int, std::uint64_t>&) { *first_result = true; });
  auto all = counts.collect();
  run(j, small_batches());
  BOOST_TEST(result_before_quiet_ended->load());
  std::uint64_t total = 0;
  for (const auto& x : all.values()) total += x.value;
  BOOST_TEST(total == 100u);
}

namespace {
struct reading {
  int sensor = 0;
  event_time ts = 0;
  double value = 0;
};
}  // namespace

BOOST_AUTO_TEST_CASE(the_example_of_docs_event_time_runs) {
  job j{"doc"};
  auto readings = j.from_container(std::vector<reading>{
      {1, 0, 1}, {2, 5'000, 10}, {1, 30'000, 2}, {1, 59'999, 3}, {1, 60'000, 4}});
  // Quoted in docs/event-time.md:
  auto windows = readings
      .assign_timestamps([](const reading& r) { return r.ts; },
                         bounded_out_of_orderness(500).every_ms(200).idle_after(5000))
      .key_by([](const reading& r) { return r.sensor; })
      .window(tumbling{60'000})
      .allowed_lateness(120'000)
      .late_trigger(late_trigger::every_ms(1000))
      .aggregate(agg::mean([](const reading& r) { return r.value; }));
  auto means = windows.results().collect();  // window_result<int, double>
  auto too_late = windows.late().count();    // readings later than the allowed lateness
  // End of quote.
  run(j, small_batches());
  std::map<std::pair<int, event_time>, double> finals;
  for (const auto& r : means.values())
    if (r.final) finals[{r.key, r.window.start}] = r.value;
  std::map<std::pair<int, event_time>, double> expected{{{1, 0}, 2.0}, {{2, 0}, 10.0}, {{1, 60'000}, 4.0}};
  BOOST_TEST((finals == expected));
  BOOST_TEST(too_late.value() == 0u);
}
