// replica_planning: replicas on spare CPU (issue 16) on four tidemark-node processes. The cluster
// file asks for `replication: {spare: ...}` instead of naming replicas: the coordinator plans them
// with the replication planner on the job's stage instances, deploys them, and, with
// checkpoints, moves the job to a new plan when the load it measures says so, through a
// checkpoint, with no result lost or repeated. Which instances must get replicas follows from the
// job's shape alone: only the window stage holds neither a source nor a sink.
#define BOOST_TEST_MODULE replica_planning
#include <boost/test/unit_test.hpp>

#include <future>
#include <thread>

#include "../../support/lines.hpp"
#include "../../support/wait_until.hpp"
#include "node_processes.hpp"
#include "tidemark/runtime/live.hpp"

using namespace tidemark;
using namespace std::chrono_literals;

namespace {

using tidemark::test::sorted_lines;

/// 40000 readings at 5000 per second (8 s) in windows of 50 ms over two window instances.
job_options window_count(const job_spec& spec, std::int64_t rate, const std::filesystem::path& out) {
  auto o = spec.make_options();
  o.set("events", "40000");
  o.set("keys", "37");
  o.set("window-ms", "50");
  o.set("parallelism", "2");
  o.set("rate", std::to_string(rate));
  o.set("gather", "true");
  o.set("out", out.string());
  return o;
}

bool is_window_stage(const live_plan::stage& s) {
  return std::find(s.kinds.begin(), s.kinds.end(), "window") != s.kinds.end();
}

/// The replicas the coordinator's live view shows, per stage then instance, at each new plan.
class plan_watch {
 public:
  explicit plan_watch(std::shared_ptr<live_view> view)
      : view_(std::move(view)), thread_([this] { watch(); }) {}
  ~plan_watch() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  /// Every distinct live plan seen, in order.
  std::vector<std::shared_ptr<const live_plan>> plans() const {
    std::lock_guard<std::mutex> guard{mutex_};
    return plans_;
  }

 private:
  void watch() {
    while (!stop_) {
      if (auto s = view_->latest(); s && s->plan) {
        std::lock_guard<std::mutex> guard{mutex_};
        if (plans_.empty() || plans_.back() != s->plan) plans_.push_back(s->plan);
      }
      std::this_thread::sleep_for(2ms);
    }
  }

  std::shared_ptr<live_view> view_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<const live_plan>> plans_;
  std::thread thread_;
};

run_options watched(const std::shared_ptr<live_view>& view, const std::filesystem::path& dir) {
  run_options ro;
  ro.print_summary = false;
  ro.batch_size = 64;
  ro.live = view;
  ro.live_period = 20ms;
  if (!dir.empty()) {
    ro.checkpoints.dir = dir.string();
    ro.checkpoints.interval = 200ms;
  }
  return ro;
}

/// Checks that `p` gives each window instance exactly one replica on another node than its
/// primary, and no other instance any.
void only_the_window_is_replicated(const live_plan& p) {
  for (const auto& s : p.stages)
    for (std::uint32_t i = 0; i < s.parallelism; ++i) {
      if (!is_window_stage(s)) {
        BOOST_TEST(s.replicas[i].empty());
        continue;
      }
      BOOST_TEST_REQUIRE(s.replicas[i].size() == 1u);
      BOOST_TEST(s.replicas[i][0] != s.nodes[i]);
    }
}

/// Waits until the sink received a quarter of the results; fails when the job ended before.
void await_a_quarter(const std::shared_ptr<live_view>& view, std::future<job_result>& running,
                     std::size_t results) {
  test::wait_until([&] {
    std::uint64_t seen = 0;
    if (auto s = view->latest())
      for (const auto& inst : s->instances)
        for (const auto& op : inst.operators)
          if (op.name == "counts") seen += op.events_in;
    return seen >= results / 4 || running.wait_for(0s) == std::future_status::ready;
  });
  BOOST_REQUIRE_MESSAGE(running.wait_for(0s) == std::future_status::timeout,
                        "the job finished before the kill: make it longer");
}

bool replicated(const live_plan& p) {
  for (const auto& s : p.stages)
    for (const auto& r : s.replicas)
      if (!r.empty()) return true;
  return false;
}

struct planning_cluster : test::node_processes {
  const job_spec& spec = registry.find("example-window-count");
  std::vector<std::string> expected;

  planning_cluster() : test::node_processes{4} {
    run_options quiet;
    quiet.print_summary = false;
    run_registered(spec, window_count(spec, 0, dir / "reference.txt"), quiet);
    expected = sorted_lines(dir / "reference.txt");
    BOOST_REQUIRE(expected.size() == 800u * 37u);
    cluster.heartbeat_timeout = 1000ms;
    // the source on n1, both window instances on n2, the gathering sink on n4
    for (const auto& n : spec.build(spec.make_options()).graph().nodes())
      if (n.op == "window") cluster.pins[n.name] = "n2";
    cluster.pins["readings"] = "n1";
    cluster.pins["gather"] = "n4";
  }
};

}  // namespace

