// chaos_ci: example-late-windows (3 window instances, paced at 5000 readings/s) on three
// tidemark-node processes with checkpoints every 250 ms under a seeded schedule of kill, pause,
// partition, frame drop and delay, slow disk (each once, then random faults from the seed); the
// checker compares its history with a fault-free embedded run and must find nothing.
// Negative controls: without checkpoints the first lost node fails the job, and the checker (and
// `tidemark chaos run`'s exit code) must report lost results; with the at-least-once history sink
// a recovery replays results, and the checker must report repeats.
#define BOOST_TEST_MODULE chaos_ci
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "../../support/environment.hpp"
#include "../../support/temp_dir.hpp"
#include "tidemark/chaos/fixture.hpp"
#include "tidemark/examples/example_jobs.hpp"

using namespace tidemark;
using namespace std::chrono_literals;

namespace {

const job_spec& late_windows() {
  static job_registry registry = [] {
    job_registry r;
    examples::register_jobs(r);
    return r;
  }();
  return registry.find("example-late-windows");
}

job_options late_windows_options(std::int64_t events, const std::string& history_mode) {
  auto o = late_windows().make_options();
  o.set("events", std::to_string(events));
  o.set("keys", "20");
  o.set("parallelism", "3");
  o.set("rate", "5000");
  o.set("history-mode", history_mode);
  return o;
}

// Each kind once, then random ones from the seed, which also drives the nodes' draws.
const std::string ci_schedule = R"(
faults:
  - {at: 2s, fault: kill, targets: [n2], duration: 1s}
  - {at: 6s, fault: pause, targets: [n3], duration: 1500ms}
  - {at: 10s, fault: partition, targets: [n1], duration: 2s}
  - {at: 14s, fault: drop, targets: [n1, n2, n3], probability: 0.1, duration: 3s}
  - {at: 14s, fault: delay, targets: [n1, n2, n3], delay: 30ms, jitter: 20ms, duration: 3s}
  - {at: 19s, fault: slow-disk, targets: [n1, n2, n3], delay: 100ms, duration: 3s}
random: {kinds: [kill, pause, restart, partition, drop, delay, slow-disk], every: 4s..6s,
         duration: 1s..2s, start: 24s}
)";

}  // namespace

BOOST_AUTO_TEST_CASE(under_seeded_faults_with_checkpoints_nothing_is_lost_repeated_or_wrong) {
  chaos::cluster_fixture cluster{3, test::node_binary()};
  chaos::run_settings s;
  s.seed = 17;
  s.duration = 28s;
  s.checkpoint_interval = 250ms;
  const auto r =
      cluster.run(late_windows(), late_windows_options(150000, "exactly-once"), ci_schedule, s);
  BOOST_TEST_MESSAGE(r.summary());
  BOOST_TEST(r.passed());
  BOOST_TEST(!r.run.error);
  BOOST_TEST(r.violation_count() == 0u);
  BOOST_TEST(r.reference_results > 10000u);
  BOOST_TEST(r.run_results == r.reference_results);
  std::map<chaos::fault_kind, int> applied;
  for (const auto& f : r.faults) {
    ++applied[f.fault.planned.kind];
    BOOST_TEST(f.fault.note.empty(), f.fault.note);
  }
  using k = chaos::fault_kind;
  for (auto kind : {k::kill, k::pause, k::partition, k::drop, k::delay, k::slow_disk})
    BOOST_TEST(applied[kind] >= 1, "no " << chaos::to_string(kind) << " fault was applied");
  BOOST_TEST(r.faults.size() >= 5u);
  BOOST_TEST(r.run.recoveries >= 3u);
  // every result has its emission-to-commit latency; exactly once waits for a checkpoint
  BOOST_TEST(r.latency.results == r.run_results);
  BOOST_TEST(r.latency.p50_s > 0.0);
  BOOST_TEST(r.latency.p99_s >= r.latency.p50_s);
  const auto out = cluster.nodes().dir / "run-1";
  BOOST_TEST(std::filesystem::file_size(out / "timeline.png") > 1000u);
  std::ifstream report{out / "report.json"};
  const auto j = nlohmann::json::parse(report);
  BOOST_TEST(j["violations"].get<int>() == 0);
  BOOST_TEST(j["faults"].size() == r.faults.size());
}

BOOST_AUTO_TEST_CASE(without_checkpoints_a_lost_node_loses_results_and_the_tool_exits_non_zero) {
  test::temp_dir dir{"chaos-ci"};
  {
    // keys and a cluster file for the command line, which starts the nodes itself
    chaos::local_cluster_options o;
    o.node_binary = test::node_binary();
    o.dir = dir.path() / "cluster";
    chaos::local_cluster keys_only{o};
    keys_only.write_cluster_file(dir / "cluster.yaml");
  }
  std::ofstream{dir / "schedule.yaml"}
      << "faults:\n  - {at: 2s, fault: kill, targets: [n2], duration: 1s}\n";
  const auto command = test::tool_binary() + " chaos run --cluster " + dir / "cluster.yaml" +
                       " --schedule " + dir / "schedule.yaml" + " --duration 10s --out " +
                       dir / "out" + " --checkpoint-interval 0 --start-nodes --keys " +
                       (dir.path() / "cluster" / "keys").string() +
                       " example-late-windows --events 40000 --keys 20 --parallelism 3 --rate 5000";
  const int status = std::system(command.c_str());  // NOLINT(concurrency-mt-unsafe): one thread
  BOOST_REQUIRE(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 3);  // violations
  std::ifstream report{dir / "out/report.json"};
  BOOST_REQUIRE(report);
  const auto j = nlohmann::json::parse(report);
  BOOST_TEST(!j["passed"].get<bool>());
  BOOST_TEST(j["lost"].get<int>() > 0);
  BOOST_TEST(j["repeated"].get<int>() == 0);
  BOOST_TEST(j["run"]["error"].get<std::string>().find("n2") != std::string::npos);
  // `chaos check` reaches the same verdict from the recorded run
  const int again =
      std::system((test::tool_binary() + " chaos check " + dir / "out" + " > /dev/null")
                      .c_str());  // NOLINT
  BOOST_REQUIRE(WIFEXITED(again));
  BOOST_TEST(WEXITSTATUS(again) == 3);
}

BOOST_AUTO_TEST_CASE(an_at_least_once_sink_repeats_results_after_a_recovery) {
  chaos::cluster_fixture cluster{3, test::node_binary()};
  chaos::run_settings s;
  s.duration = 10s;
  s.checkpoint_interval = 250ms;
  const auto r =
      cluster.run(late_windows(), late_windows_options(40000, "at-least-once"),
                  "faults:\n  - {at: 3s, fault: kill, targets: [n1], duration: 1s}\n", s);
  BOOST_TEST_MESSAGE(r.summary());
  BOOST_TEST(!r.passed());
  BOOST_TEST(!r.run.error);  // the job recovered; its sink is what repeats
  BOOST_TEST(r.run.recoveries >= 1u);
  BOOST_TEST(r.repeated > 0u);
  BOOST_TEST(r.lost == 0u);
}
