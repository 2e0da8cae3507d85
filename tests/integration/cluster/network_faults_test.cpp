// network_faults: example-late-windows on three tidemark-node processes while every link drops,
// duplicates and reorders about 5% of the frames and delays each by 5-20 ms, and two nodes are
// cut off from each other for about a second: the reliable channels lose and repeat nothing, so
// the results table equals, row for row, an embedded run's without faults; the nodes' counters
// show the faults really happened. A node cut off from the coordinator in a run with checkpoints
// is recovered elsewhere and fences itself, and the table is right all the same. A node started
// without --allow-faults refuses faults.
#define BOOST_TEST_MODULE network_faults
#include <boost/test/unit_test.hpp>

#include <future>

#include "../../support/result_rows.hpp"
#include "../../support/temp_dir.hpp"
#include "node_processes.hpp"
#include "tidemark/runtime/faults.hpp"

using namespace tidemark;
using namespace std::chrono_literals;

namespace {

job_options late_windows(const job_spec& spec, const std::string& table, std::int64_t rate) {
  auto o = spec.make_options();
  o.set("events", "40000");
  o.set("keys", "20");
  o.set("parallelism", "3");
  o.set("rate", std::to_string(rate));
  o.set("table", table);
  return o;
}

/// Drop, duplicate and reorder 5% of what node `i` sends to every peer, delayed 5-20 ms; `cut`:
/// the nodes it cannot reach.
fault_command lossy(std::size_t i, std::set<std::string> cut = {}) {
  fault_command cmd;
  link_faults l;
  l.drop = 0.05;
  l.duplicate = 0.05;
  l.reorder = 0.05;
  l.delay = 5ms;
  l.jitter = 15ms;
  cmd.links["*"] = l;
  cmd.unreachable = std::move(cut);
  cmd.seed = 1000 + i;
  return cmd;
}

std::vector<std::string> allow_faults(std::size_t) { return {"--allow-faults"}; }

/// Frames nodes n1 and n2 dropped on purpose so far.
std::uint64_t dropped_by_n1_n2(test::node_processes& nodes) {
  return nodes.status(0).fault_dropped + nodes.status(1).fault_dropped;
}

}  // namespace

BOOST_AUTO_TEST_CASE(lossy_links_and_a_partition_give_the_table_of_a_run_without_faults) {
  test::temp_dir dir{"network-faults"};
  test::node_processes nodes{3, allow_faults};
  nodes.cluster.faults_allowed = true;
  const auto& spec = nodes.registry.find("example-late-windows");

  run_options quiet;
  quiet.print_summary = false;
  run_registered(spec, late_windows(spec, dir / "reference", 0), quiet);
  const auto expected = test::table_rows(dir / "reference", "results");
  BOOST_REQUIRE(expected.size() > 300u);

  auto& c = nodes.cluster;
  for (std::size_t i = 0; i < 3; ++i) inject_faults(c, c.nodes[i].id, lossy(i));
  c.pins = {{"results", "n1"}};  // the sink's table is one directory
  auto running = std::async(std::launch::async, [&] {
    return run_on_cluster(spec, late_windows(spec, dir / "results", 8000), c, quiet);
  });
  BOOST_REQUIRE(running.wait_for(1500ms) == std::future_status::timeout);
  // n1 and n2 cannot reach each other for a second (and drop nothing else meanwhile)
  fault_command cut;
  cut.unreachable = {"n2"};
  inject_faults(c, "n1", cut);
  cut.unreachable = {"n1"};
  inject_faults(c, "n2", cut);
  const auto before = dropped_by_n1_n2(nodes);
  BOOST_REQUIRE_MESSAGE(running.wait_for(1s) == std::future_status::timeout,
                        "the job ended before the partition healed: too short to test it");
  const auto during = dropped_by_n1_n2(nodes) - before;
  inject_faults(c, "n1", lossy(0));
  inject_faults(c, "n2", lossy(1));
  BOOST_TEST_MESSAGE("the partition dropped " << during << " frames");
  BOOST_TEST(during > 0u);
  const auto result = running.get();
  for (std::size_t i = 0; i < 3; ++i) inject_faults(c, c.nodes[i].id, {});

  test::check_same_rows(expected, test::table_rows(dir / "results", "results"));
  node_status total;
  for (std::size_t i = 0; i < 3; ++i) {
    const auto s = nodes.status(i);
    BOOST_TEST_MESSAGE(s.node << ": dropped " << s.fault_dropped << ", duplicated "
                              << s.fault_duplicated << ", reordered " << s.fault_reordered
                              << ", retransmitted " << s.retransmitted << ", duplicates discarded "
                              << s.duplicates_discarded << ", held behind a gap "
                              << s.lost_frames);
    total.fault_dropped += s.fault_dropped;
    total.fault_duplicated += s.fault_duplicated;
    total.fault_reordered += s.fault_reordered;
    total.retransmitted += s.retransmitted;
    total.duplicates_discarded += s.duplicates_discarded;
    total.lost_frames += s.lost_frames;
  }
  BOOST_TEST(total.fault_dropped > 0u);
  BOOST_TEST(total.fault_duplicated > 0u);
  BOOST_TEST(total.fault_reordered > 0u);
  BOOST_TEST(total.retransmitted > 0u);
  BOOST_TEST(total.duplicates_discarded > 0u);
  BOOST_TEST(total.lost_frames > 0u);
  BOOST_TEST(result.recoveries == 0u);
}

