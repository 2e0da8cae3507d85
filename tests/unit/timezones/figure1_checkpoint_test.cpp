// Checkpoints of a job with a timezone (issue 15, synchronizer state): the figure-1 job runs with
// checkpoints every few milliseconds until a lookup fails part-way (a crash: the checkpoints stay),
// then resumes from its latest checkpoint. The resumed run must give the serial result with no
// mismatched pair, whatever slices its synchronizer had admitted, buffered or half released when
// that checkpoint was taken.
#define BOOST_TEST_MODULE figure1 checkpoint
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>

#include "../../support/temp_dir.hpp"
#include "tidemark/examples/figure1.hpp"
#include "tidemark/runtime/runtime.hpp"

using namespace tidemark;
using namespace std::chrono_literals;

namespace {

double mismatched(const job_result& r) {
  for (const auto& m : r.per_operator())
    if (m.name == "join") return m.extra.at("mismatched");
  return -1;
}

struct fixture {
  test::temp_dir dir{"figure1-checkpoint"};
  figure1::config c;
  fixture() {
    c.db = persistence::wt_connection::open(dir / "db");
    // long enough (about 0.3 s a run) for checkpoints to complete before the failure
    c.elements = 800;
    c.concurrency = 8;
    c.min_delay_us = 500;
    c.max_delay_us = 1500;
    figure1::fill_table(c);
  }

  run_options checkpointed(const std::string& name) const {
    run_options o;
    o.threads = 2;
    // small batches and little credit keep the barriers' alignment short (a few ms)
    o.batch_size = 8;
    o.credit = 2;
    o.checkpoints.dir = dir / name;
    o.checkpoints.interval = 3ms;
    return o;
  }
};

}  // namespace

BOOST_FIXTURE_TEST_CASE(a_run_resumed_from_a_checkpoint_taken_mid_run_gives_the_serial_result,
                        fixture) {
  const auto expected = figure1::serial_result(c.elements);
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    BOOST_TEST_CONTEXT("seed " << seed) {
      c.seed = seed;
      const auto name = "checkpoints-" + std::to_string(seed);
      // the lookup of a reading 57 to 93 % of the way fails the first run
      c.fail_at = static_cast<std::int64_t>(c.elements * (45 + 12 * seed) / 100);
      collected<figure1::joined> lost;
      BOOST_CHECK_EXCEPTION(run(figure1::build(c, lost), checkpointed(name)), job_error,
                            [&](const job_error& e) {
                              return std::string{e.what()}.find(
                                         "the lookup of reading " + std::to_string(c.fail_at) +
                                         " fails on purpose") != std::string::npos;
                            });

      c.fail_at = -1;
      auto again = checkpointed(name);
      again.checkpoints.resume = true;
      collected<figure1::joined> out;
      const auto resumed = run(figure1::build(c, out), again);
      BOOST_TEST(resumed.restored_from > 0u);
      BOOST_TEST(mismatched(resumed) == 0.0);
      auto got = out.values();
      std::sort(got.begin(), got.end());
      BOOST_TEST(figure1::mismatches(got) == 0u);
      BOOST_TEST((got == expected));
    }
  }
}
