// tidemark::tune_thread_cache (runtime/heap.hpp) on a real re-execution: a child of this test calls
// it with an argv that runs the `probe` case below, which writes the GLIBC_TUNABLES the new
// program started with. Without the variable, or with other tunables, the program must run again
// with glibc.malloc.tcache_count=1000 added; with a tcache_count of the user's, it must go on
// unchanged and not run again. The new program keeps its name (what ps, top and pkill see).
#define BOOST_TEST_MODULE thread cache
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "../../support/temp_dir.hpp"
#include "tidemark/runtime/heap.hpp"

namespace utf = boost::unit_test;

namespace {

const char* probe_out = "TIDEMARK_THREAD_CACHE_PROBE";

// The kernel's name of this process (at most 15 characters of its program file's name).
std::string process_name() {
  std::string name;
  std::getline(std::ifstream("/proc/self/comm"), name);
  return name;
}

void write_seen(const std::string& who) {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  std::ofstream(std::getenv(probe_out)) << who << " " << (tunables ? tunables : "(unset)") << "\n"
                                        << process_name();
}

struct seen {
  std::string tunables;  ///< "re-executed X" (the probe case ran in the new program) or "went on X"
  std::string name;      ///< the process name it ran under
};

// What a program with GLIBC_TUNABLES = `tunables` (unset when null) saw after tune_thread_cache.
seen after_tuning(const char* tunables) {
  tidemark::test::temp_dir dir{"thread-cache"};
  const auto out = dir / "seen";
  const pid_t child = ::fork();
  BOOST_REQUIRE(child >= 0);
  if (child == 0) {
    if (tunables)
      ::setenv("GLIBC_TUNABLES", tunables, 1);
    else
      ::unsetenv("GLIBC_TUNABLES");
    ::setenv(probe_out, out.c_str(), 1);
    std::string self = "thread_cache_test", run = "--run_test=probe";
    char* argv[] = {self.data(), run.data(), nullptr};
    tidemark::tune_thread_cache(argv);
    write_seen("went on");
    ::_exit(0);
  }
  int status = 0;
  BOOST_REQUIRE(::waitpid(child, &status, 0) == child);
  BOOST_REQUIRE_MESSAGE(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                        "the child failed with status " << status);
  std::ifstream in(out);
  seen s;
  std::getline(in, s.tunables);
  std::getline(in, s.name);
  return s;
}

}  // namespace

// Run only by the re-executed program (disabled in the suite).
BOOST_AUTO_TEST_CASE(probe, *utf::disabled()) {
  write_seen("re-executed");
}

BOOST_AUTO_TEST_CASE(without_tunables_the_program_runs_again_with_a_larger_thread_cache) {
  BOOST_TEST(after_tuning(nullptr).tunables == "re-executed glibc.malloc.tcache_count=1000");
}

BOOST_AUTO_TEST_CASE(other_tunables_are_kept_and_the_thread_cache_added) {
  BOOST_TEST(after_tuning("glibc.malloc.mxfast=0").tunables ==
             "re-executed glibc.malloc.mxfast=0:glibc.malloc.tcache_count=1000");
}

BOOST_AUTO_TEST_CASE(a_thread_cache_size_of_the_users_stays_and_nothing_runs_again) {
  BOOST_TEST(after_tuning("glibc.malloc.tcache_count=7").tunables ==
             "went on glibc.malloc.tcache_count=7");
}

// Executing /proc/self/exe would rename the program "exe" (the kernel names a process after the
// file it executes), so `pkill tidemark` would miss it; the forked child has this test's name.
BOOST_AUTO_TEST_CASE(the_program_keeps_its_name) {
  const auto s = after_tuning(nullptr);
  BOOST_TEST(s.tunables == "re-executed glibc.malloc.tcache_count=1000");
  BOOST_TEST(s.name == process_name());
}
