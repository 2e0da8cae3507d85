// The fault command each node gets while several network and storage faults hold at once: their
// union (highest probability and delay per link, every unreachable peer, the slowest disk), and a
// partition seen from both sides.
#define BOOST_TEST_MODULE chaos_fault_commands
#include <boost/test/unit_test.hpp>

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
