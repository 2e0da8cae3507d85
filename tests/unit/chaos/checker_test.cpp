// The checker against hand-built histories: a history equal to the reference passes, and each
// kind of violation (lost, repeated, wrong, revisions out of order, watermarks going back) and a
// failed run are reported; the rates around a fault come from the commit times.
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
