// The Prometheus exposition of a live view: exact text of a few families against hand-written
// expectations (label escaping of `"`, `\` and newline included), the watermark lag only for
// wall-clock watermarks, and `promtool check metrics` accepting what is rendered.
#define BOOST_TEST_MODULE observe prometheus
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <set>
#include <sstream>

#include "../../support/promtool.hpp"
#include "tidemark/core/operator.hpp"
#include "tidemark/observe/prometheus.hpp"

using namespace tidemark;
using observe::render_prometheus;

namespace {

/// The HELP, TYPE and sample lines of family `name`, in order.
std::string family(const std::string& text, const std::string& name) {
  std::istringstream in{text};
  std::string out;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("# HELP " + name + " ", 0) == 0 || line.rfind("# TYPE " + name + " ", 0) == 0 ||
        line.rfind(name + "{", 0) == 0 || line.rfind(name + " ", 0) == 0)
      out += line + '\n';
  return out;
}

operator_metrics op(std::string name, std::uint64_t in, std::uint64_t out,
                    std::map<std::string, double> extra = {}) {
  operator_metrics m;
  m.name = std::move(name);
  m.events_in = in;
  m.events_out = out;
  m.batches_in = in ? 2 : 0;
  m.batches_out = out ? 1 : 0;
  m.extra = std::move(extra);
  return m;
}

const std::string weird = "we\"ird\\op\nx";

/// A source stage (one instance, embedded) and a two-instance stage on nodes n1 and n2 whose
/// first operator has a name that needs escaping; only instance 1 of it has answered.
live_snapshot small_snapshot() {
  auto plan = std::make_shared<live_plan>();
  plan->job = "demo";
  plan->stages.push_back({{"src"}, {"source"}, 1, {"local"}});
  plan->stages.push_back({{weird, "sink"}, {"map", "sink"}, 2, {"n1", "n2"}});
  live_snapshot s;
  s.plan = plan;
  s.seconds = 2.5;
  instance_metrics src;
  src.stage = 0;
  src.operators = {op("src", 0, 1000, {{"watermark", 1500}})};
  src.busy_ns = 2'500'000'000;
  src.blocked_batches = 3;
  src.watermark = 1500;
  instance_metrics mapped;
  mapped.stage = 1;
  mapped.instance = 1;
  mapped.operators = {
      op(weird, 10, 7, {{"late_events_dropped", 2}, {"lateness_after_end_p99", 0.25}}),
      op("sink", 7, 0)};
  mapped.busy_ns = 1'000'000;
  mapped.queued_batches = 5;
  mapped.max_queued_batches = 6;
  s.instances = {src, mapped};
  return s;
}

