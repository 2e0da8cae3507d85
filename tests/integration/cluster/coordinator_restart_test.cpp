// coordinator_restart: the coordinator (the `tidemark run --cluster` process) is killed with
// SIGKILL while example-late-windows runs on three tidemark-node processes with checkpoints, and
// the same command with --resume continues the job from the newest checkpoint the killed
// coordinator completed: once the nodes fenced themselves, or at once, while they still run the
// old job (the new Deploy replaces it). The results table must equal, row for row, the table of
// an embedded run without faults: nothing the first coordinator's checkpoints committed is lost
// or written twice, and nothing after them is missing. When the coordinator's host is lost with
// its data directory, the resumed run fetches the newest checkpoint from the nodes' copies
// (cluster file `checkpoint: {copies: 1}`). A job with a timezone (figure1), whose synchronizer
// lives in the coordinator, resumes to the serial result.
#define BOOST_TEST_MODULE coordinator_restart
#include <boost/test/unit_test.hpp>

#include <signal.h>

#include <filesystem>
#include <regex>

#include "../../support/lines.hpp"
#include "../../support/result_rows.hpp"
#include "../../support/temp_dir.hpp"
#include "../../support/tool_process.hpp"
#include "../../support/wait_until.hpp"
#include "node_processes.hpp"

using namespace tidemark;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> job_args(const std::string& table, std::int64_t rate) {
  return {"--events",      "40000", "--keys",  "20", "--parallelism", "3",
          "--rate",        std::to_string(rate), "--table", table};
}

/// The highest checkpoint id the coordinator's debug log says completed (0: none yet).
std::uint64_t last_completed(const std::string& log) {
  static const std::regex complete{R"(checkpoint (\d+) complete:)"};
  std::uint64_t last = 0;
  const auto text = test::read_file(log);
  for (std::sregex_iterator it{text.begin(), text.end(), complete}, end; it != end; ++it)
    last = std::max<std::uint64_t>(last, std::stoull((*it)[1]));
  return last;
}

}  // namespace

/// Runs the job under a coordinator, kills it after two checkpoints, resumes it (after the nodes
/// fenced themselves when `after_fence`; with an empty data directory when `host_lost`) and
/// checks the table.
static void kill_and_resume(bool after_fence, bool host_lost = false) {
  test::temp_dir dir{"coordinator-restart"};
  test::node_processes nodes;
  const auto& spec = nodes.registry.find("example-late-windows");

  // the reference: embedded, without checkpoints and without faults, as fast as possible
  auto reference = spec.make_options();
  const auto reference_args = job_args(dir / "reference", 0);
  for (std::size_t i = 0; i + 1 < reference_args.size(); i += 2)
    reference.set(reference_args[i].substr(2), reference_args[i + 1]);
  run_options quiet;
  quiet.print_summary = false;
  run_registered(spec, reference, quiet);
  const auto expected = test::table_rows(dir / "reference", "results");
  BOOST_REQUIRE(expected.size() > 500u);

  // the sink's table is one directory: its one instance is pinned
  nodes.cluster.pins = {{"results", "n1"}};
  // restarted at once, the new coordinator must find the old job still running: a long fence
  if (!after_fence) nodes.cluster.heartbeat_timeout = 10s;
  const auto cluster_file = dir / "cluster.yaml";
  nodes.write_cluster_file(cluster_file);
  const std::vector<std::string> run = {"--log-level", "debug", "run", "--cluster", cluster_file,
                                        "--data-dir", dir / "coordinator", "--checkpoint-interval",
                                        "250"};
  const auto first_log = dir / "first.log";
  const auto first = test::start_tool(run, "example-late-windows", job_args(dir / "results", 4000),
                                      first_log);
  // 40000 readings at 4000/s take 10 s: kill the coordinator once two checkpoints completed
  test::wait_until([&] { return last_completed(first_log) >= 2; }, 60s,
                   "two completed checkpoints in " + first_log, 50ms);
  const auto completed = last_completed(first_log);
  BOOST_REQUIRE(::kill(first, SIGKILL) == 0);
  BOOST_TEST(!test::succeeded(first));
  BOOST_TEST_MESSAGE("coordinator killed after checkpoint " << completed << " completed");
  if (host_lost) std::filesystem::remove_all(dir / "coordinator");  // with its host

  // without their coordinator the nodes stop the job (fencing) and wait for the next
  const auto status_log = dir / "status.log";
  if (after_fence)
    test::wait_until(
        [&] {
          return test::tool_output({"status", "--cluster", cluster_file}, status_log)
                     .find("no job") != std::string::npos;
        },
        30s, "every node to stop the killed coordinator's job", 100ms);
  else
    BOOST_REQUIRE_MESSAGE(test::tool_output({"status", "--cluster", cluster_file}, status_log)
                                  .find("no job") == std::string::npos,
                          "the nodes stopped the old job before the new coordinator came");

  if (host_lost) {  // the nodes list what they keep
    const auto copies = test::tool_output({"checkpoints", "--cluster", cluster_file},
                                          dir / "copies.log");
    BOOST_TEST_MESSAGE(copies);
    BOOST_TEST(copies.find("checkpoint " + std::to_string(completed) +
                           " of job 'example-late-windows'") != std::string::npos);
  }

  // the same command with --resume continues from the newest completed checkpoint
  auto resumed = run;
  resumed.push_back("--resume");
  const auto second_log = dir / "second.log";
  const auto second = test::start_tool(resumed, "example-late-windows",
                                       job_args(dir / "results", 4000), second_log);
  BOOST_REQUIRE_MESSAGE(test::succeeded(second),
                        "the resumed run failed: " + test::read_file(second_log));
  const auto text = test::read_file(second_log);
  static const std::regex resuming{R"(resuming job 'example-late-windows' from checkpoint (\d+))"};
  std::smatch m;
  BOOST_REQUIRE_MESSAGE(std::regex_search(text, m, resuming), text);
  BOOST_TEST(std::stoull(m[1]) >= completed);
  if (host_lost) {
    static const std::regex fetched{
        R"(fetched checkpoint (\d+) of job 'example-late-windows' from the copies on node\(s\) )"};
    BOOST_REQUIRE_MESSAGE(std::regex_search(text, m, fetched), text);
    BOOST_TEST(std::stoull(m[1]) >= completed);
  }

  test::check_same_rows(expected, test::table_rows(dir / "results", "results"));
  if (host_lost) {  // the finished job's copies are gone too: a later --resume finds nothing
    const auto copies = test::tool_output({"checkpoints", "--cluster", cluster_file},
                                          dir / "copies-after.log");
    BOOST_TEST(copies.find("of job 'example-late-windows'") == std::string::npos, copies);
  }
}

