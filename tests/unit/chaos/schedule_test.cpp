// Fault schedules: scripted and random entries read from YAML, the deterministic expansion of
// random faults from a seed, and errors that name the file, the entry and the field.
#define BOOST_TEST_MODULE chaos_schedule
#include <boost/test/unit_test.hpp>

#include <set>

#include "../../support/environment.hpp"
#include "../../support/thrown.hpp"
#include "tidemark/chaos/schedule.hpp"

using namespace tidemark::chaos;
using namespace std::chrono_literals;

namespace {

const std::vector<std::string> nodes{"n1", "n2", "n3"};

std::string error_of(const std::string& yaml) {
  try {
    parse_schedule(yaml, "s.yaml");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

BOOST_AUTO_TEST_CASE(durations_read_units) {
  BOOST_TEST(parse_duration("250ms").count() == 250);
  BOOST_TEST(parse_duration("5s").count() == 5000);
  BOOST_TEST(parse_duration("1.5s").count() == 1500);
  BOOST_TEST(parse_duration("2m").count() == 120000);
  BOOST_TEST(parse_duration("40").count() == 40);
  BOOST_CHECK_THROW(parse_duration("5 parsecs"), std::invalid_argument);
  BOOST_CHECK_THROW(parse_duration("soon"), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(scripted_faults_keep_every_field) {
  auto s = parse_schedule(R"(
faults:
  - {at: 5s, fault: kill, targets: [n2], duration: 2s}
  - {at: 1s, fault: partition, sides: [[n1], [n2, n3]], duration: 3s}
  - {at: 8s, fault: delay, targets: [n1], to: [n3], delay: 50ms, jitter: 20ms, duration: 1s}
  - {at: 9s, fault: drop, targets: [n3], probability: 0.25, duration: 1s}
  - {at: 10s, fault: slow-disk, targets: [n1], delay: 200ms, duration: 4s}
)",
                          "s.yaml");
  BOOST_REQUIRE_EQUAL(s.scripted.size(), 5u);
  BOOST_TEST(!s.random);
  const auto& kill = s.scripted[0];
  BOOST_TEST((kill.kind == fault_kind::kill));
  BOOST_TEST(kill.at.count() == 5000);
  BOOST_TEST(kill.duration.count() == 2000);
  BOOST_TEST(kill.targets == std::vector<std::string>{"n2"});
  BOOST_TEST(kill.origin == "faults[0]");
  BOOST_REQUIRE_EQUAL(s.scripted[1].sides.size(), 2u);
  BOOST_TEST(s.scripted[1].sides[1] == (std::vector<std::string>{"n2", "n3"}));
  BOOST_TEST(s.scripted[2].peers == std::vector<std::string>{"n3"});
  BOOST_TEST(s.scripted[2].delay.count() == 50);
  BOOST_TEST(s.scripted[2].jitter.count() == 20);
  BOOST_TEST(s.scripted[3].probability == 0.25);
  BOOST_TEST((s.scripted[4].kind == fault_kind::slow_disk));

  // expanded in time order, within the run's length
  auto faults = expand(s, 1, 9500ms, nodes);
  BOOST_REQUIRE_EQUAL(faults.size(), 4u);
  BOOST_TEST((faults[0].kind == fault_kind::partition));
  BOOST_TEST((faults[1].kind == fault_kind::kill));
  BOOST_TEST((faults[3].kind == fault_kind::drop));
}

BOOST_AUTO_TEST_CASE(random_faults_are_a_function_of_the_seed) {
  auto s = parse_schedule(R"(
random:
  kinds: [kill, pause, partition, drop, delay, slow-disk]
  every: 2s..4s
  duration: 500ms..1500ms
  start: 1s
)",
                          "r.yaml");
  auto a = expand(s, 42, 60s, nodes);
  auto b = expand(s, 42, 60s, nodes);
  auto c = expand(s, 43, 60s, nodes);
  BOOST_REQUIRE(a.size() >= 15u);  // one every 2-4 s over 59 s
  BOOST_REQUIRE(a.size() <= 30u);
  BOOST_REQUIRE_EQUAL(a.size(), b.size());
  bool differs = a.size() != c.size();
  std::set<fault_kind> kinds;
  for (std::size_t i = 0; i < a.size(); ++i) {
    BOOST_TEST(describe(a[i]) == describe(b[i]));
    if (i < c.size()) differs |= describe(a[i]) != describe(c[i]);
    BOOST_TEST(a[i].at.count() >= 1000);
    if (i > 0) {
      BOOST_TEST((a[i].at - a[i - 1].at).count() >= 2000);
      BOOST_TEST((a[i].at - a[i - 1].at).count() <= 4000);
    }
    BOOST_TEST(a[i].duration.count() >= 500);
    BOOST_TEST(a[i].duration.count() <= 1500);
    BOOST_REQUIRE_EQUAL(a[i].targets.size(), 1u);
    BOOST_TEST((a[i].targets[0] == "n1" || a[i].targets[0] == "n2" || a[i].targets[0] == "n3"));
    if (a[i].kind == fault_kind::drop) BOOST_TEST(a[i].probability > 0);
    if (a[i].kind == fault_kind::slow_disk) BOOST_TEST(a[i].delay.count() > 0);
    kinds.insert(a[i].kind);
  }
  BOOST_TEST(differs);
  BOOST_TEST(kinds.size() >= 4u);  // 15+ draws over 6 kinds
  // the schedule's own seed wins over the run's
  auto seeded = parse_schedule("random: {kinds: [kill], seed: 7}", "r.yaml");
  auto x = expand(seeded, 1, 60s, nodes);
  auto y = expand(seeded, 2, 60s, nodes);
  BOOST_REQUIRE_EQUAL(x.size(), y.size());
  for (std::size_t i = 0; i < x.size(); ++i) BOOST_TEST(describe(x[i]) == describe(y[i]));
}

BOOST_AUTO_TEST_CASE(errors_name_the_file_the_entry_and_the_field) {
  auto e = error_of("faults:\n  - {at: 5s, fault: explode, targets: [n1], duration: 1s}\n");
  BOOST_TEST(
      e.find("schedule 's.yaml': faults[0].fault: unknown fault 'explode'") != std::string::npos,
      e);
  e = error_of(
      "faults:\n  - {at: 5s, fault: kill, targets: [n1]}\n  - {at: 5s, fault: pause, targets: "
      "[n1]}\n");
  BOOST_TEST(e.find("faults[1].duration: missing") != std::string::npos, e);
  e = error_of("faults:\n  - {at: soon, fault: kill, targets: [n1]}\n");
  BOOST_TEST(e.find("faults[0].at: 'soon' is not a duration") != std::string::npos, e);
  e = error_of("faults:\n  - {at: 1s, fault: drop, targets: [n1], probability: 2, duration: 1s}\n");
  BOOST_TEST(e.find("faults[0].probability: must be within [0, 1]") != std::string::npos, e);
  e = error_of("faults:\n  - {at: 1s, fault: kill, targets: [n1], delay: 1s}\n");
  BOOST_TEST(
      e.find("faults[0].delay: only delay, slow-disk and netem have a delay") != std::string::npos,
      e);
  e = error_of("faults:\n  - {at: 1s, fault: kill}\n");
  BOOST_TEST(e.find("faults[0].targets: missing") != std::string::npos, e);
  e = error_of("faults:\n  - {at: 1s, fault: kill, target: [n1]}\n");
  BOOST_TEST(e.find("faults[0].target: unknown field") != std::string::npos, e);
  e = error_of("random: {kinds: [kill], every: 5s..2s}\n");
  BOOST_TEST(
      e.find("random.every: '5s..2s': the upper bound is below the lower one") != std::string::npos,
      e);
  e = error_of("random: {every: 5s}\n");
  BOOST_TEST(e.find("random.kinds: missing") != std::string::npos, e);
  e = error_of("pauses: []\n");
  BOOST_TEST(e.find("schedule 's.yaml': schedule.pauses: unknown field") != std::string::npos, e);
  e = error_of("faults: [\n");
  BOOST_TEST(e.find("schedule 's.yaml'") != std::string::npos, e);

  // a node the cluster does not have is named at expansion
  auto s = parse_schedule("faults:\n  - {at: 1s, fault: pause, targets: [n9], duration: 1s}\n",
                          "s.yaml");
  auto msg = tidemark::test::thrown<std::runtime_error>([&] { expand(s, 1, 10s, nodes); });
  BOOST_TEST(msg.find("faults[0].targets: no node 'n9' in the cluster (nodes: n1, n2, n3)") !=
                 std::string::npos,
             msg);
  BOOST_CHECK_THROW(load_schedule("/nonexistent/schedule.yaml"), std::runtime_error);
}

BOOST_AUTO_TEST_CASE(netem_faults_read_delay_jitter_and_loss) {
  auto s = parse_schedule(
      "faults:\n"
      "  - {at: 2s, fault: netem, targets: [n2], delay: 40ms, jitter: 10ms, loss: 0.02, "
      "duration: 4s}\n"
      "  - {at: 3s, fault: netem, targets: [n1, n3], loss: 0.5, duration: 1s}\n",
      "s.yaml");
  BOOST_REQUIRE_EQUAL(s.scripted.size(), 2u);
  const auto& f = s.scripted[0];
  BOOST_TEST((f.kind == fault_kind::netem));
  BOOST_TEST(f.delay.count() == 40);
  BOOST_TEST(f.jitter.count() == 10);
  BOOST_TEST(f.probability == 0.02);  // the loss
  BOOST_TEST(f.duration.count() == 4000);
  BOOST_TEST(describe(f) == "2s netem n2 loss=0.02 delay=0.04s jitter=0.01s for 4s (faults[0])");
  BOOST_TEST(s.scripted[1].delay.count() == 0);
  BOOST_TEST(s.scripted[1].probability == 0.5);
  BOOST_TEST(std::string{to_string(fault_kind::netem)} == "netem");
  BOOST_TEST(!is_process_fault(fault_kind::netem));

  auto e = error_of("faults:\n  - {at: 1s, fault: netem, targets: [n1], duration: 1s}\n");
  BOOST_TEST(
      e.find("faults[0].delay: netem needs a delay, a jitter or a loss") != std::string::npos, e);
  e = error_of("faults:\n  - {at: 1s, fault: netem, targets: [n1], loss: 1.5, duration: 1s}\n");
  BOOST_TEST(e.find("faults[0].loss: must be within [0, 1]") != std::string::npos, e);
  e = error_of("faults:\n  - {at: 1s, fault: drop, targets: [n1], loss: 0.1, duration: 1s}\n");
  BOOST_TEST(e.find("faults[0].loss: only netem has a loss") != std::string::npos, e);
  e = error_of(
      "faults:\n  - {at: 1s, fault: netem, targets: [n1], to: [n2], delay: 5ms, duration: 1s}\n");
  BOOST_TEST(e.find("faults[0].to: only drop, delay, duplicate and reorder have peers") !=
                 std::string::npos,
             e);
  e = error_of(
      "faults:\n  - {at: 1s, fault: netem, targets: [n1], probability: 0.1, "
      "duration: 1s}\n");
  BOOST_TEST(e.find("faults[0].probability: only drop") != std::string::npos, e);

  // random netem faults take the random delay, jitter and probability (as their loss)
  auto r = parse_schedule(
      "random: {kinds: [netem], every: 2s, duration: 1s, delay: 30ms, jitter: 5ms, "
      "probability: 0.1}\n",
      "s.yaml");
  auto faults = expand(r, 3, 5s, nodes);
  BOOST_REQUIRE_EQUAL(faults.size(), 3u);  // at 0, 2 and 4 s
  for (const auto& x : faults) {
    BOOST_TEST((x.kind == fault_kind::netem));
    BOOST_TEST(x.delay.count() == 30);
    BOOST_TEST(x.jitter.count() == 5);
    BOOST_TEST(x.probability == 0.1);
  }
}

BOOST_AUTO_TEST_CASE(the_example_schedule_reads_and_expands) {
  auto s = load_schedule(tidemark::test::source_dir() + "/examples/chaos/schedule.yaml");
  BOOST_TEST(s.scripted.size() == 6u);
  BOOST_REQUIRE(s.random);
  auto faults = expand(s, 1, std::chrono::minutes{2}, nodes);
  BOOST_TEST(faults.size() >= 6u + 7u);  // the scripted ones, then one every 6-10 s from 45 s
  std::set<fault_kind> kinds;
  for (const auto& f : faults) kinds.insert(f.kind);
  BOOST_TEST(kinds.size() >= 6u);
}
