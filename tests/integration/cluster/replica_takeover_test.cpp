// replica_takeover: active replicas on four tidemark-node processes (issue 16). The window stage
// of example-window-count has a replica on another node than its primary; the results equal the
// embedded run's with the replica running, and when the primary's node is killed with SIGKILL
// mid-run the replica takes over without a recovery: the same results, and the longest pause
// between results at the sink at most 100 ms above the fault-free run's. The negative control:
// the same kill without the replica fails the job. A replica behind a slow link is dropped and
// the job goes on at the primary's pace. With checkpoints the replication level is restored after
// a takeover: a new copy from the latest checkpoint, caught up from its senders' replay logs, and
// it takes over the next loss in turn. Placement refusals need no processes.
#define BOOST_TEST_MODULE replica_takeover
#include <boost/test/unit_test.hpp>

#include <future>
#include <thread>

#include "../../support/lines.hpp"
#include "../../support/thrown.hpp"
#include "../../support/wait_until.hpp"
#include "node_processes.hpp"
#include "tidemark/runtime/faults.hpp"
#include "tidemark/runtime/live.hpp"

using namespace tidemark;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

using tidemark::test::sorted_lines;

/// Readings at `rate` per second in windows of 50 ms of event time: a window's results reach the
/// sink every 10 ms at 5000 readings per second.
job_options window_count(const job_spec& spec, std::int64_t events, std::int64_t rate,
                         const std::filesystem::path& out) {
  auto o = spec.make_options();
  o.set("events", std::to_string(events));
  o.set("keys", "37");
  o.set("window-ms", "50");
  o.set("parallelism", "2");
  o.set("rate", std::to_string(rate));
  o.set("gather", "true");
  o.set("out", out.string());
  return o;
}

/// The name of the job's window operator (generated from its position in the graph).
std::string window_name(const job_spec& spec) {
  auto j = spec.build(spec.make_options());
  for (const auto& n : j.graph().nodes())
    if (n.op == "window") return n.name;
  BOOST_FAIL("example-window-count has no window operator");
  return {};
}

/// Source on n1, both window instances on n2, the gathering sink on n4; with `replicas`, the
/// window's copies go to n3 (the node after its primary's).
void lay_out(test::node_processes& nodes, const std::string& window, bool replicas) {
  nodes.cluster.pins = {{"readings", "n1"}, {window, "n2"}, {"gather", "n4"}};
  nodes.cluster.replicate.clear();
  if (replicas) nodes.cluster.replicate[window] = 1;
  nodes.cluster.heartbeat_timeout = 1000ms;
}

/// Watches the sink's input counter in the coordinator's live view from another thread and keeps
/// the longest time between two increases (the first increase starts the clock).
class result_gaps {
 public:
  explicit result_gaps(std::shared_ptr<live_view> view)
      : view_(std::move(view)), thread_([this] { watch(); }) {}
  ~result_gaps() { stop(); }

  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  /// Results the sink received so far.
  std::uint64_t results() const { return seen_; }
  std::chrono::milliseconds longest() const { return longest_; }

 private:
  void watch() {
    std::optional<clock_type::time_point> last;
    while (!stop_) {
      std::uint64_t now = 0;
      if (auto s = view_->latest())
        for (const auto& inst : s->instances)
          for (const auto& op : inst.operators)
            if (op.name == "counts") now += op.events_in;
      if (now > seen_) {
        const auto t = clock_type::now();
        if (last)
          longest_ = std::max(longest_.load(),
                              std::chrono::duration_cast<std::chrono::milliseconds>(t - *last));
        last = t;
        seen_ = now;
      }
      std::this_thread::sleep_for(1ms);
    }
  }

  std::shared_ptr<live_view> view_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> seen_{0};
  std::atomic<std::chrono::milliseconds> longest_{0ms};
  std::thread thread_;
};

