// The runner's parts that need no cluster: the fault command each node gets while several network
// and storage faults hold at once (their union: highest probability and delay per link, every
// unreachable peer, the slowest disk; a partition seen from both sides), and the refusals before
// anything runs (a job without a history option, faults this run cannot apply).
#define BOOST_TEST_MODULE chaos_runner
#include <boost/test/unit_test.hpp>

#include "../../support/temp_dir.hpp"
#include "../../support/thrown.hpp"
#include "tidemark/chaos/runner.hpp"

using namespace tidemark;
using namespace tidemark::chaos;
using namespace std::chrono_literals;

namespace {

cluster_config three_nodes() {
  cluster_config c;
  for (const char* id : {"n1", "n2", "n3"}) c.nodes.push_back({id, "tcp://127.0.0.1:1", ""});
  return c;
}

fault make(fault_kind kind, std::vector<std::string> targets) {
  fault f;
  f.kind = kind;
  f.targets = std::move(targets);
  return f;
}

}  // namespace

BOOST_AUTO_TEST_CASE(link_and_disk_faults_of_a_node_are_combined) {
  auto drop = make(fault_kind::drop, {"n1"});
  drop.probability = 0.2;
  auto more_drop = make(fault_kind::drop, {"n1", "n2"});
  more_drop.probability = 0.5;
  more_drop.peers = {"n3"};
  auto delay = make(fault_kind::delay, {"n1"});
  delay.delay = 80ms;
  delay.jitter = 10ms;
  auto slow = make(fault_kind::slow_disk, {"n1"});
  slow.delay = 150ms;
  auto errors = make(fault_kind::disk_errors, {"n2"});
  errors.probability = 0.1;
  const auto c = three_nodes();
  const auto n1 = command_for("n1", {&drop, &more_drop, &delay, &slow, &errors}, c, 5);
  BOOST_REQUIRE_EQUAL(n1.links.size(), 2u);
  BOOST_TEST(n1.links.at("*").drop == 0.2);
  BOOST_TEST(n1.links.at("*").delay.count() == 80);
  BOOST_TEST(n1.links.at("*").jitter.count() == 10);
  BOOST_TEST(n1.links.at("n3").drop == 0.5);
  BOOST_TEST(n1.storage.write_delay.count() == 150);
  BOOST_TEST(n1.storage.fail_writes == 0.0);  // n2's disk errors are n2's
  BOOST_TEST(n1.unreachable.empty());
  const auto n2 = command_for("n2", {&drop, &more_drop, &delay, &slow, &errors}, c, 5);
  BOOST_REQUIRE_EQUAL(n2.links.size(), 1u);
  BOOST_TEST(n2.links.at("n3").drop == 0.5);
  BOOST_TEST(n2.storage.fail_writes == 0.1);
  BOOST_TEST(n2.storage.write_delay.count() == 0);
  // nothing in force heals everything; seeds differ per node and follow the run's seed
  const auto n3 = command_for("n3", {&drop, &more_drop, &delay, &slow, &errors}, c, 5);
  BOOST_TEST(!n3.storage.any());
  BOOST_TEST(n3.links.empty());
  BOOST_TEST(n1.seed != n2.seed);
  BOOST_TEST(command_for("n1", {}, c, 5).seed == n1.seed);
  BOOST_TEST(command_for("n1", {}, c, 6).seed != n1.seed);
}

BOOST_AUTO_TEST_CASE(a_partition_cuts_every_side_off_from_the_others) {
  auto sides = make(fault_kind::partition, {});
  sides.sides = {{"n1", "coordinator"}, {"n2", "n3"}};
  const auto c = three_nodes();
  BOOST_TEST((command_for("n1", {&sides}, c, 1).unreachable == std::set<std::string>{"n2", "n3"}));
  BOOST_TEST((command_for("n2", {&sides}, c, 1).unreachable ==
              std::set<std::string>{"n1", "coordinator"}));
  // targets only: cut off from every other node and the coordinator
  auto isolate = make(fault_kind::partition, {"n3"});
  BOOST_TEST((command_for("n3", {&isolate}, c, 1).unreachable ==
              std::set<std::string>{"coordinator", "n1", "n2"}));
  BOOST_TEST((command_for("n1", {&isolate}, c, 1).unreachable == std::set<std::string>{"n3"}));
  // two partitions at once: the union
  BOOST_TEST((command_for("n1", {&sides, &isolate}, c, 1).unreachable ==
              std::set<std::string>{"n2", "n3"}));
}

BOOST_AUTO_TEST_CASE(what_cannot_run_is_refused_before_anything_runs) {
  tidemark::test::temp_dir dir{"chaos-runner"};
  job_spec no_history{"no-history",
                      "",
                      {{"events", "10", ""}},
                      nullptr,
                      [](const job_options&) -> job { throw std::logic_error("must not build"); },
                      nullptr};
  chaos_options o;
  o.out = dir.path() / "out";
  auto msg = tidemark::test::thrown<std::runtime_error>(
      [&] { run_chaos(no_history, no_history.make_options(), three_nodes(), {}, o); });
  BOOST_TEST(msg.find("job 'no-history' has no 'history' option") != std::string::npos, msg);

  job_spec with_history = no_history;
  with_history.name = "with-history";
  with_history.options.push_back({"history", "", ""});
  auto kill = make(fault_kind::kill, {"n2"});
  kill.origin = "faults[0]";
  msg = tidemark::test::thrown<std::runtime_error>(
      [&] { run_chaos(with_history, with_history.make_options(), three_nodes(), {kill}, o); });
  BOOST_TEST(
      msg.find("kill n2 (stays down) (faults[0]): kill, pause and restart need nodes started "
               "by this tool") != std::string::npos,
      msg);
  auto drop = make(fault_kind::drop, {"n1"});
  drop.probability = 0.1;
  drop.duration = 1000ms;
  msg = tidemark::test::thrown<std::runtime_error>(
      [&] { run_chaos(with_history, with_history.make_options(), three_nodes(), {drop}, o); });
  BOOST_TEST(msg.find("network and storage faults need a fault injector") != std::string::npos,
             msg);
  o.inject = [](const cluster_config&, const std::string&, const fault_command&) {
    BOOST_FAIL("no fault may be sent");
  };
  msg = tidemark::test::thrown<std::runtime_error>(
      [&] { run_chaos(with_history, with_history.make_options(), three_nodes(), {drop}, o); });
  BOOST_TEST(msg.find("the cluster file does not say 'faults: allow'") != std::string::npos, msg);
  BOOST_TEST(!std::filesystem::exists(dir.path() / "out"));  // nothing ran, nothing written
}