BOOST_AUTO_TEST_CASE(a_coordinator_killed_mid_run_is_resumed_once_the_nodes_fenced) {
  kill_and_resume(true);
}

BOOST_AUTO_TEST_CASE(a_coordinator_restarted_at_once_replaces_the_job_the_nodes_still_run) {
  kill_and_resume(false);
}

BOOST_AUTO_TEST_CASE(a_coordinator_whose_host_is_lost_resumes_from_the_nodes_copies) {
  kill_and_resume(true, true);
}

// A job with a timezone: figure1's synchronizer runs in the coordinator, so killing it loses the
// synchronizer's state with it; the resumed coordinator rebuilds it from the gates and exits the
// nodes restore. Unaligned checkpoints, because an aligned barrier waits behind every reading
// queued at the gates, which the timezone admits one lookup (1 ms) at a time: the first aligned
// checkpoint of this run took 4.5 s. The pairs file must hold every reading once, paired with
// its own lookup (the serial result: reading i with row i), whatever was in flight at the kill.
BOOST_AUTO_TEST_CASE(a_coordinator_killed_while_a_timezone_runs_resumes_it_serially) {
  test::temp_dir dir{"coordinator-restart-timezone"};
  test::node_processes nodes;
  const auto cluster_file = dir / "cluster.yaml";
  nodes.write_cluster_file(cluster_file);
  constexpr int elements = 6000;  // 1 ms lookups, one at a time: about 7 s
  const std::vector<std::string> run = {"--log-level", "debug", "run", "--cluster", cluster_file,
                                        "--data-dir", dir / "coordinator", "--checkpoint-interval",
                                        "250", "--unaligned"};
  const std::vector<std::string> job = {"--db",           "local", "--out", dir / "pairs.txt",
                                        "--elements",     std::to_string(elements),
                                        "--min-delay-us", "1000",  "--max-delay-us", "1000",
                                        "--concurrency",  "1"};
  const auto first_log = dir / "first.log";
  const auto first = test::start_tool(run, "figure1", job, first_log);
  test::wait_until([&] { return last_completed(first_log) >= 2; }, 60s,
                   "two completed checkpoints in " + first_log, 20ms);
  BOOST_REQUIRE(::kill(first, SIGKILL) == 0);
  BOOST_TEST(!test::succeeded(first));
  const auto completed = last_completed(first_log);

  auto resumed = run;
  resumed.push_back("--resume");
  resumed.push_back("figure1");
  resumed.insert(resumed.end(), job.begin(), job.end());
  const auto second_log = dir / "second.log";
  const auto summary = test::tool_output(resumed, second_log);
  BOOST_TEST(summary.find(" 0 mismatched") != std::string::npos, summary);  // the join's count
  const auto text = test::read_file(second_log);
  static const std::regex resuming{R"(resuming job 'figure1' from checkpoint (\d+))"};
  std::smatch m;
  BOOST_REQUIRE_MESSAGE(std::regex_search(text, m, resuming), text);
  BOOST_TEST(std::stoull(m[1]) >= completed);
  BOOST_TEST_MESSAGE("resumed from checkpoint " << m[1] << " of the killed coordinator");

  // every line once: the value of a line is how often the file holds it
  test::result_rows expected, got;
  for (int i = 0; i < elements; ++i)
    expected[std::to_string(i) + " " + std::to_string(i) + " row-" + std::to_string(i)] = "1";
  for (const auto& line : test::sorted_lines(dir / "pairs.txt"))
    got[line] = std::to_string(got.count(line) ? std::stoi(got[line]) + 1 : 1);
  test::check_same_rows(expected, got);
}
