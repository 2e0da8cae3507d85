// tidemark::tune_thread_cache (runtime/heap.hpp) on a real re-execution: a child of this test calls
// it with an argv that runs the `probe` case below, which writes the GLIBC_TUNABLES the new
// program started with. Without the variable, or with other tunables, the program must run again
// with glibc.malloc.tcache_count=1000 added; with a tcache_count of the user's, it must go on
// unchanged and not run again.
#define BOOST_TEST_MODULE thread cache
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "../../support/temp_dir.hpp"
#include "tidemark/runtime/heap.hpp"

namespace utf = boost::unit_test;

namespace {

const char* probe_out = "TIDEMARK_THREAD_CACHE_PROBE";

void write_seen(const std::string& who) {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  std::ofstream(std::getenv(probe_out)) << who << " " << (tunables ? tunables : "(unset)");
}

// What a program with GLIBC_TUNABLES = `tunables` (unset when null) saw after tune_thread_cache:
// "re-executed X" (the probe case ran in the new program) or "went on X" (the call returned).
std::string after_tuning(const char* tunables) {
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
  std::ostringstream seen;
  seen << std::ifstream(out).rdbuf();
  return seen.str();
}

}  // namespace

// Run only by the re-executed program (disabled in the suite).
BOOST_AUTO_TEST_CASE(probe, *utf::disabled()) {
  write_seen("re-executed");
}

BOOST_AUTO_TEST_CASE(without_tunables_the_program_runs_again_with_a_larger_thread_cache) {
  BOOST_TEST(after_tuning(nullptr) == "re-executed glibc.malloc.tcache_count=1000");
}

BOOST_AUTO_TEST_CASE(other_tunables_are_kept_and_the_thread_cache_added) {
  BOOST_TEST(after_tuning("glibc.malloc.mxfast=0") ==
             "re-executed glibc.malloc.mxfast=0:glibc.malloc.tcache_count=1000");
}

BOOST_AUTO_TEST_CASE(a_thread_cache_size_of_the_users_stays_and_nothing_runs_again) {
  BOOST_TEST(after_tuning("glibc.malloc.tcache_count=7") == "went on glibc.malloc.tcache_count=7");
}