const auto scrape_time = std::chrono::system_clock::time_point{std::chrono::seconds{1'700'000'000}};

}  // namespace

BOOST_AUTO_TEST_CASE(operator_and_stage_families_read_as_written_by_hand) {
  auto s = small_snapshot();
  auto text = render_prometheus(&s, {}, scrape_time);

  BOOST_TEST(
      family(text, "tidemark_operator_events_out_total") ==
      R"(# HELP tidemark_operator_events_out_total Events an operator instance emitted, on all its outputs.
# TYPE tidemark_operator_events_out_total counter
tidemark_operator_events_out_total{job="demo",stage="0",operator="src",instance="0",node="local"} 1000
tidemark_operator_events_out_total{job="demo",stage="1",operator="we\"ird\\op\nx",instance="1",node="n2"} 7
tidemark_operator_events_out_total{job="demo",stage="1",operator="sink",instance="1",node="n2"} 0
)");
  BOOST_TEST(
      family(text, "tidemark_stage_busy_seconds_total") ==
      R"(# HELP tidemark_stage_busy_seconds_total Time a stage instance spent running operator code.
# TYPE tidemark_stage_busy_seconds_total counter
tidemark_stage_busy_seconds_total{job="demo",stage="0",operator="src",instance="0",node="local"} 2.5
tidemark_stage_busy_seconds_total{job="demo",stage="1",operator="we\"ird\\op\nx",instance="1",node="n2"} 0.001
)");
  BOOST_TEST(
      family(text, "tidemark_stage_queued_batches") ==
      R"(# HELP tidemark_stage_queued_batches Input batches waiting in a stage instance's inbox.
# TYPE tidemark_stage_queued_batches gauge
tidemark_stage_queued_batches{job="demo",stage="0",operator="src",instance="0",node="local"} 0
tidemark_stage_queued_batches{job="demo",stage="1",operator="we\"ird\\op\nx",instance="1",node="n2"} 5
)");
  // stage 1 has no watermark yet; 1.5 s after the epoch is event time, not wall-clock time
  BOOST_TEST(
      family(text, "tidemark_stage_watermark_seconds") ==
      R"(# HELP tidemark_stage_watermark_seconds Highest watermark a stage instance passed on (event time in seconds; +Inf at the end).
# TYPE tidemark_stage_watermark_seconds gauge
tidemark_stage_watermark_seconds{job="demo",stage="0",operator="src",instance="0",node="local"} 1.5
)");
  BOOST_TEST(family(text, "tidemark_stage_watermark_lag_seconds").empty());
  BOOST_TEST(
      family(text, "tidemark_operator_late_events_dropped_total") ==
      R"(# HELP tidemark_operator_late_events_dropped_total Late events beyond the allowed lateness (sent to the late output or dropped).
# TYPE tidemark_operator_late_events_dropped_total counter
tidemark_operator_late_events_dropped_total{job="demo",stage="1",operator="we\"ird\\op\nx",instance="1",node="n2"} 2
)");
  BOOST_TEST(
      family(text, "tidemark_operator_metric") ==
      R"(# HELP tidemark_operator_metric Operator-specific values without a family of their own (operator_logic::add_metrics), by name; the name says the unit.
# TYPE tidemark_operator_metric gauge
tidemark_operator_metric{job="demo",stage="1",operator="we\"ird\\op\nx",instance="1",node="n2",name="lateness_after_end_p99"} 0.25
)");
  BOOST_TEST(
      family(text, "tidemark_job_finished") ==
      R"(# HELP tidemark_job_finished 1 when every stage instance reported done (the counters are final), else 0.
# TYPE tidemark_job_finished gauge
tidemark_job_finished{job="demo"} 0
)");
}

BOOST_AUTO_TEST_CASE(every_family_appears_once_with_help_and_type) {
  auto s = small_snapshot();
  node_status n;
  n.node = "n\"1";
  n.frames_in = 12;
  auto text = render_prometheus(&s, {n}, scrape_time);
  std::istringstream in{text};
  std::set<std::string> helped, typed;
  std::string previous_family;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words{line};
    std::string hash, keyword, name;
    words >> hash >> keyword >> name;
    if (hash != "#") continue;
    if (keyword == "HELP") BOOST_TEST(helped.insert(name).second, name << " has a second HELP");
    if (keyword == "TYPE") BOOST_TEST(typed.insert(name).second, name << " has a second TYPE");
    if (keyword == "TYPE" && name.size() > 6 && name.compare(name.size() - 6, 6, "_total") == 0)
      BOOST_TEST(line == "# TYPE " + name + " counter");
  }
  BOOST_TEST(helped == typed);
  BOOST_TEST(
      family(text, "tidemark_node_frames_in_total") ==
      R"(# HELP tidemark_node_frames_in_total Frames a cluster process accepted (node: control and data; coordinator: control).
# TYPE tidemark_node_frames_in_total counter
tidemark_node_frames_in_total{node="n\"1"} 12
)");
}

