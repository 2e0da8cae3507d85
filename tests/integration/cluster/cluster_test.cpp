// Three tidemark-node processes on loopback run example-window-count with its keyed window stage
// spread over all three: results equal the embedded run's, a slow sink on another node keeps
// buffering bounded and loses nothing, and a node that dies is reported within the heartbeat
// timeout with the operators it hosted. Nodes outlive no test: when the process that started them
// dies, they stop by themselves.
#define BOOST_TEST_MODULE cluster
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <future>
#include <set>
#include <sstream>
#include <thread>

#include "../../support/lines.hpp"
#include "../../support/wait_until.hpp"
#include "node_processes.hpp"

using namespace tidemark;
using namespace std::chrono_literals;

namespace {

using tidemark::test::sorted_lines;

// A result line ends with the window's count.
std::uint64_t total_count(const std::vector<std::string>& lines) {
  std::uint64_t total = 0;
  for (const auto& l : lines) total += std::stoull(l.substr(l.rfind(' ') + 1));
  return total;
}

job_options window_count(const job_spec& spec, std::int64_t events, const std::string& out) {
  auto o = spec.make_options();
  o.set("events", std::to_string(events));
  o.set("keys", "37");
  o.set("window-ms", "500");
  o.set("parallelism", "3");
  o.set("gather", "true");
  o.set("out", out);
  return o;
}

}  // namespace

// First in the file, while this process has no other thread, as fork wants.
BOOST_AUTO_TEST_CASE(nodes_stop_when_the_process_that_started_them_dies) {
  // orphans are adopted by this process instead of init, so it can wait for the node
  BOOST_REQUIRE(::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
  int ready[2];
  BOOST_REQUIRE(::pipe(ready) == 0);
  const pid_t starter = ::fork();
  BOOST_REQUIRE(starter >= 0);
  if (starter == 0) {  // starts a node, says its pid, and waits to be killed: no destructor runs
    ::close(ready[0]);
    try {
      test::node_processes nodes{1};
      const pid_t node = nodes.pid(0);
      if (::write(ready[1], &node, sizeof node) == sizeof node) ::pause();
    } catch (...) {
    }
    ::_exit(1);
  }
  ::close(ready[1]);
  pid_t node = 0;
  const auto got = ::read(ready[0], &node, sizeof node);
  ::close(ready[0]);
  ::kill(starter, SIGKILL);
  ::waitpid(starter, nullptr, 0);
  BOOST_REQUIRE_MESSAGE(got == sizeof node && node > 0, "the starter process did not start a node");

  const auto deadline = std::chrono::steady_clock::now() + 20s;
  int status = 0;
  pid_t ended = 0;
  while (ended == 0 && std::chrono::steady_clock::now() < deadline) {
    ended = ::waitpid(node, &status, WNOHANG);
    if (ended == 0) std::this_thread::sleep_for(10ms);
  }
  if (ended != node) {  // still running (or not adopted): the test fails, and leaves nothing behind
    ::kill(node, SIGKILL);
    ::waitpid(node, nullptr, 0);
  }
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  BOOST_REQUIRE_MESSAGE(ended == node, "the orphaned node did not stop within 20 s");
  // the orderly stop, not the forced exit 10 s later
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0));
}

BOOST_AUTO_TEST_CASE(three_nodes_give_the_embedded_results) {
  test::node_processes nodes;
  nodes.cluster.pins["gather"] = "n3";
  const auto& spec = nodes.registry.find("example-window-count");
  run_options ro;
  ro.batch_size = 256;

  // the window stage runs one instance on each node
  auto j = spec.build(window_count(spec, 1, ""));
  auto plan = compile(j.graph());
  auto placement = place(j.graph(), plan, nodes.cluster);
  std::set<std::uint32_t> window_nodes;
  std::size_t at = 0;
  for (const auto& st : plan.stages) {
    for (std::uint32_t i = 0; i < st.parallelism; ++i, ++at)
      if (j.graph().node(st.ops[0].node).op == "window") window_nodes.insert(placement[at]);
  }
  BOOST_TEST(window_nodes.size() == 3u);

  auto distributed = run_on_cluster(spec, window_count(spec, 120000, (nodes.dir / "cluster.txt").string()),
                                    nodes.cluster, ro);
  run_registered(spec, window_count(spec, 120000, (nodes.dir / "embedded.txt").string()), ro);
  auto a = sorted_lines(nodes.dir / "cluster.txt");
  auto b = sorted_lines(nodes.dir / "embedded.txt");
  BOOST_TEST(a.size() == 240u * 37u);  // 240 windows of 500 ms, every sensor in each
  BOOST_TEST(total_count(a) == 120000u);
  BOOST_TEST((a == b));
  std::uint64_t counted = 0;
  for (const auto& m : distributed.per_operator())
    if (m.name == "counts") counted = m.events_in;
  BOOST_TEST(counted == a.size());
  for (std::size_t i = 0; i < 3; ++i) {
    auto s = nodes.status(i);
    BOOST_TEST(s.bad_frames == 0u);
    BOOST_TEST(s.lost_frames == 0u);
    BOOST_TEST(s.refused_peers == 0u);
    // the peers' connections came and went (status requests, the job's links): no drop is seen
    BOOST_TEST(s.oversized_frames == 0u);
    BOOST_TEST(s.refused_control == 0u);
    BOOST_TEST(s.refused_data == 0u);
  }
}

