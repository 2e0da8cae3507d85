// The Aion workloads: the delay model's distribution, option parsing, and — the point of the
// tiered store — identical final results with memory and tiered state for all four workloads on
// random (seeded) event streams with late events, while the tiered runs really go through disk; and
// the paced event sources resume from a checkpoint without waiting out the events they replay.
#define BOOST_TEST_MODULE aion_workloads
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>

#include "tidemark/aion/workloads.hpp"
#include "../checkpoint/checkpoint_harness.hpp"

using namespace tidemark;

namespace {

std::vector<std::string> sorted_lines(const std::string& path) {
  std::ifstream in{path};
  BOOST_REQUIRE_MESSAGE(in, "missing output " << path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::sort(lines.begin(), lines.end());
  return lines;
}

/// Sum of an operator-specific metric over all instances of all operators.
double total(const job_result& r, const std::string& metric) {
  double t = 0;
  for (const auto& i : r.instances)
    for (const auto& o : i.operators)
      if (auto it = o.extra.find(metric); it != o.extra.end()) t += it->second;
  return t;
}

/// Runs `name` with both states; returns the final-result lines per output of the memory run
/// after checking that the tiered run produced the same lines.
std::map<std::string, std::vector<std::string>> run_both(const std::string& name,
                                                         std::map<std::string, std::string> args,
                                                         const std::vector<std::string>& outputs) {
  job_registry registry;
  aion::register_jobs(registry);
  const auto& spec = registry.find(name);
  const auto dir = std::filesystem::temp_directory_path() / ("aion_workloads_test_" + name);
  std::filesystem::create_directories(dir);
  std::map<std::string, std::vector<std::string>> memory;
  for (const std::string state : {"memory", "tiered"}) {
    auto o = spec.make_options();
    for (const auto& [k, v] : args) o.set(k, v);
    o.set("state", state);
    o.set("out", (dir / state).string());
    run_options opts;
    opts.batch_size = 64;  // watermarks wait behind partly filled batches: keep those small
    auto result = run_registered(spec, o, opts);
    BOOST_TEST_CONTEXT(name << " " << state) {
      BOOST_TEST(total(result, "late_events_accepted") > 0);
      BOOST_TEST(total(result, "late_events_dropped") == 0);
      if (state == "tiered") {
        // Events went to the p-buckets. (Whether re-executions then read them from disk or while
        // their writes were still in flight depends on timing; tiered_store_test covers both.)
        BOOST_TEST(total(result, "state_destage_blocks") > 0);
        BOOST_TEST(total(result, "state_blocks_lost") == 0);
      }
      for (const auto& out : outputs) {
        auto lines = sorted_lines((dir / (state + "-" + out + ".txt")).string());
        BOOST_TEST(!lines.empty());
        if (state == "memory")
          memory[out] = lines;
        else
          BOOST_TEST(lines == memory[out], out << ": tiered and memory results differ");
      }
    }
  }
  std::filesystem::remove_all(dir);
  return memory;
}

/// Small m-buckets and blocks so that every window spills, several past windows, random seed.
std::map<std::string, std::string> small(std::string events, std::string per_window, std::string seed) {
  return {{"events", std::move(events)}, {"events-per-window", std::move(per_window)},
          {"past-windows", "3"},        {"memory-events", "100"},
          {"block-events", "64"},       {"seed", std::move(seed)},
          {"late-trigger", "every-ms:5"}};
}

}  // namespace

BOOST_AUTO_TEST_CASE(delay_model_follows_the_truncated_log_normal) {
  aion::delay_model d{100};
  std::map<std::int64_t, int> counts;
  const int n = 200'000;
  for (int i = 0; i < n; ++i) ++counts[d.windows_late(5)];
  BOOST_TEST(counts.rbegin()->first == 5);  // never more than the cap
  // P(0..2) of max(0, round(X) - 1), X ~ LogNormal(0, 1), truncated at 5 (see the reference).
  BOOST_TEST(counts[0] / double(n) == 0.678, boost::test_tools::tolerance(0.01));
  BOOST_TEST(counts[1] / double(n) == 0.168, boost::test_tools::tolerance(0.03));
  BOOST_TEST(counts[2] / double(n) == 0.077, boost::test_tools::tolerance(0.05));
  aion::delay_model warmup{1};
  for (int i = 0; i < 1000; ++i) BOOST_TEST(warmup.windows_late(0) == 0);
}

BOOST_AUTO_TEST_CASE(lateness_and_late_trigger_options_parse_or_say_what_is_wrong) {
  BOOST_TEST(aion::parse_lateness_option("past-windows", 1000, 3).as_fixed()->ms == 3000);
  BOOST_TEST(aion::parse_lateness_option("fixed:250", 1000, 3).as_fixed()->ms == 250);
  BOOST_CHECK_THROW(aion::parse_lateness_option("fixed:x", 1000, 3), std::invalid_argument);
  job_registry registry;
  aion::register_jobs(registry);
  const auto& spec = registry.find("aion-average");
  auto o = spec.make_options();
  o.set("late-trigger", "every-ms:0");
  try {
    spec.build(o);
    BOOST_FAIL("accepted every-ms:0");
  } catch (const job_error& e) {
    BOOST_TEST(std::string{e.what()}.find("aion-average: ") == 0u);
    BOOST_TEST(std::string{e.what()}.find("every-ms") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(average_is_the_same_with_memory_and_tiered_state) {
  auto r = run_both("aion-average", small("6000", "500", "7"), {"average"});
  BOOST_TEST(r["average"].size() == 12u);
  BOOST_TEST(r["average"].front() == "0 1 1");
}

BOOST_AUTO_TEST_CASE(bigrams_are_the_same_with_memory_and_tiered_state) {
  run_both("aion-bigrams", small("3000", "300", "8"), {"bigrams"});
}

BOOST_AUTO_TEST_CASE(stock_market_is_the_same_with_memory_and_tiered_state) {
  auto args = small("6000", "600", "9");
  args["symbols"] = "20";
  run_both("aion-stock", args, {"rolling", "warnings", "correlation"});
}

BOOST_AUTO_TEST_CASE(linear_road_is_the_same_with_memory_and_tiered_state) {
  auto args = small("8000", "800", "10");
  args["cars"] = "200";
  args["segments"] = "3";
  auto r = run_both("aion-linear-road", args, {"segment_stats", "accidents", "tolls"});
  // The workload is not trivial: some windows have accidents and some segments pay tolls.
  BOOST_TEST(std::any_of(r["accidents"].begin(), r["accidents"].end(),
                         [](const std::string& l) { return l.find(" 0 0") == std::string::npos; }));
  BOOST_TEST(std::any_of(r["tolls"].begin(), r["tolls"].end(),
                         [](const std::string& l) { return l.substr(l.rfind(' ')) != " 0"; }));
}

BOOST_AUTO_TEST_CASE(a_paced_event_source_resumes_from_a_checkpoint_without_waiting) {
  job_registry registry;
  aion::register_jobs(registry);
  const auto& spec = registry.find("aion-average");
  auto o = spec.make_options();
  o.set("events", "1500");
  o.set("rate", "1000");  // 1.5 s paced; the checkpoint comes after about 1 s
  auto j = spec.build(o);
  const auto make_source = j.graph().node(0).make_source;
  const auto make_timestamps = j.graph().node(1).make_operator;
  instance_info info;
  auto all_of = [&](source_logic& s, emitter& out) {
    while (s.pull(64, out)) {
    }
  };
  test::event_times straight{make_timestamps(info)};
  auto reference = make_source(info);
  reference->open();
  all_of(*reference, straight);
  BOOST_REQUIRE_EQUAL(straight.times.size(), 1500u);

  test::event_times resumed{make_timestamps(info)};
  std::vector<std::uint8_t> state;
  {
    auto first = make_source(info);
    BOOST_TEST(first->replayable());
    first->open();
    while (resumed.times.size() < 1000) first->pull(64, resumed);
    state = test::snapshot_of(*first);
  }
  auto second = make_source(info);
  second->open();
  const auto started = std::chrono::steady_clock::now();
  test::restore_from(*second, state);
  // replaying ~1000 events paced at 1000/s would take a second; unpaced it takes milliseconds
  const auto restore_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
  BOOST_TEST(restore_ms < 500);
  all_of(*second, resumed);
  BOOST_TEST(resumed.times.size() == 1500u);
  BOOST_TEST(resumed.times == straight.times);
}