BOOST_AUTO_TEST_CASE(watermark_lag_only_for_wall_clock_watermarks) {
  auto s = small_snapshot();
  // the source's watermark is 2.5 s behind the scrape; the other stage reached the end of time
  s.instances[0].watermark = 1'700'000'000'000 - 2'500;
  s.instances[1].watermark = end_of_time;
  auto text = render_prometheus(&s, {}, scrape_time);
  BOOST_TEST(
      family(text, "tidemark_stage_watermark_lag_seconds") ==
      R"(# HELP tidemark_stage_watermark_lag_seconds Wall-clock time minus the stage's watermark, only when the watermark is within a week before the wall clock (otherwise event time is not wall-clock time).
# TYPE tidemark_stage_watermark_lag_seconds gauge
tidemark_stage_watermark_lag_seconds{job="demo",stage="0",operator="src",instance="0",node="local"} 2.5
)");
  BOOST_TEST(
      text.find(
          R"(tidemark_stage_watermark_seconds{job="demo",stage="1",operator="we\"ird\\op\nx",instance="1",node="n2"} +Inf)") !=
      std::string::npos);
  // eight days behind is taken for replayed event time: no lag
  s.instances[0].watermark = 1'700'000'000'000 - 8 * 24 * 3600 * 1000LL;
  BOOST_TEST(family(render_prometheus(&s, {}, scrape_time), "tidemark_stage_watermark_lag_seconds")
                 .empty());
}

BOOST_AUTO_TEST_CASE(promtool_accepts_the_exposition) {
  auto s = small_snapshot();
  s.finished = true;
  // every operator-specific key the built-in operators report, odd values included
  std::map<std::string, double> extra;
  for (const char* key : {"watermark",
                          "watermark_lag",
                          "late_events_accepted",
                          "late_events_dropped",
                          "gap_events_dropped",
                          "window_results",
                          "window_panes",
                          "window_state_bytes",
                          "allowed_lateness",
                          "late_events_observed",
                          "lateness_after_end_p50",
                          "idle",
                          "state_memory_bytes",
                          "state_memory_events",
                          "state_disk_events",
                          "state_disk_bytes",
                          "state_stages",
                          "state_stages_done",
                          "state_demand_stages",
                          "state_prestage_hits",
                          "state_prestage_misses",
                          "state_stage_ms_mean",
                          "state_stage_ms_max",
                          "state_destage_blocks",
                          "state_write_blocks",
                          "state_write_ms_mean",
                          "state_io_wait_ms",
                          "state_idle_destages",
                          "state_pressure_destages",
                          "state_blocks_lost",
                          "state_blocks_corrupt",
                          "state_write_errors",
                          "state_snapshot_block_reads",
                          "window_store_events",
                          "keyed_states",
                          "concurrency",
                          "max_in_flight",
                          "async_completed",
                          "async_latency_mean_ms",
                          "sync_slices",
                          "sync_late",
                          "mismatched"})
    extra[key] = 1234.5;
  extra["lateness_after_end_p99"] = std::nan("");
  s.instances[1].operators[1].extra = extra;
  s.instances[1].watermark = 1'700'000'000'000 - 10;
  node_status n1, coordinator;
  n1.node = "n1";
  n1.frames_in = 100;
  n1.data_bytes_in = 1 << 20;
  coordinator.node = "coordinator";
  s.nodes = {n1, coordinator};
  node_status own;
  own.node = "n\\2\n";
  auto text = render_prometheus(&s, {own}, scrape_time);
  BOOST_TEST(text.find("tidemark_operator_tier_io_wait_seconds_total") != std::string::npos);
  BOOST_TEST(text.find("tidemark_stage_watermark_lag_seconds") != std::string::npos);
  BOOST_TEST(test::promtool_problems(text) == "");
  // before a job started, a node still serves its transport counters
  BOOST_TEST(test::promtool_problems(render_prometheus(nullptr, {own}, scrape_time)) == "");
}

BOOST_AUTO_TEST_CASE(promtool_is_strict_enough_to_catch_a_bad_exposition) {
  // the check above would mean nothing if promtool accepted anything
  BOOST_TEST(test::promtool_problems("# TYPE x counter\nx 1\n") != "");
  BOOST_TEST(test::promtool_problems("x{a=\"b} 1\n") != "");
}