BOOST_AUTO_TEST_CASE(a_node_cut_off_from_the_coordinator_is_replaced_and_fences_itself) {
  test::temp_dir dir{"network-faults-fence"};
  test::node_processes nodes{3, allow_faults};
  nodes.cluster.faults_allowed = true;
  const auto& spec = nodes.registry.find("example-late-windows");

  run_options quiet;
  quiet.print_summary = false;
  run_registered(spec, late_windows(spec, dir / "reference", 0), quiet);
  const auto expected = test::table_rows(dir / "reference", "results");

  auto& c = nodes.cluster;
  c.pins = {{"results", "n1"}};  // n1 holds the sink's table: it must stop before another node
  run_options ro;                // opens it
  ro.print_summary = false;
  ro.checkpoints.dir = dir / "checkpoints";
  ro.checkpoints.interval = 250ms;
  auto running = std::async(std::launch::async, [&] {
    return run_on_cluster(spec, late_windows(spec, dir / "results", 5000), c, ro);
  });
  BOOST_REQUIRE(running.wait_for(2s) == std::future_status::timeout);
  fault_command cut;
  cut.unreachable = {"coordinator"};
  inject_faults(c, "n1", cut);
  // the coordinator gives up on n1 after its 1 s heartbeat timeout; n1 stopped before that
  BOOST_REQUIRE(running.wait_for(2s) == std::future_status::timeout);
  inject_faults(c, "n1", {});
  const auto result = running.get();
  BOOST_TEST(result.recoveries >= 1u);
  BOOST_TEST(nodes.status(0).fault_dropped > 0u);
  test::check_same_rows(expected, test::table_rows(dir / "results", "results"));
}

BOOST_AUTO_TEST_CASE(a_node_started_without_allow_faults_refuses_them) {
  test::node_processes nodes{1};
  nodes.cluster.faults_allowed = true;
  try {
    inject_faults(nodes.cluster, "n1", lossy(0));
    BOOST_FAIL("a node without --allow-faults took injected faults");
  } catch (const std::runtime_error& e) {
    BOOST_TEST_MESSAGE(e.what());
    BOOST_TEST(std::string{e.what()}.find("node 'n1'") != std::string::npos);
    BOOST_TEST(std::string{e.what()}.find("--allow-faults") != std::string::npos);
  }
  BOOST_TEST(nodes.status(0).fault_dropped == 0u);
}
