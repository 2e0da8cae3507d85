// exactly_once_embedded: `tidemark run example-late-windows` with checkpoints is killed with
// SIGKILL four times at random moments and resumed with --resume each time; the results table it
// finally holds must equal, row for row, the table of a run without faults (nothing lost, nothing
// twice, the same revision ids). The job has keyed tumbling windows with late re-firings, tiered
// window state on disk and a WiredTiger table sink. A second case damages the two newest
// checkpoints of a killed run (a corrupt piece, a missing piece): the resumed run names both and
// restores from the one before them, with the same final table; before that, a resume with other
// job options is refused.
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
#include "../../support/tool_process.hpp"
#include "tidemark/persistence/checkpoint_store.hpp"
#include "tidemark/persistence/table_store.hpp"


namespace {

using tidemark::test::read_file;
using tidemark::test::succeeded;

/// Starts `tidemark TOOL_ARGS... example-late-windows JOB_ARGS...` with stderr into `log`.
pid_t start_job(const std::vector<std::string>& tool_args, const std::vector<std::string>& job_args,
                const std::string& log) {
  return tidemark::test::start_tool(tool_args, "example-late-windows", job_args, log);
}

/// How often `what` occurs in `text`.
std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

/// The job's readings, the table of a run without checkpoints and faults, and the arguments of
/// the runs the cases kill and resume.
struct late_windows {
  tidemark::test::temp_dir dir{"exactly-once"};
  const std::vector<std::string> job{"--events", "100000", "--keys", "20", "--parallelism", "2"};
  tidemark::test::result_rows expected;
  std::vector<std::string> paced;
  // debug logging reports each completed checkpoint
  std::vector<std::string> tool{"--log-level", "debug", "run", "--data-dir", dir / "state",
                                "--checkpoint-interval", "200", "--resume"};
  const std::string log = dir / "faulty.log";

  late_windows() {
    // the reference: the same readings without checkpoints and faults, as fast as possible
    auto reference_job = job;
    reference_job.insert(reference_job.end(), {"--table", dir / "reference"});
    BOOST_REQUIRE_MESSAGE(succeeded(start_job({"run"}, reference_job, dir / "reference.log")),
                          read_file(dir / "reference.log"));
    expected = tidemark::test::table_rows(dir / "reference", "results");
    // the reference exercises what the test is about: late re-firings and readings past lateness
    std::size_t late_revisions = 0;
    for (const auto& [k, v] : expected) late_revisions += v.find(" late") != std::string::npos;
    BOOST_TEST_MESSAGE(expected.size() << " result rows, " << late_revisions << " late re-firings");
    BOOST_REQUIRE(expected.size() > 1000u);
    BOOST_REQUIRE(late_revisions > 100u);
    // paced so that one attempt takes longer than the time before its kill
    paced = job;
    paced.insert(paced.end(), {"--rate", "12000", "--table", dir / "results"});
  }

  /// Starts an attempt and SIGKILLs it `after` a moment once `checkpoints` more checkpoints
  /// completed.
  void run_and_kill(std::size_t checkpoints, std::chrono::milliseconds after) {
    const auto before = occurrences(read_file(log), " complete: ");
    auto pid = start_job(tool, paced, log);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{60};
    while (occurrences(read_file(log), " complete: ") < before + checkpoints) {
      BOOST_REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline,
                            "no checkpoint completed within 60 s: " << read_file(log));
      std::this_thread::sleep_for(std::chrono::milliseconds{20});
    }
    std::this_thread::sleep_for(after);
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    BOOST_REQUIRE_MESSAGE(WIFSIGNALED(status), "the job ended before its kill: " << read_file(log));
  }

