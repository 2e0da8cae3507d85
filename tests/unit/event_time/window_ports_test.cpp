// The window operator's two output ports: results on port 0, events no window takes on port
// late_port (too late for all their windows, or on time but in a gap between sliding windows with
// slide > size), each counted; and the typed API's results()/late() reading those ports of the
// window node itself.
#define BOOST_TEST_MODULE window_ports
#include <boost/test/unit_test.hpp>

#include <map>
#include <random>

#include "harness.hpp"
#include "tidemark/core/job.hpp"
#include "tidemark/core/plan.hpp"

using namespace tidemark;
using namespace tidemark::test;

namespace {

using result = window_result<int, std::int64_t>;

template <class Assigner>
std::unique_ptr<operator_logic> sum_window(Assigner a, event_time lateness = 0) {
  window_config cfg;
  cfg.allowed_lateness = lateness;
  using fn = ops::aggregate_function<reading, int, agg::sum_of<v_of>>;
  return ops::make_window_logic<reading, int>(a, key_of{}, fn{agg::sum(v_of{})}, cfg, "w");
}

double metric(const operator_logic& op, const std::string& name) {
  std::map<std::string, double> m;
  op.add_metrics(m);
  return m.at(name);
}

}  // namespace

BOOST_AUTO_TEST_CASE(results_leave_on_port_0_and_late_events_on_the_late_port_with_their_times) {
  auto w = sum_window(tumbling{10});
  recording_emitter out;
  w->process(0, readings({{1, 2, 5}, {1, 4, 6}}), out);
  w->on_watermark(10, out);
  w->process(0, readings({{1, 3, 100}, {2, 12, 7}}), out);  // t=3: [0,10) is gone (lateness 0)
  w->finish(out);
  for (const auto& e : out.log)
    if (e.k == test::emitted::kind::batch) BOOST_TEST((e.port == 0 || e.port == late_port));
  auto results = out.values<result>(0);
  BOOST_REQUIRE_EQUAL(results.size(), 2u);
  BOOST_TEST(results[0].value == 11);
  BOOST_TEST(results[1].value == 7);
  auto late = out.values<reading>(late_port);
  BOOST_REQUIRE_EQUAL(late.size(), 1u);
  BOOST_TEST(late[0].v == 100);
  std::vector<event_time> late_times;
  for (const auto& e : out.log)
    if (e.k == test::emitted::kind::batch && e.port == late_port) late_times = e.b->times;
  BOOST_TEST(late_times == std::vector<event_time>{3});
  BOOST_TEST(metric(*w, "late_events_dropped") == 1.0);
  BOOST_TEST(metric(*w, "gap_events_dropped") == 0.0);
}

BOOST_AUTO_TEST_CASE(
    sliding_windows_with_gaps_send_events_in_a_gap_to_the_late_port_and_count_them) {
  // size 3, slide 10: windows [0,3), [10,13), ...; times 3..9 of every period fall in no window
  std::mt19937_64 rng{7};
  std::uniform_int_distribution<event_time> time{0, 199};
  std::vector<reading> events;
  for (int i = 0; i < 500; ++i) events.push_back({i % 3, time(rng), i});
  std::sort(events.begin(), events.end(),
            [](const reading& a, const reading& b) { return a.t < b.t; });
  // Independent reference: sums per (window start, key) and the events in a gap.
  std::map<std::pair<event_time, int>, std::int64_t> expected;
  std::vector<std::int64_t> expected_gap;
  for (const auto& e : events)
    if (e.t % 10 < 3)
      expected[{e.t - e.t % 10, e.key}] += e.v;
    else
      expected_gap.push_back(e.v);

  auto w = sum_window(sliding{3, 10});
  recording_emitter out;
  for (std::size_t i = 0; i < events.size(); i += 50) {
    std::vector<reading> chunk(events.begin() + i,
                               events.begin() + std::min(events.size(), i + 50));
    w->process(0, readings(chunk), out);
    w->on_watermark(chunk.back().t, out);  // ascending: every event is on time
  }
  w->finish(out);

  std::map<std::pair<event_time, int>, std::int64_t> got;
  for (const auto& r : out.values<result>(0)) got[{r.window.start, r.key}] = r.value;
  BOOST_TEST((got == expected));
  std::vector<std::int64_t> gap;
  for (const auto& r : out.values<reading>(late_port)) gap.push_back(r.v);
  BOOST_TEST(gap == expected_gap);
  BOOST_TEST(!expected_gap.empty());
  BOOST_TEST(metric(*w, "gap_events_dropped") == static_cast<double>(expected_gap.size()));
  BOOST_TEST(metric(*w, "late_events_dropped") == 0.0);
}