/// Warnings that contain both `a` and `b`.
std::size_t mentions(const std::vector<std::string>& warnings, const std::string& a,
                     const std::string& b) {
  std::size_t n = 0;
  for (const auto& w : warnings) n += w.find(a) != std::string::npos && w.find(b) != std::string::npos;
  return n;
}

run_options watched(const std::shared_ptr<live_view>& view) {
  run_options ro;
  ro.print_summary = false;
  ro.batch_size = 64;
  ro.live = view;
  ro.live_period = 10ms;
  return ro;
}

/// Runs the job on the cluster while watching its results; with `kill`, kills node `victim` once
/// the sink has received `after` results. Returns the result, or rethrows what the run threw.
struct watched_run {
  job_result result;
  std::chrono::milliseconds longest_gap{0};
};

watched_run run_watched(test::node_processes& nodes, const job_spec& spec, const job_options& o,
                        std::optional<std::size_t> victim, std::uint64_t after) {
  auto view = std::make_shared<live_view>();
  result_gaps gaps{view};
  auto running = std::async(std::launch::async,
                            [&] { return run_on_cluster(spec, o, nodes.cluster, watched(view)); });
  if (victim) {
    test::wait_until([&] {
      return gaps.results() >= after || running.wait_for(0s) == std::future_status::ready;
    });
    BOOST_REQUIRE_MESSAGE(running.wait_for(0s) == std::future_status::timeout,
                          "the job finished before the kill: make it longer");
    nodes.kill_node(*victim);
  }
  watched_run r;
  r.result = running.get();
  gaps.stop();
  r.longest_gap = gaps.longest();
  return r;
}

}  // namespace

BOOST_AUTO_TEST_CASE(replicating_a_source_or_sink_or_on_too_few_nodes_is_refused) {
  job_registry registry;
  examples::register_jobs(registry);
  const auto& spec = registry.find("example-window-count");
  auto j = spec.build(window_count(spec, 10, 0, "x.txt"));
  auto plan = compile(j.graph());
  cluster_config c;
  for (auto id : {"n1", "n2"}) c.nodes.push_back({id, "tcp://127.0.0.1:1", ""});
  const auto placement = place(j.graph(), plan, c);
  auto refusal = [&](const std::string& op, std::uint32_t copies) {
    c.replicate = {{op, copies}};
    return test::thrown<job_error>([&] { place_replicas(j.graph(), plan, placement, c); });
  };
  BOOST_TEST(refusal("readings", 1).find("sources and sinks are not replicated") !=
             std::string::npos);
  BOOST_TEST(refusal("counts", 1).find("the sink 'counts'") != std::string::npos);
  BOOST_TEST(refusal("nothing", 1).find("no operator of that name") != std::string::npos);
  BOOST_TEST(refusal(window_name(spec), 2).find("need 3 nodes") != std::string::npos);
  // one replica on two nodes: each window instance's copy on the other node than its primary
  c.replicate = {{window_name(spec), 1}};
  const auto replicas = place_replicas(j.graph(), plan, placement, c);
  std::size_t copies = 0;
  for (std::size_t k = 0; k < placement.size(); ++k)
    for (auto n : replicas[k]) {
      BOOST_TEST(n != placement[k]);
      ++copies;
    }
  BOOST_TEST(copies == 2u);  // the window's two instances
}

BOOST_AUTO_TEST_CASE(a_replicated_window_gives_the_embedded_results_and_the_replica_runs) {
  test::node_processes nodes{4};
  const auto& spec = nodes.registry.find("example-window-count");
  lay_out(nodes, window_name(spec), true);
  run_options ro;
  ro.print_summary = false;
  ro.batch_size = 256;
  run_on_cluster(spec, window_count(spec, 60000, 0, nodes.dir / "cluster.txt"), nodes.cluster, ro);
  run_registered(spec, window_count(spec, 60000, 0, nodes.dir / "embedded.txt"), ro);
  const auto a = sorted_lines(nodes.dir / "cluster.txt");
  const auto b = sorted_lines(nodes.dir / "embedded.txt");
  BOOST_TEST(a.size() == 1200u * 37u);  // 1200 windows of 50 ms, every sensor in each
  BOOST_TEST((a == b));
  // n3 runs nothing but the replicas: it received the source's batches and sent its results
  const auto replica = nodes.status(2);
  BOOST_TEST(replica.batch_frames_in > 0u);
  BOOST_TEST(nodes.status(3).batch_frames_in > 0u);
  for (std::size_t i = 0; i < 4; ++i) BOOST_TEST(nodes.status(i).bad_frames == 0u);
}