BOOST_FIXTURE_TEST_CASE(spare_replicas_are_planned_deployed_and_take_over, planning_cluster) {
  // room for every replica: the planner gives the window instances, the only stage without a
  // source or a sink, one copy each (on n1, n3 or n4); the kill of n2 is taken over
  cluster.planned.spare = "1000%";
  cluster.planned.replan_interval = 0ms;
  auto view = std::make_shared<live_view>();
  plan_watch plans{view};
  auto running = std::async(std::launch::async, [&] {
    return run_on_cluster(spec, window_count(spec, 5000, dir / "takeover.txt"), cluster,
                          watched(view, {}));
  });
  // n2 runs both window primaries; it dies a quarter into the results
  await_a_quarter(view, running, expected.size());
  kill_node(1);
  const auto result = running.get();
  plans.stop();
  BOOST_TEST((sorted_lines(dir / "takeover.txt") == expected));
  BOOST_TEST(result.recoveries == 0u);
  bool took_over = false;
  for (const auto& w : result.warnings) took_over |= w.find("replicas took over") != std::string::npos;
  BOOST_TEST(took_over);
  const auto seen = plans.plans();
  BOOST_REQUIRE(!seen.empty());
  only_the_window_is_replicated(*seen.front());
}

BOOST_FIXTURE_TEST_CASE(the_plan_follows_the_measured_load_without_losing_a_result,
                        planning_cluster) {
  // 0.3 cores: before any measurement every instance is guessed at half the nodes' CPU shared
  // out (4 cores / 2 / at most 5 instances >= 0.4), so no window copy fits the budget; the
  // windows measured at 5000 readings per second use far less, so both fit once measured, and
  // the job moves to the new plan at a checkpoint
  cluster.planned.spare = "0.3";
  cluster.planned.replan_interval = 1000ms;
  auto view = std::make_shared<live_view>();
  plan_watch plans{view};
  const auto result = run_on_cluster(spec, window_count(spec, 5000, dir / "moved.txt"), cluster,
                                     watched(view, dir / "checkpoints"));
  plans.stop();
  BOOST_TEST((sorted_lines(dir / "moved.txt") == expected));
  BOOST_TEST(result.recoveries == 0u);
  const auto seen = plans.plans();
  BOOST_REQUIRE(seen.size() >= 2u);
  BOOST_TEST(!replicated(*seen.front()));
  only_the_window_is_replicated(*seen.back());
}

BOOST_FIXTURE_TEST_CASE(without_checkpoints_the_plan_stays_and_the_job_says_why,
                        planning_cluster) {
  cluster.planned.spare = "0.3";
  cluster.planned.replan_interval = 1000ms;
  auto view = std::make_shared<live_view>();
  plan_watch plans{view};
  const auto result = run_on_cluster(spec, window_count(spec, 5000, dir / "stays.txt"), cluster,
                                     watched(view, {}));
  plans.stop();
  BOOST_TEST((sorted_lines(dir / "stays.txt") == expected));
  bool said = false;
  for (const auto& w : result.warnings) said |= w.find("moving replicas needs checkpoints") != std::string::npos;
  BOOST_TEST(said);
  for (const auto& p : plans.plans()) BOOST_TEST(!replicated(*p));
}

BOOST_FIXTURE_TEST_CASE(a_node_that_comes_back_joins_at_a_move, planning_cluster) {
  // n2 (the window's primaries) dies: the replicas take over and the lost copies are restored
  // elsewhere; n2 restarted answers the coordinator's hello, and the job moves to a plan with
  // it again (the pins put the window there) at a checkpoint, with the embedded run's results
  cluster.planned.spare = "1000%";
  cluster.planned.replan_interval = 300ms;
  auto view = std::make_shared<live_view>();
  plan_watch plans{view};
  auto running = std::async(std::launch::async, [&] {
    return run_on_cluster(spec, window_count(spec, 5000, dir / "rejoined.txt"), cluster,
                          watched(view, dir / "checkpoints"));
  });
  await_a_quarter(view, running, expected.size());
  kill_node(1);
  start(1);
  const auto result = running.get();
  plans.stop();
  BOOST_TEST((sorted_lines(dir / "rejoined.txt") == expected));
  BOOST_TEST(result.recoveries == 0u);
  BOOST_TEST(plans.plans().size() >= 2u);  // a second deployment: the move
  BOOST_TEST(status(1).batch_frames_in > 0u);  // the restarted n2 ran the window again
}
