// replica_planning: replicas on spare CPU (issue 16) on four tidemark-node processes. The cluster
// file asks for `replication: {spare: ...}` instead of naming replicas: the coordinator plans them
// with the replication planner on the job's stage instances, deploys them, and, with
// checkpoints, moves the job to a new plan when the load it measures says so, through a
// checkpoint, with no result lost or repeated. Which instances must get replicas follows from the
// job's shape alone: only the window stage holds neither a source nor a sink.
#define BOOST_TEST_MODULE replica_planning
#include <boost/test/unit_test.hpp>

#include <mutex>

#include "../../support/environment.hpp"
#include "../../support/replicated_window.hpp"
#include "tidemark/runtime/live.hpp"

using namespace tidemark;
using namespace std::chrono_literals;

namespace {

constexpr std::int64_t events = 40000;
constexpr std::int64_t rate = 5000;  // 8 s

bool is_window_stage(const live_plan::stage& s) {
  return std::find(s.kinds.begin(), s.kinds.end(), "window") != s.kinds.end();
}

/// Every live plan the coordinator published, in order: one per deployment.
class plan_watch {
 public:
  explicit plan_watch(std::shared_ptr<live_view> view)
      : view_(std::move(view)), thread_([this] { watch(); }) {}
  ~plan_watch() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
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

bool replicated(const live_plan& p) {
  for (const auto& s : p.stages)
    for (const auto& r : s.replicas)
      if (!r.empty()) return true;
  return false;
}

/// Four nodes: the source on n1, both window instances on n2, the gathering sink on n4; the
/// replicas are the planner's to choose, within `spare`.
struct planning_cluster : test::replicated_window {
  std::shared_ptr<live_view> view = std::make_shared<live_view>();
  plan_watch plans{view};

  planning_cluster() : replicated_window(node_processes()) { lay_out(false); }

  void plan_on(const std::string& spare, std::chrono::milliseconds replan_interval) {
    nodes.cluster.planned.spare = spare;
    nodes.cluster.planned.replan_interval = replan_interval;
  }
  run_options watched(const std::string& name, bool checkpoints) const {
    auto ro = options(name, checkpoints);
    ro.live = view;
    ro.live_period = 20ms;
    return ro;
  }

 private:
  static chaos::local_cluster_options node_processes() {
    chaos::local_cluster_options o;
    o.node_binary = test::node_binary();
    o.nodes = 4;
    return o;
  }
};

}  // namespace

BOOST_FIXTURE_TEST_CASE(spare_replicas_are_planned_deployed_and_take_over, planning_cluster) {
  // room for every replica: the planner gives the window instances, the only stage without a
  // source or a sink, one copy each (on n1, n3 or n4); the kill of n2 a quarter into the
  // results is taken over
  plan_on("1000%", 0ms);
  const auto& expected = reference(events);
  const auto r = run(events, rate, "takeover", watched("takeover", false),
                     test::kill_after(expected.size() / 4, 1));
  plans.stop();
  BOOST_TEST((r.results == expected));
  BOOST_TEST(r.result.recoveries == 0u);
  bool took_over = false;
  for (const auto& w : r.result.warnings) took_over |= w.find("replicas took over") != std::string::npos;
  BOOST_TEST(took_over);
  const auto seen = plans.plans();
  BOOST_REQUIRE(!seen.empty());
  only_the_window_is_replicated(*seen.front());
}

BOOST_FIXTURE_TEST_CASE(the_plan_follows_the_measured_load_without_losing_a_result,
                        planning_cluster) {
  // 0.2 cores: before any measurement, the estimate shares half the nodes' CPU out by operator
  // (4 cores / 2 / 7 operators of instances: 3 in the source's, 1 in each window's, 2 in the
  // sink's), so a window instance counts 0.29 and no copy fits the budget; the windows measured
  // at 5000 readings per second use far less, so both fit once measured, and the job moves to the
  // new plan at a checkpoint
  plan_on("0.2", 1000ms);
  const auto r = run(events, rate, "moved", watched("moved", true));
  plans.stop();
  BOOST_TEST((r.results == reference(events)));
  BOOST_TEST(r.result.recoveries == 0u);
  const auto seen = plans.plans();
  BOOST_REQUIRE(seen.size() >= 2u);
  BOOST_TEST(!replicated(*seen.front()));
  only_the_window_is_replicated(*seen.back());
}

BOOST_FIXTURE_TEST_CASE(without_checkpoints_the_plan_stays_and_the_job_says_why,
                        planning_cluster) {
  plan_on("0.2", 1000ms);
  const auto r = run(events, rate, "stays", watched("stays", false));
  plans.stop();
  BOOST_TEST((r.results == reference(events)));
  bool said = false;
  for (const auto& w : r.result.warnings)
    said |= w.find("moving replicas needs checkpoints") != std::string::npos;
  BOOST_TEST(said);
  for (const auto& p : plans.plans()) BOOST_TEST(!replicated(*p));
}

BOOST_FIXTURE_TEST_CASE(a_node_that_comes_back_joins_at_a_move, planning_cluster) {
  // n2 (the window's primaries) dies: the replicas take over and the lost copies are restored
  // elsewhere; n2 restarted answers the coordinator's hello, and the job moves to a plan with
  // it again (the pins put the window there) at a checkpoint, with the embedded run's results
  plan_on("1000%", 300ms);
  const auto& expected = reference(events);
  const auto r = run(events, rate, "rejoined", watched("rejoined", true),
                     [&](test::running_job& job) {
                       test::kill_after(expected.size() / 4, 1)(job);
                       nodes.start(1);
                     });
  plans.stop();
  BOOST_TEST((r.results == expected));
  BOOST_TEST(r.result.recoveries == 0u);
  BOOST_TEST(plans.plans().size() >= 2u);      // a second deployment: the move
  BOOST_TEST(nodes.status(1).batch_frames_in > 0u);  // the restarted n2 ran the window again
}
