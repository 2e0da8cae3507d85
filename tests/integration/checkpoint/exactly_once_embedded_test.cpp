// exactly_once_embedded: `tidemark run example-late-windows` with checkpoints is killed with
// SIGKILL four times at random moments and resumed with --resume each time; the results table it
// finally holds must equal, row for row, the table of a run without faults (nothing lost, nothing
// twice, the same revision ids). The job has keyed tumbling windows with late re-firings, tiered
// window state on disk and a WiredTiger table sink.
#define BOOST_TEST_MODULE exactly_once_embedded
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../../support/result_rows.hpp"
#include "../../support/temp_dir.hpp"

extern char** environ;

namespace {

/// Starts `tidemark TOOL_ARGS... example-late-windows JOB_ARGS...` with stderr into `log`.
pid_t start_job(const std::vector<std::string>& tool_args, const std::vector<std::string>& job_args,
                const std::string& log) {
  std::vector<std::string> args{TIDEMARK_BIN};
  args.insert(args.end(), tool_args.begin(), tool_args.end());
  args.push_back("example-late-windows");
  args.insert(args.end(), job_args.begin(), job_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&files, 2, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, TIDEMARK_BIN, &files, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  BOOST_REQUIRE_MESSAGE(rc == 0, "cannot start " TIDEMARK_BIN);
  return pid;
}

/// Waits for `pid`; true when it exited with status 0.
bool succeeded(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string read_file(const std::string& path) {
  std::ifstream in{path};
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// How often `what` occurs in `text`.
std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

BOOST_AUTO_TEST_CASE(four_kills_and_resumes_give_the_table_of_a_run_without_faults) {
  tidemark::test::temp_dir dir{"exactly-once"};
  const std::vector<std::string> job{"--events", "100000", "--keys", "20", "--parallelism", "2"};

  // the reference: the same readings without checkpoints and without faults, as fast as possible
  auto reference_job = job;
  reference_job.insert(reference_job.end(), {"--table", dir / "reference"});
  BOOST_REQUIRE_MESSAGE(succeeded(start_job({"run"}, reference_job, dir / "reference.log")),
                        read_file(dir / "reference.log"));
  const auto expected = tidemark::test::table_rows(dir / "reference", "results");
  // the reference exercises what the test is about: late re-firings and readings past lateness
  std::size_t late_revisions = 0;
  for (const auto& [k, v] : expected) late_revisions += v.find(" late") != std::string::npos;
  BOOST_TEST_MESSAGE(expected.size() << " result rows, " << late_revisions << " late re-firings");
  BOOST_REQUIRE(expected.size() > 1000u);
  BOOST_REQUIRE(late_revisions > 100u);

  // paced so that one attempt takes longer than the time before its kill
  auto paced = job;
  paced.insert(paced.end(), {"--rate", "12000", "--table", dir / "results"});
  // debug logging reports each completed checkpoint
  const std::vector<std::string> tool{"--log-level", "debug", "run", "--data-dir", dir / "state",
                                      "--checkpoint-interval", "200", "--resume"};
  std::random_device seeder;
  const auto seed = seeder();
  std::mt19937 rng{seed};
  std::uniform_int_distribution<int> kill_after_ms{0, 500};
  BOOST_TEST_MESSAGE("seed " << seed);
  const auto log = dir / "faulty.log";
  for (int kill = 0; kill < 4; ++kill) {
    // each attempt gets past one more checkpoint, then dies at a random moment after it
    const auto before = occurrences(read_file(log), " complete: ");
    auto pid = start_job(tool, paced, log);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{60};
    while (occurrences(read_file(log), " complete: ") == before) {
      BOOST_REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline,
                            "no checkpoint completed within 60 s: " << read_file(log));
      std::this_thread::sleep_for(std::chrono::milliseconds{20});
    }
    const auto wait = kill_after_ms(rng);
    std::this_thread::sleep_for(std::chrono::milliseconds{wait});
    BOOST_TEST_MESSAGE("kill " << kill + 1 << ", " << wait << " ms after a checkpoint (seed " << seed << ")");
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    BOOST_REQUIRE_MESSAGE(WIFSIGNALED(status), "the job ended before its kill: " << read_file(log));
  }
  BOOST_REQUIRE_MESSAGE(succeeded(start_job(tool, paced, log)), read_file(log));

  // every attempt after the first resumed from a checkpoint
  const auto text = read_file(log);
  BOOST_TEST(occurrences(text, "resuming job 'example-late-windows' from checkpoint") == 4u, text);

  tidemark::test::check_same_rows(expected, tidemark::test::table_rows(dir / "results", "results"));
}