BOOST_AUTO_TEST_CASE(replica_takeover) {
  test::node_processes nodes{4};
  const auto& spec = nodes.registry.find("example-window-count");
  const auto window = window_name(spec);
  // 40000 readings at 5000 per second: 8 s, windows' results every 10 ms
  constexpr std::int64_t events = 40000;
  constexpr std::int64_t rate = 5000;
  run_options quiet;
  quiet.print_summary = false;
  run_registered(spec, window_count(spec, events, 0, nodes.dir / "reference.txt"), quiet);
  const auto expected = sorted_lines(nodes.dir / "reference.txt");
  BOOST_REQUIRE(expected.size() == 800u * 37u);

  lay_out(nodes, window, true);
  const auto calm =
      run_watched(nodes, spec, window_count(spec, events, rate, nodes.dir / "calm.txt"), {}, 0);
  BOOST_TEST((sorted_lines(nodes.dir / "calm.txt") == expected));

  // n2 runs both window primaries; it dies a quarter into the results
  const auto hit = run_watched(nodes, spec,
                               window_count(spec, events, rate, nodes.dir / "takeover.txt"), 1,
                               expected.size() / 4);
  BOOST_TEST_MESSAGE("longest pause between results: " << calm.longest_gap.count()
                                                       << " ms without faults, "
                                                       << hit.longest_gap.count()
                                                       << " ms with the takeover");
  BOOST_TEST((sorted_lines(nodes.dir / "takeover.txt") == expected));
  BOOST_TEST(hit.result.recoveries == 0u);
  bool took_over = false;
  for (const auto& w : hit.result.warnings)
    took_over |= w.find("replicas took over") != std::string::npos;
  BOOST_TEST(took_over);
  BOOST_TEST(hit.longest_gap.count() <= calm.longest_gap.count() + 100);
  // without checkpoints there is no state to restore a copy from: the job says so
  BOOST_TEST(hit.result.restores.empty());
  BOOST_TEST(mentions(hit.result.warnings, "not restored", "needs checkpoints") == 2u);

  // the negative control: without the replica the same kill fails the job (no checkpoints)
  nodes.start(1);
  lay_out(nodes, window, false);
  try {
    run_watched(nodes, spec, window_count(spec, events, rate, nodes.dir / "alone.txt"), 1,
                expected.size() / 4);
    BOOST_FAIL("without a replica, losing the window's node must fail the job");
  } catch (const job_error& e) {
    BOOST_TEST_MESSAGE(e.what());
    BOOST_TEST(std::string{e.what()}.find("node 'n2'") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(a_replica_behind_a_slow_link_is_dropped_and_the_primary_goes_on) {
  test::node_processes nodes{4, [](std::size_t) {
                               return std::vector<std::string>{"--allow-faults"};
                             }};
  nodes.cluster.faults_allowed = true;
  const auto& spec = nodes.registry.find("example-window-count");
  lay_out(nodes, window_name(spec), true);
  run_options quiet;
  quiet.print_summary = false;
  run_registered(spec, window_count(spec, 20000, 0, nodes.dir / "reference.txt"), quiet);

  // the pace of results without the slow link
  const auto calm =
      run_watched(nodes, spec, window_count(spec, 20000, 5000, nodes.dir / "calm.txt"), {}, 0);

  auto view = std::make_shared<live_view>();
  result_gaps gaps{view};
  auto ro = watched(view);
  ro.replica_lag = 16;
  auto running = std::async(std::launch::async, [&] {
    return run_on_cluster(spec, window_count(spec, 20000, 5000, nodes.dir / "lagging.txt"),
                          nodes.cluster, ro);
  });
  // once the job runs, every frame from the source's node to the replicas' takes 300 ms: the
  // replicas get at most a credit window per 300 ms, a third of the source's pace
  test::wait_until([&] { return gaps.results() > 0; });
  fault_command slow;
  slow.links["n3"].delay = 300ms;
  inject_faults(nodes.cluster, "n1", slow);
  const auto result = running.get();
  gaps.stop();
  BOOST_TEST(
      (sorted_lines(nodes.dir / "lagging.txt") == sorted_lines(nodes.dir / "reference.txt")));
  std::size_t dropped = 0;
  for (const auto& w : result.warnings) {
    BOOST_TEST_MESSAGE(w);
    dropped += w.find("was dropped") != std::string::npos;
  }
  BOOST_TEST(dropped == 2u);  // both window instances' replicas on n3
  // the primary kept its pace: results reach the sink as often as without the slow link. Had the
  // sender waited for the replicas, a credit window per 300 ms (a third of the source's pace)
  // would space the results three times further apart.
  BOOST_TEST_MESSAGE("longest pause between results: " << calm.longest_gap.count()
                                                       << " ms without the slow link, "
                                                       << gaps.longest().count() << " ms with it");
  BOOST_TEST(gaps.longest().count() <= calm.longest_gap.count() + 100);
}

BOOST_AUTO_TEST_CASE(checkpoints_complete_with_replicas_and_losing_a_replica_needs_no_recovery) {
  test::node_processes nodes{4};
  const auto& spec = nodes.registry.find("example-window-count");
  lay_out(nodes, window_name(spec), true);
  run_options quiet;
  quiet.print_summary = false;
  run_registered(spec, window_count(spec, 20000, 0, nodes.dir / "reference.txt"), quiet);
  const auto expected = sorted_lines(nodes.dir / "reference.txt");

  // every copy snapshots at each barrier; n3, which runs only the replicas, dies mid-run
  auto view = std::make_shared<live_view>();
  result_gaps gaps{view};
  auto ro = watched(view);
  ro.checkpoints.dir = (nodes.dir / "checkpoints").string();
  ro.checkpoints.interval = 200ms;
  auto running = std::async(std::launch::async, [&] {
    return run_on_cluster(spec, window_count(spec, 20000, 5000, nodes.dir / "checkpointed.txt"),
                          nodes.cluster, ro);
  });
  test::wait_until([&] { return gaps.results() >= expected.size() / 2; });
  nodes.kill_node(2);
  const auto result = running.get();
  gaps.stop();
  BOOST_TEST((sorted_lines(nodes.dir / "checkpointed.txt") == expected));
  BOOST_TEST(result.recoveries == 0u);
  BOOST_TEST(result.checkpoints.size() >= 3u);
  bool took_over = false;
  for (const auto& w : result.warnings)
    took_over |= w.find("node 'n3'") != std::string::npos &&
                 w.find("replicas took over") != std::string::npos;
  BOOST_TEST(took_over);
}

BOOST_AUTO_TEST_CASE(a_lost_copy_is_restored_from_a_checkpoint_and_takes_over_the_next_loss) {
  test::node_processes nodes{4};
  const auto& spec = nodes.registry.find("example-window-count");
  const auto window = window_name(spec);
  constexpr std::int64_t events = 40000;
  run_options quiet;
  quiet.print_summary = false;
  run_registered(spec, window_count(spec, events, 0, nodes.dir / "reference.txt"), quiet);
  const auto expected = sorted_lines(nodes.dir / "reference.txt");
  BOOST_REQUIRE(expected.size() == 800u * 37u);

  // source and sink on n1, window primaries on n2, their replicas on n3; n4 runs nothing
  lay_out(nodes, window, true);
  nodes.cluster.pins["gather"] = "n1";
  auto view = std::make_shared<live_view>();
  result_gaps gaps{view};
  auto ro = watched(view);
  ro.checkpoints.dir = (nodes.dir / "checkpoints").string();
  ro.checkpoints.interval = 200ms;
  auto running = std::async(std::launch::async, [&] {
    return run_on_cluster(spec, window_count(spec, events, 5000, nodes.dir / "restored.txt"),
                          nodes.cluster, ro);
  });
  test::wait_until([&] { return gaps.results() >= expected.size() / 4; });
  BOOST_REQUIRE(running.wait_for(0s) == std::future_status::timeout);
  nodes.kill_node(1);
  // the primaries come back on n4 (n3 holds their replicas), which receives the source's batches
  test::wait_until([&] { return nodes.status(3).batch_frames_in > 0; });
  // the decisive check: once the results moved on, n3 dies too; the restored copies on n4, built
  // from a checkpoint and their senders' replay, are now the only ones
  test::wait_until([&] { return gaps.results() >= expected.size() / 2; });
  BOOST_REQUIRE(running.wait_for(0s) == std::future_status::timeout);
  nodes.kill_node(2);
  const auto result = running.get();
  gaps.stop();
  BOOST_TEST((sorted_lines(nodes.dir / "restored.txt") == expected));
  BOOST_TEST(result.recoveries == 0u);
  BOOST_TEST(mentions(result.warnings, "node 'n2'", "replicas took over") == 1u);
  BOOST_TEST(mentions(result.warnings, "node 'n3'", "replicas took over") == 1u);
  for (const auto& w : result.warnings) BOOST_TEST_MESSAGE(w);
  // two copies restored after each loss (one per window instance), each caught up within 5 s
  BOOST_TEST(result.restores.size() == 4u);
  for (auto seconds : result.restores) {
    BOOST_TEST_MESSAGE("a copy caught up " << seconds * 1000 << " ms after its node was lost");
    BOOST_TEST(seconds <= 5.0);
  }
}

BOOST_AUTO_TEST_CASE(without_a_free_node_the_job_warns_that_the_level_is_not_restored) {
  // two nodes: the window's primaries on n2 and their replicas on n1, so when n2 dies every node
  // left already holds a copy
  test::node_processes nodes{2};
  const auto& spec = nodes.registry.find("example-window-count");
  const auto window = window_name(spec);
  run_options quiet;
  quiet.print_summary = false;
  run_registered(spec, window_count(spec, 20000, 0, nodes.dir / "reference.txt"), quiet);
  const auto expected = sorted_lines(nodes.dir / "reference.txt");
  nodes.cluster.pins = {{"readings", "n1"}, {window, "n2"}, {"gather", "n1"}};
  nodes.cluster.replicate = {{window, 1}};
  nodes.cluster.heartbeat_timeout = 1000ms;
  auto view = std::make_shared<live_view>();
  auto ro = watched(view);
  ro.checkpoints.dir = (nodes.dir / "checkpoints").string();
  ro.checkpoints.interval = 200ms;
  result_gaps gaps{view};
  auto running = std::async(std::launch::async, [&] {
    return run_on_cluster(spec, window_count(spec, 20000, 5000, nodes.dir / "fewer.txt"),
                          nodes.cluster, ro);
  });
  test::wait_until([&] { return gaps.results() >= expected.size() / 4; });
  BOOST_REQUIRE(running.wait_for(0s) == std::future_status::timeout);
  nodes.kill_node(1);
  const auto result = running.get();
  gaps.stop();
  BOOST_TEST((sorted_lines(nodes.dir / "fewer.txt") == expected));
  BOOST_TEST(result.recoveries == 0u);
  BOOST_TEST(result.restores.empty());
  BOOST_TEST(mentions(result.warnings, "not restored", "every node still in the job holds a copy") ==
             2u);
}
