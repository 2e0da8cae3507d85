// The checker against hand-built histories: a history equal to the reference passes, and each
// kind of violation (lost, repeated, wrong, revisions out of order, watermarks going back) and a
// failed run are reported; the rates and latencies around a fault come from the commit and
// receive times.
#define BOOST_TEST_MODULE chaos_checker
#include <boost/test/unit_test.hpp>

#include <nlohmann/json.hpp>

#include "../../support/temp_dir.hpp"
#include "tidemark/chaos/checker.hpp"

using namespace tidemark::chaos;

namespace {

constexpr std::int64_t t0 = 1'700'000'000'000;

history_entry entry(std::string id, std::uint32_t revision, std::string value, std::int64_t at_ms,
                    std::int64_t watermark = 0, std::string writer = "history/0") {
  history_entry e;
  e.id = std::move(id);
  e.revision = revision;
  e.value = std::move(value);
  e.commit_ms = t0 + at_ms;
  e.received_ms = e.commit_ms;  // no latency unless a test sets one
  e.checkpoint = static_cast<std::uint64_t>(at_ms / 250 + 1);
  e.watermark = watermark;
  e.writer = std::move(writer);
  return e;
}

// a/0, a/1, b/0, c/0 committed one after another with rising watermarks
std::vector<history_entry> reference() {
  return {entry("a", 0, "1", 0, 10), entry("b", 0, "2", 100, 20), entry("a", 1, "3", 200, 30),
          entry("c", 0, "4", 300, 40)};
}

run_facts facts() {
  return {t0, t0 + 1000, std::nullopt, 0};
}

std::size_t listed(const report& r, violation_kind k) {
  std::size_t n = 0;
  for (const auto& v : r.violations) n += v.kind == k;
  return n;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_run_equal_to_the_reference_passes) {
  auto run = reference();
  // other commit times and writers do not matter, the order per id and writer does
  for (auto& e : run) e.commit_ms += 5000;
  auto r = check(reference(), run, {}, facts());
  BOOST_TEST(r.passed());
  BOOST_TEST(r.violation_count() == 0u);
  BOOST_TEST(r.violations.empty());
  BOOST_TEST(r.run_results == 4u);
  BOOST_TEST(r.summary().rfind("PASSED", 0) == 0u);
  auto j = nlohmann::json::parse(r.to_json());
  BOOST_TEST(j["passed"].get<bool>());
  BOOST_TEST(j["violations"].get<int>() == 0);
}

BOOST_AUTO_TEST_CASE(each_violation_kind_is_found) {
  auto ref = reference();
  {  // lost: c/0 missing
    auto run = ref;
    run.pop_back();
    auto r = check(ref, run, {}, facts());
    BOOST_TEST(r.lost == 1u);
    BOOST_TEST(r.violation_count() == 1u);
    BOOST_REQUIRE_EQUAL(listed(r, violation_kind::lost), 1u);
    BOOST_TEST(r.violations[0].id == "c");
    BOOST_TEST(!r.passed());
    BOOST_TEST(r.summary().find("lost: c revision 0") != std::string::npos, r.summary());
  }
  {  // repeated: b/0 twice (in commit order after everything, so no other violation)
    auto run = ref;
    run.push_back(entry("b", 0, "2", 400, 40));
    auto r = check(ref, run, {}, facts());
    BOOST_TEST(r.repeated == 1u);
    BOOST_TEST(r.violation_count() == 1u);
  }
  {  // wrong: a/1 with another value, and a result the reference does not have
    auto run = ref;
    run[2].value = "999";
    run.push_back(entry("z", 0, "5", 400, 40));
    auto r = check(ref, run, {}, facts());
    BOOST_TEST(r.wrong == 2u);
    BOOST_TEST(r.violation_count() == 2u);
  }
  {  // out of order: a/1 committed before a/0
    auto run = ref;
    std::swap(run[0].commit_ms, run[2].commit_ms);
    std::swap(run[0], run[2]);
    for (auto& e : run) e.watermark = 0;  // keep the watermarks out of it
    auto r = check(ref, run, {}, facts());
    BOOST_TEST(r.out_of_order == 1u);
    BOOST_TEST(r.violation_count() == 1u);
    BOOST_REQUIRE_EQUAL(listed(r, violation_kind::out_of_order), 1u);
  }
  {  // a watermark that goes back within one writer; another writer's lower one is fine
    auto run = ref;
    run[3].watermark = 15;
    run[1].writer = "history/1";
    run[1].watermark = 5;
    auto r = check(ref, run, {}, facts());
    BOOST_TEST(r.watermark_back == 1u);
    BOOST_TEST(r.violation_count() == 1u);
  }
  {  // the listed violations are capped per kind, the counts are not
    std::vector<history_entry> many_ref;
    for (int i = 0; i < 50; ++i) many_ref.push_back(entry("k" + std::to_string(i), 0, "v", i));
    auto r = check(many_ref, {}, {}, facts(), 10);
    BOOST_TEST(r.lost == 50u);
    BOOST_TEST(r.violations.size() == 10u);
  }
}

BOOST_AUTO_TEST_CASE(a_failed_run_fails_the_check_and_says_why) {
  auto f = facts();
  f.error = "node 'n2' sent no heartbeat for 1200 ms";
  auto r = check(reference(), {}, {}, f);
  BOOST_TEST(r.lost == 4u);
  BOOST_TEST(!r.passed());
  BOOST_TEST(r.summary().find("the run failed: node 'n2'") != std::string::npos, r.summary());
  auto j = nlohmann::json::parse(r.to_json());
  BOOST_TEST(j["run"]["error"].get<std::string>() == *f.error);
}

BOOST_AUTO_TEST_CASE(rates_around_a_fault_come_from_the_commit_times) {
  // 10 results per second for 5 s, nothing for 2 s (the fault), 10 per second for 5 s
  std::vector<history_entry> run;
  for (int i = 0; i < 50; ++i) run.push_back(entry("x" + std::to_string(i), 0, "v", i * 100));
  for (int i = 0; i < 50; ++i)
    run.push_back(entry("y" + std::to_string(i), 0, "v", 7000 + i * 100));
  applied_fault f;
  f.planned.kind = fault_kind::pause;
  f.planned.targets = {"n2"};
  f.started_ms = t0 + 5000;
  f.healed_ms = t0 + 7000;
  run_facts rf{t0, t0 + 12000, std::nullopt, 1};
  auto r = check(run, run, {f}, rf);
  BOOST_TEST(r.passed());
  BOOST_REQUIRE_EQUAL(r.faults.size(), 1u);
  const auto& e = r.faults[0];
  BOOST_TEST(e.rate_before == 10.0, boost::test_tools::tolerance(0.01));
  BOOST_TEST(e.rate_during == 0.0);
  BOOST_TEST(e.rate_after == 10.0, boost::test_tools::tolerance(0.01));
  BOOST_TEST(e.longest_commit_gap_s == 2.1, boost::test_tools::tolerance(0.01));  // 4.9 s -> 7.0 s
  BOOST_REQUIRE(e.recovery_s);
  BOOST_TEST(*e.recovery_s == 0.0, boost::test_tools::tolerance(0.01));
  BOOST_REQUIRE_EQUAL(r.timeline.size(), 12u);
  BOOST_TEST(r.timeline[0].results == 10.0);
  BOOST_TEST(r.timeline[5].results == 0.0);
  BOOST_TEST(r.timeline[6].commit_gap_s >= 1.9);

  // the timeline round-trips through JSON, and the PNG is written
  auto [faults, back] = faults_from_json(faults_to_json({f}, rf));
  BOOST_REQUIRE_EQUAL(faults.size(), 1u);
  BOOST_TEST(describe(faults[0].planned) == describe(f.planned));
  BOOST_TEST(faults[0].healed_ms == f.healed_ms);
  BOOST_TEST(back.recoveries == 1u);
  tidemark::test::temp_dir dir{"chaos-checker"};
  write_timeline_png(r, dir / "timeline.png");
  BOOST_TEST(std::filesystem::file_size(dir / "timeline.png") > 1000u);
}

BOOST_AUTO_TEST_CASE(latency_during_and_after_a_fault_comes_from_receive_and_commit_times) {
  // before the fault (0-5 s): 50 results with 100 ms latency; during it (5-7 s): 20 results from
  // 5.2 s every 90 ms with latencies 50, 100, ..., 1000 ms; after it healed: 40 results from 7.3 s
  // every 100 ms, the first 4 with 3 s latency (the backlog), the others 200 ms
  std::vector<history_entry> run;
  auto add = [&](const std::string& id, std::int64_t at_ms, std::int64_t latency_ms) {
    run.push_back(entry(id, 0, "v", at_ms));
    run.back().received_ms = run.back().commit_ms - latency_ms;
  };
  for (int i = 0; i < 50; ++i) add("x" + std::to_string(i), i * 100, 100);
  for (int i = 0; i < 20; ++i) add("y" + std::to_string(i), 5200 + i * 90, (i + 1) * 50);
  for (int i = 0; i < 40; ++i) add("z" + std::to_string(i), 7300 + i * 100, i < 4 ? 3000 : 200);
  applied_fault f;
  f.planned.kind = fault_kind::partition;
  f.planned.targets = {"n1"};
  f.started_ms = t0 + 5000;
  f.healed_ms = t0 + 7000;
  run_facts rf{t0, t0 + 13000, std::nullopt, 0};  // the last second has no result
  auto r = check(run, run, {f}, rf);
  BOOST_TEST(r.passed());
  BOOST_REQUIRE_EQUAL(r.faults.size(), 1u);
  const auto& e = r.faults[0];
  const auto tol = boost::test_tools::tolerance(1e-9);
  // nearest rank over 20: the 10th (p50) and the 20th (p99) smallest
  BOOST_TEST(e.latency_during.results == 20u);
  BOOST_TEST(e.latency_during.p50_s == 0.5, tol);
  BOOST_TEST(e.latency_during.p99_s == 1.0, tol);
  // over 40: the 20th is 200 ms, the 40th 3 s
  BOOST_TEST(e.latency_after.results == 40u);
  BOOST_TEST(e.latency_after.p50_s == 0.2, tol);
  BOOST_TEST(e.latency_after.p99_s == 3.0, tol);
  BOOST_REQUIRE(e.first_result_after_start_s);
  BOOST_TEST(*e.first_result_after_start_s == 0.2, tol);
  BOOST_REQUIRE(e.first_result_after_heal_s);
  BOOST_TEST(*e.first_result_after_heal_s == 0.3, tol);
  // the whole run, 110 results: 52 at or below 100 ms, so the 55th is 200 ms; the top 4 are 3 s
  BOOST_TEST(r.latency.results == 110u);
  BOOST_TEST(r.latency.p50_s == 0.2, tol);
  BOOST_TEST(r.latency.p99_s == 3.0, tol);
  // second 5 holds the fault's first 9 results (50..450 ms): the 5th and the 9th
  BOOST_REQUIRE_EQUAL(r.timeline.size(), 13u);
  BOOST_TEST(r.timeline[5].results == 9.0);
  BOOST_TEST(r.timeline[5].latency_p50_s == 0.25, tol);
  BOOST_TEST(r.timeline[5].latency_p99_s == 0.45, tol);
  BOOST_TEST(r.timeline[12].results == 0.0);
  BOOST_TEST(r.timeline[12].latency_p99_s == 0.0);

  auto j = nlohmann::json::parse(r.to_json());
  const auto& jf = j["faults"][0];
  BOOST_TEST(jf["latency_during"]["p99_s"].get<double>() == 1.0, tol);
  BOOST_TEST(jf["latency_after"]["p50_s"].get<double>() == 0.2, tol);
  BOOST_TEST(jf["first_result_after_heal_s"].get<double>() == 0.3, tol);
  BOOST_TEST(j["latency"]["p99_s"].get<double>() == 3.0, tol);
  BOOST_TEST(j["timeline"][5]["latency_p50_s"].get<double>() == 0.25, tol);

  // a fault after the last result: nothing during or after it, no first result
  applied_fault late = f;
  late.started_ms = t0 + 11500;
  late.healed_ms = t0 + 11800;
  auto r2 = check(run, run, {late}, rf);
  BOOST_TEST(r2.faults[0].latency_during.results == 0u);
  BOOST_TEST(!r2.faults[0].first_result_after_start_s);
  BOOST_TEST(
      nlohmann::json::parse(r2.to_json())["faults"][0]["first_result_after_start_s"].is_null());
}
