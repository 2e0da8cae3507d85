// The runtime tunes glibc's heap once per process: among others, one malloc arena per core, so
// that what threads free into their arenas stays bounded on long runs (docs/architecture.md,
// "The heap"). Not run under the sanitizers: their allocators replace glibc's.
#define BOOST_TEST_MODULE runtime heap
#include <boost/test/unit_test.hpp>

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tidemark/runtime/runtime.hpp"

using namespace tidemark;

namespace {

/// The malloc arenas glibc reports (each is a `<heap nr=...>` of malloc_info's XML).
int arenas() {
  char* text = nullptr;
  std::size_t size = 0;
  FILE* out = open_memstream(&text, &size);
  BOOST_TEST_REQUIRE(out != nullptr);
  malloc_info(0, out);
  std::fclose(out);
  const std::string xml{text, size};
  std::free(text);  // NOLINT(cppcoreguidelines-no-malloc): open_memstream's buffer
  int count = 0;
  for (auto at = xml.find("<heap nr="); at != std::string::npos; at = xml.find("<heap nr=", at + 1))
    ++count;
  return count;
}

/// Starts `n` threads that each allocate a block and hold it until all have one, so that none
/// can take over an arena another has left.
void allocate_on_threads(int n) {
  std::atomic<int> holding{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t)
    threads.emplace_back([&holding, n] {
      std::vector<char> block(4096, 'x');
      ++holding;
      while (holding.load() < n) std::this_thread::yield();
      BOOST_TEST(block.back() == 'x');
    });
  for (auto& t : threads) t.join();
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_run_limits_malloc_to_one_arena_per_core) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  BOOST_TEST_REQUIRE(arenas() == 1);  // the main thread's: no other thread has allocated yet
  job j{"heap"};
  int next = 0;
  auto counted = j.from_generator([next]() mutable -> std::optional<int> {
                    if (next == 3) return std::nullopt;
                    return next++;
                  }).count();
  run(j);  // tunes the heap before it starts a thread
  BOOST_TEST_REQUIRE(counted.value() == 3u);
  // as many threads as glibc's default number of arenas (8 per core on a 64-bit system)
  allocate_on_threads(8 * cores);
  BOOST_TEST(arenas() <= cores);
}
