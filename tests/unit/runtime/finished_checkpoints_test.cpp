// Checkpoints after part of a job ended (issue 15): a short input ends at once while a long one
// runs on; the stages of the short branch answer every later checkpoint that they finished, so
// checkpoints go on for the rest of the run instead of stopping at the first instance that ended,
// and the results are the same as without checkpoints. Step-by-step cases (what a stage that
// ended answers, a restore of one) are in stage_core_test.
#define BOOST_TEST_MODULE finished checkpoints
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include "../../support/temp_dir.hpp"
#include "tidemark/runtime/runtime.hpp"

using namespace tidemark;
using namespace std::chrono_literals;

namespace {

/// 100 numbers at once and 2000 more at about one per ms, merged, counted per key.
std::vector<std::pair<int, std::int64_t>> run_short_and_long(const run_options& opts,
                                                            job_result* result = nullptr) {
  job j{"short-and-long"};
  std::vector<int> few(100);
  for (int i = 0; i < 100; ++i) few[i] = i;
  auto short_input = j.from_container(few, "short");
  auto next = std::make_shared<std::atomic<int>>(0);
  auto long_input = j.from_generator(
      [next]() -> std::optional<int> {
        const int i = (*next)++;
        if (i >= 2000) return std::nullopt;
        std::this_thread::sleep_for(500us);
        return 1000 + i;
      },
      "long");
  auto counts = short_input.merge(long_input)
                    .key_by([](int x) { return x % 7; })
                    .fold(std::int64_t{0}, [](std::int64_t n, int) { return n + 1; })
                    .collect();
  auto r = run(j, opts);
  if (result) *result = r;
  std::vector<std::pair<int, std::int64_t>> out = counts.values();
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(checkpoints_go_on_after_a_source_ended_with_the_same_results) {
  run_options plain;
  plain.print_summary = false;
  const auto expected = run_short_and_long(plain);
  BOOST_REQUIRE(!expected.empty());

  test::temp_dir dir{"finished-checkpoints"};
  auto opts = plain;
  opts.checkpoints.dir = dir / "checkpoints";
  opts.checkpoints.interval = 50ms;
  job_result result;
  const auto got = run_short_and_long(opts, &result);
  BOOST_TEST(got == expected);
  // the short input ended within the first checkpoint interval, the long one runs for about a
  // second: checkpoints go on all along (before, none started once the short source had ended)
  BOOST_TEST_MESSAGE(result.checkpoints.size() << " checkpoints in " << result.seconds << " s");
  BOOST_TEST(result.checkpoints.size() >= 5u);
  BOOST_TEST(result.failed_checkpoints == 0u);
  for (const auto& c : result.checkpoints) BOOST_TEST(c.pieces > 0u);
}
