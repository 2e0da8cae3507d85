// storage_faults_embedded: `example-late-windows` with checkpoints on a disk that fills up or
// fails. A real full disk: the checkpoint directory is a 2 MiB tmpfs; checkpoints fail with
// "No space left on device" naming the directory, the job fails after five in a row, no stored
// checkpoint is corrupt, and once the tmpfs is made larger a resumed run ends with the table of a
// run without faults. Injected EIO: set_storage_faults fails 30 % of the checkpoint directory's
// writes for a while; some checkpoints fail, the job goes on and finishes with the fault-free
// table. The tmpfs case mounts, so it needs root (CI runs as root); without root it fails.
#define BOOST_TEST_MODULE storage_faults_embedded
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../../support/result_rows.hpp"
#include "../../support/temp_dir.hpp"
#include "../../support/tool_process.hpp"
#include "tidemark/examples/example_jobs.hpp"
#include "tidemark/persistence/checkpoint_store.hpp"
#include "tidemark/persistence/faults.hpp"
#include "tidemark/runtime/runtime.hpp"


namespace {

using tidemark::test::read_file;
using tidemark::test::succeeded;

namespace p = tidemark::persistence;

const std::string job_name = "example-late-windows";
const std::vector<std::string> readings{"--events", "100000", "--keys", "20", "--parallelism", "2"};

/// Runs `tidemark TOOL_ARGS... example-late-windows JOB_ARGS...` with stderr into `log`; true
/// when it exited with status 0.
bool run_tool(const std::vector<std::string>& tool_args, const std::vector<std::string>& job_args,
              const std::string& log) {
  return tidemark::test::succeeded(tidemark::test::start_tool(tool_args, job_name, job_args, log));
}

bool contains(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

/// The results table of a run without checkpoints and faults: the reference.
tidemark::test::result_rows reference_rows(const tidemark::test::temp_dir& dir) {
  auto args = readings;
  args.insert(args.end(), {"--table", dir / "reference"});
  BOOST_REQUIRE_MESSAGE(run_tool({"run"}, args, dir / "reference.log"),
                        read_file(dir / "reference.log"));
  auto rows = tidemark::test::table_rows(dir / "reference", "results");
  BOOST_REQUIRE(rows.size() > 1000u);
  return rows;
}

/// A tmpfs of `size` mounted on `dir` for the test's lifetime.
class small_tmpfs {
 public:
  small_tmpfs(const std::string& dir, const std::string& size) : dir_(dir) {
    BOOST_REQUIRE_MESSAGE(::geteuid() == 0,
                          "this test mounts a small tmpfs to fill a disk for real, which needs "
                          "root (CI runs the tests as root): run it as root");
    std::filesystem::create_directories(dir_);
    BOOST_REQUIRE_MESSAGE(::mount("tmpfs", dir_.c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0,
                          "mounting a tmpfs on " << dir_ << ": " << std::strerror(errno));
  }
  ~small_tmpfs() { ::umount2(dir_.c_str(), MNT_DETACH); }
  small_tmpfs(const small_tmpfs&) = delete;
  small_tmpfs& operator=(const small_tmpfs&) = delete;

  /// Frees space: the same files on a larger tmpfs.
  void grow(const std::string& size) {
    BOOST_REQUIRE_MESSAGE(
        ::mount("tmpfs", dir_.c_str(), "tmpfs", MS_REMOUNT, ("size=" + size).c_str()) == 0,
        "remounting " << dir_ << " larger: " << std::strerror(errno));
  }

 private:
  std::string dir_;
};

}  // namespace

BOOST_AUTO_TEST_CASE(
    a_full_disk_fails_checkpoints_clearly_corrupts_none_and_a_resumed_run_is_exact) {
  tidemark::test::temp_dir dir{"storage-faults"};
  const auto expected = reference_rows(dir);
  const auto checkpoints = dir / "state/checkpoints";
  small_tmpfs disk{checkpoints, "2m"};
  // paced so that the 2 MiB fill up long before the readings end
  auto paced = readings;
  paced.insert(paced.end(), {"--rate", "6000", "--table", dir / "results"});
  const std::vector<std::string> tool{"--log-level",
                                      "debug",
                                      "run",
                                      "--data-dir",
                                      dir / "state",
                                      "--checkpoint-interval",
                                      "200",
                                      "--resume",
                                      "--max-checkpoint-failures",
                                      "5"};
  const auto log = dir / "full.log";
  BOOST_REQUIRE_MESSAGE(!run_tool(tool, paced, log),
                        "the job finished before the disk was full: " << read_file(log));
  const auto text = read_file(log);
  // checkpoints completed until the disk was full, then failed naming the cause and the
  // directory, and the fifth failure in a row ended the job with that error
  BOOST_TEST(contains(text, " complete: "), text);
  BOOST_TEST((contains(text, "failed: writing the piece of stage") ||
              contains(text, "failed: recording it")),
             text);
  BOOST_TEST(contains(text, "No space left on device"), text);
  BOOST_TEST(contains(text, "in '" + checkpoints + "'"), text);
  BOOST_TEST(contains(text, "5 checkpoints in a row failed"), text);

  disk.grow("64m");
  std::uint64_t newest = 0;
  {
    // the newest recorded checkpoint is complete and intact: the full disk corrupted nothing
    p::checkpoint_store store{checkpoints};
    const auto all = store.list();
    BOOST_REQUIRE(!all.empty());
    newest = all.back().id;
    const auto latest = store.latest(job_name, all.back().plan);
    BOOST_TEST(latest.record.id == newest);
    BOOST_TEST(latest.rejected.empty());
  }
  const auto resumed_log = dir / "resumed.log";
  BOOST_REQUIRE_MESSAGE(
      run_tool({"run", "--data-dir", dir / "state", "--resume"}, paced, resumed_log),
      read_file(resumed_log));
  const auto resumed = read_file(resumed_log);
  BOOST_TEST(contains(resumed, "resuming job '" + job_name + "' from checkpoint " +
                                   std::to_string(newest) + " "),
             resumed);
  BOOST_TEST(!contains(resumed, "not usable"), resumed);
  tidemark::test::check_same_rows(expected, tidemark::test::table_rows(dir / "results", "results"));
}

BOOST_AUTO_TEST_CASE(injected_eio_fails_some_checkpoints_and_the_job_still_ends_exact) {
  tidemark::test::temp_dir dir{"storage-faults"};
  const auto expected = reference_rows(dir);
  tidemark::job_registry registry;
  tidemark::examples::register_late_windows(registry);
  const auto& spec = registry.find(job_name);
  auto options = spec.make_options();
  for (std::size_t i = 0; i + 1 < readings.size(); i += 2)
    options.set(readings[i].substr(2), readings[i + 1]);
  options.set("rate", "10000");
  options.set("table", dir / "results");

  tidemark::run_options run;
  run.storage.data_dir = dir / "window_state";
  run.checkpoints.dir = dir / "checkpoints";
  run.checkpoints.interval = std::chrono::milliseconds{100};
  // every checkpoint writes about ten times, so at 30 % nearly all fail while the fault lasts:
  // no bound here, this case is about the job going on
  run.checkpoints.max_consecutive_failures = 0;

  // from 1 s to 3 s into the 10 s run, 30 % of the writes in the checkpoint directory fail
  std::thread disk{[&] {
    std::this_thread::sleep_for(std::chrono::seconds{1});
    p::storage_faults f;
    f.fail_writes = 0.3;
    f.seed = 17;
    f.dir = run.checkpoints.dir;
    p::set_storage_faults(f);
    std::this_thread::sleep_for(std::chrono::seconds{2});
    p::set_storage_faults({});
  }};
  tidemark::job_result result;
  try {
    result = tidemark::run(spec.build(options), run);
  } catch (...) {
    disk.join();
    throw;
  }
  disk.join();

  BOOST_TEST_MESSAGE(result.checkpoints.size()
                     << " checkpoints completed, " << result.failed_checkpoints << " failed");
  BOOST_TEST(result.failed_checkpoints > 0u);
  BOOST_TEST(contains(result.checkpoint_failure, "input/output error (injected)"),
             result.checkpoint_failure);
  BOOST_TEST(contains(result.checkpoint_failure, "in '" + run.checkpoints.dir + "'"),
             result.checkpoint_failure);
  // checkpoints completed again once the disk healed
  const auto first_failed =
      std::stoull(result.checkpoint_failure.substr(std::strlen("checkpoint ")));
  BOOST_REQUIRE(!result.checkpoints.empty());
  BOOST_TEST(result.checkpoints.back().id > first_failed);
  tidemark::test::check_same_rows(expected, tidemark::test::table_rows(dir / "results", "results"));
}