BOOST_AUTO_TEST_CASE(a_slow_sink_on_another_node_bounds_buffering_and_loses_nothing) {
  test::node_processes nodes;
  nodes.cluster.pins["gather"] = "n3";
  const auto& spec = nodes.registry.find("example-window-count");
  run_options ro;
  ro.batch_size = 16;
  ro.credit = 2;
  auto opts = window_count(spec, 20000, (nodes.dir / "slow.txt").string());
  opts.set("window-ms", "100");
  opts.set("sink-delay-us", "50");
  auto r = run_on_cluster(spec, opts, nodes.cluster, ro);

  auto lines = sorted_lines(nodes.dir / "slow.txt");
  BOOST_TEST(lines.size() == 200u * 37u);
  BOOST_TEST(total_count(lines) == 20000u);
  auto j = spec.build(opts);
  auto plan = compile(j.graph());
  std::size_t instances = 0;
  for (const auto& st : plan.stages) instances += st.parallelism;
  // the gather instance reads 3 channels of credit 2: never more than 6 batches queued
  for (const auto& inst : r.instances)
    if (inst.operators.front().name == "gather") BOOST_TEST(inst.max_queued_batches <= 6u);
  // per process, at most credit batches per channel plus one buffer per channel and instance
  BOOST_TEST(r.peak_live_batches <=
             static_cast<std::int64_t>(plan.channel_count() * ro.credit + plan.channel_count() + instances));
  for (std::size_t i = 0; i < 3; ++i) BOOST_TEST(nodes.status(i).lost_frames == 0u);
}

BOOST_AUTO_TEST_CASE(a_node_that_dies_is_reported_with_its_operators) {
  test::node_processes nodes;
  nodes.cluster.pins["gather"] = "n3";
  const auto& spec = nodes.registry.find("example-window-count");
  auto opts = window_count(spec, 1'000'000'000, "");
  opts.set("sink-delay-us", "50");
  auto run = std::async(std::launch::async, [&] { return run_on_cluster(spec, opts, nodes.cluster); });
  // the job is deployed and batches flow into n2 before it dies
  test::wait_until([&] { return nodes.status(1).batch_frames_in > 0; });
  BOOST_REQUIRE(run.wait_for(0s) == std::future_status::timeout);  // still running
  nodes.kill_node(1);
  auto killed = std::chrono::steady_clock::now();
  BOOST_REQUIRE(run.wait_for(5s) == std::future_status::ready);
  auto reported = std::chrono::steady_clock::now() - killed;
  try {
    run.get();
    BOOST_FAIL("the run should fail");
  } catch (const job_error& e) {
    std::string what = e.what();
    BOOST_TEST_MESSAGE(what);
    BOOST_TEST(what.find("node 'n2'") != std::string::npos);
    BOOST_TEST(what.find("sent no heartbeat") != std::string::npos);
    BOOST_TEST(what.find("window_3 (instance 0)") != std::string::npos);
  }
  // the default timeout is 1 s from the last heartbeat (sent every 250 ms); allow for the poll
  // period and a loaded machine. No lower bound: on a loaded machine (a sanitizer build) the last
  // heartbeat before the kill can be late, and the report comes less than 1 s after the kill; the
  // message above says it was the heartbeat timeout.
  BOOST_TEST(std::chrono::duration<double>(reported).count() < 2.0);
}