BOOST_AUTO_TEST_CASE(a_late_event_in_a_gap_counts_as_a_gap_event_and_one_too_late_as_late) {
  auto w = sum_window(sliding{3, 10}, 10);
  recording_emitter out;
  w->process(0, readings({{1, 1, 1}}), out);
  w->on_watermark(20, out);  // [0,3) is past its lateness (3 + 10 <= 20), [10,13) is not
  w->process(0, readings({{1, 15, 2}, {1, 2, 3}, {1, 11, 4}}), out);  // gap; too late; accepted
  BOOST_TEST(metric(*w, "gap_events_dropped") == 1.0);
  BOOST_TEST(metric(*w, "late_events_dropped") == 1.0);
  std::vector<std::int64_t> dropped;
  for (const auto& r : out.values<reading>(late_port)) dropped.push_back(r.v);
  BOOST_TEST(dropped == (std::vector<std::int64_t>{2, 3}));
  auto results = out.values<result>(0);
  BOOST_REQUIRE_EQUAL(results.size(), 2u);  // [0,3) on time and final, [10,13) born late
  BOOST_TEST(results[1].value == 4);
}

BOOST_AUTO_TEST_CASE(results_and_late_are_ports_of_the_window_node_so_they_fuse_with_it) {
  job j{"ports"};
  auto windows = j.from_container(std::vector<reading>{}, "source")
                     .assign_timestamps([](const reading& r) { return r.t; },
                                        bounded_out_of_orderness(0).every_events(1))
                     .key_by(key_of{})
                     .window(tumbling{10})
                     .aggregate(agg::sum(v_of{}), "sums");
  windows.parallelism(2);
  auto results = windows.results();
  auto late = windows.late();
  results.count("results");
  late.count("late");
  BOOST_TEST(results.id() == late.id());
  const auto& g = j.graph();
  const auto& window = g.node(results.id());
  BOOST_TEST(window.name == "sums");
  BOOST_REQUIRE_EQUAL(window.outputs.size(), 2u);
  BOOST_TEST(window.outputs[late_port].name == "late");
  BOOST_TEST(window.outputs[late_port].value_type == "tidemark::test::reading");  // the input type
  BOOST_TEST(window.outputs[0].value_type.find("window_result") != std::string::npos);
  std::map<std::string, std::uint32_t> port_read_by;
  for (const auto& n : g.nodes()) {
    BOOST_TEST(n.op != "window_results");  // no splitting operators any more
    BOOST_TEST(n.op != "late_events");
    for (const auto& e : n.inputs)
      if (e.from == window.id) port_read_by[n.name] = e.port;
  }
  BOOST_TEST(
      (port_read_by == std::map<std::string, std::uint32_t>{{"results", 0}, {"late", late_port}}));
  for (const auto& n : g.nodes())
    if (n.kind == node_kind::sink) BOOST_TEST(n.parallelism == 2u);
  // one stage holds the window and both readers: no channel, no copy between them
  auto p = compile(g);
  BOOST_REQUIRE(p.stages.size() == 2u);  // source => timestamps => key_by | sums => both sinks
  std::vector<node_id> window_stage;
  for (const auto& op : p.stages[1].ops) window_stage.push_back(op.node);
  std::sort(window_stage.begin(), window_stage.end());
  BOOST_TEST(window_stage.size() == 3u);
  BOOST_TEST(window_stage.front() == window.id);
}