  /// Four attempts killed at random moments after a checkpoint, then one to the end: the table
  /// equals the reference.
  void kill_four_times_and_finish() {
    std::random_device seeder;
    const auto seed = seeder();
    std::mt19937 rng{seed};
    std::uniform_int_distribution<int> kill_after_ms{0, 500};
    BOOST_TEST_MESSAGE("seed " << seed);
    for (int kill = 0; kill < 4; ++kill) {
      // each attempt gets past one more checkpoint, then dies at a random moment after it
      const auto wait = std::chrono::milliseconds{kill_after_ms(rng)};
      BOOST_TEST_MESSAGE("kill " << kill + 1 << ", " << wait.count() << " ms after a checkpoint (seed "
                                 << seed << ")");
      run_and_kill(1, wait);
    }
    BOOST_REQUIRE_MESSAGE(succeeded(start_job(tool, paced, log)), read_file(log));

    // every attempt after the first resumed from a checkpoint
    const auto text = read_file(log);
    BOOST_TEST(occurrences(text, "resuming job 'example-late-windows' from checkpoint") == 4u, text);

    tidemark::test::check_same_rows(expected, tidemark::test::table_rows(dir / "results", "results"));
  }
};

/// The 8-byte big-endian id that starts the keys of a checkpoint's pieces and chunks (the layout
/// checkpoint_store.hpp documents).
std::string id_prefix(std::uint64_t id) {
  std::string k;
  for (int shift = 56; shift >= 0; shift -= 8) k += static_cast<char>((id >> shift) & 0xff);
  return k;
}

}  // namespace

BOOST_FIXTURE_TEST_CASE(four_kills_and_resumes_give_the_table_of_a_run_without_faults, late_windows) {
  kill_four_times_and_finish();
}

// The same with unaligned checkpoints: the batches a barrier overtook are in the pieces, and
// handled again after each resume.
BOOST_FIXTURE_TEST_CASE(four_kills_with_unaligned_checkpoints_give_the_same_table, late_windows) {
  tool.push_back("--unaligned");
  kill_four_times_and_finish();
}

BOOST_FIXTURE_TEST_CASE(a_corrupt_and_a_missing_piece_are_named_and_an_older_checkpoint_restores,
                        late_windows) {
  run_and_kill(3, std::chrono::milliseconds{0});
  // a resume with other job options would mix two inputs: refused, the checkpoints left alone
  auto other = paced;
  other[1] = "90000";  // --events
  const auto other_log = dir / "other-options.log";
  BOOST_REQUIRE(!succeeded(start_job(tool, other, other_log)));
  BOOST_TEST(read_file(other_log).find("written for another plan or other job options") !=
                 std::string::npos,
             read_file(other_log));
  std::uint64_t newest = 0;
  {
    namespace p = tidemark::persistence;
    auto db = p::wt_connection::open(dir / "state/checkpoints", "log=(enabled=true)");
    const auto all = p::checkpoint_store{db}.list();
    BOOST_REQUIRE(all.size() >= 3u);
    newest = all.back().id;
    // the newest checkpoint: one byte of one chunk flipped
    p::table_store chunks{db, "checkpoint.chunks", p::durability::power_loss};
    auto rows = chunks.prefix(id_prefix(newest), 1);
    BOOST_REQUIRE(!rows.empty() && !rows[0].value.empty());
    rows[0].value[0] ^= 1;
    chunks.insert(rows[0].key, rows[0].value);
    // the one before: one piece gone
    p::table_store pieces{db, "checkpoint.pieces", p::durability::power_loss};
    auto piece = pieces.prefix(id_prefix(newest - 1), 1);
    BOOST_REQUIRE(!piece.empty());
    BOOST_REQUIRE(pieces.remove(piece[0].key));
  }
  BOOST_REQUIRE_MESSAGE(succeeded(start_job(tool, paced, log)), read_file(log));
  const auto text = read_file(log);
  const auto named = [&](std::uint64_t id, const std::string& what) {
    return text.find("checkpoint " + std::to_string(id) + ": piece stage ") != std::string::npos &&
           text.find(what) != std::string::npos;
  };
  BOOST_TEST(named(newest, "is corrupt (CRC-32 mismatch)"), text);
  BOOST_TEST(named(newest - 1, "is missing"), text);
  BOOST_TEST(occurrences(text, "resuming job 'example-late-windows' from checkpoint " +
                                   std::to_string(newest - 2) + " ") == 1u,
             text);
  tidemark::test::check_same_rows(expected, tidemark::test::table_rows(dir / "results", "results"));
}
