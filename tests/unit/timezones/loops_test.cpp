// Loops at run time (job::iterate, docs/timezones.md "Loops at run time"): every element goes
// around as often as its own computation says and leaves once; no element leaves the loop behind
// the watermark, which still moves while the loop runs; the loop ends once its input ended and
// nothing is left in it; the patent's figure 4c (a delayed operator in a loop) equals the serial
// result on every seeded run, and mismatches without synchronizers; a loop that fails part-way
// resumes from a checkpoint (aligned and unaligned) with every walk once; an operator that emits
// into the loop at its end fails the job instead of losing elements.
#define BOOST_TEST_MODULE loops
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <thread>

#include "../../support/temp_dir.hpp"
#include "figure1_runs.hpp"
#include "tidemark/core/codec.hpp"
#include "tidemark/examples/figure1.hpp"
#include "tidemark/runtime/runtime.hpp"

using namespace tidemark;

namespace {

/// A Collatz walk: the number it started from, where it is, the steps taken.
struct walk {
  std::int64_t n = 0;
  std::int64_t value = 0;
  std::int32_t steps = 0;
  TIDEMARK_FIELDS(n, value, steps)
};

std::int64_t collatz_step(std::int64_t v) { return v % 2 ? 3 * v + 1 : v / 2; }

/// The reference: steps until 1, at least one (a walk from 1 goes 1 -> 4 -> 2 -> 1).
std::map<std::int64_t, std::int32_t> collatz_steps(std::int64_t numbers) {
  std::map<std::int64_t, std::int32_t> steps;
  for (std::int64_t n = 1; n <= numbers; ++n) {
    std::int64_t v = n;
    std::int32_t s = 0;
    do {
      v = collatz_step(v);
      ++s;
    } while (v != 1);
    steps[n] = s;
  }
  return steps;
}

/// What the elements leaving a loop showed about its watermark.
struct watermark_watch {
  std::atomic<std::uint64_t> behind{0};     // elements below a watermark seen before them
  std::atomic<std::uint64_t> watermarks{0}; // watermarks below the end of time
};

/// Passes elements on and checks each against the watermark seen last.
class watermark_checker final : public operator_logic {
 public:
  explicit watermark_checker(std::shared_ptr<watermark_watch> w) : w_(std::move(w)) {}
  void process(std::size_t, batch_ptr in, emitter& out) override {
    for (auto t : in->times) w_->behind += t < wm_ ? 1 : 0;
    out.emit(std::move(in));
  }
  void on_watermark(event_time wm, emitter& out) override {
    wm_ = wm;
    if (wm < end_of_time) ++w_->watermarks;
    out.emit_watermark(wm);
  }

 private:
  std::shared_ptr<watermark_watch> w_;
  event_time wm_ = start_of_time;
};

/// One Collatz step per walk. With `fail`, the job fails at the first walk after ten checkpoints
/// completed (until then it slows down, so that checkpoints complete before the loop is done).
class collatz_step_logic final : public operator_logic {
 public:
  explicit collatz_step_logic(bool fail) : fail_(fail) {}
  void process(std::size_t, batch_ptr in, emitter& out) override {
    if (fail_ && completed_ >= 10) throw job_error("the step fails on purpose");
    if (fail_) std::this_thread::sleep_for(std::chrono::microseconds(50));
    for (auto& w : static_cast<batch<walk>&>(*in).values) {
      w.value = collatz_step(w.value);
      ++w.steps;
    }
    out.emit(std::move(in));
  }
  void on_checkpoint_complete(std::uint64_t) override { ++completed_; }

 private:
  bool fail_;
  int completed_ = 0;
};

struct collatz_run {
  std::vector<walk> out;
  std::shared_ptr<watermark_watch> watch = std::make_shared<watermark_watch>();
  job_result result;
};

/// numbers 1..`numbers` (event time: the number, when `timed`) -> merge with the loop -> step
/// (at `parallelism`) -> back into the loop until 1, else out; `fail`: the step fails the job
/// once checkpoints completed.
collatz_run run_collatz(std::int64_t numbers, std::uint32_t parallelism, bool timed,
                        run_options o = {}, bool fail = false) {
  job j{"collatz"};
  std::vector<walk> xs;
  for (std::int64_t n = 1; n <= numbers; ++n) xs.push_back({n, n, 0});
  auto in = j.from_container(std::move(xs), "numbers");
  if (timed)
    in = in.assign_timestamps([](const walk& w) { return w.n; },
                              ascending_timestamps().every_events(16), "event_time");
  auto loop = j.iterate<walk>("back");
  auto stepped = in.merge(loop.feedback()).name("merge").transform<walk>(
      "collatz_step", [fail](const instance_info&) {
        return std::make_unique<collatz_step_logic>(fail);
      }, "step");
  stepped.parallelism(parallelism);
  loop.close(stepped.filter([](const walk& w) { return w.value != 1; }, "again"));
  collatz_run r;
  auto done = stepped.filter([](const walk& w) { return w.value == 1; }, "done")
                  .transform<walk>("watermark_checker", [w = r.watch](const instance_info&) {
                    return std::make_unique<watermark_checker>(w);
                  }, "check");
  auto out = done.collect("out");
  o.threads = 2;
  o.batch_size = 8;
  r.result = run(j, o);
  r.out = out.values();
  return r;
}

/// Every walk left once, with its step count.
void check_walks(const collatz_run& r, std::int64_t numbers) {
  const auto expected = collatz_steps(numbers);
  std::map<std::int64_t, std::int32_t> got;
  for (const auto& w : r.out) {
    BOOST_TEST_REQUIRE(got.count(w.n) == 0u, "walk " << w.n << " left the loop twice");
    got[w.n] = w.steps;
  }
  BOOST_TEST((got == expected));
}

void check_collatz(std::int64_t numbers, std::uint32_t parallelism, bool timed) {
  auto r = run_collatz(numbers, parallelism, timed);
  check_walks(r, numbers);
  BOOST_TEST(r.watch->behind.load() == 0u);
  if (timed) BOOST_TEST(r.watch->watermarks.load() > 1u);  // it moved while the loop ran
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_walk_goes_around_until_done_and_leaves_once) {
  check_collatz(2000, 1, true);
}

BOOST_AUTO_TEST_CASE(a_parallel_step_in_the_loop) { check_collatz(2000, 2, true); }

BOOST_AUTO_TEST_CASE(a_loop_without_event_time_ends_too) { check_collatz(500, 1, false); }

// Checkpoints of a loop: its feedback stage starts the barrier when it hears of the checkpoint
// and keeps what comes back over the feedback edge until the barrier returns (the feedback
// channel's part of the cut). A run that fails part-way resumes from its latest checkpoint.
BOOST_AUTO_TEST_CASE(a_loop_resumed_from_a_checkpoint_gives_every_walk_once) {
  test::temp_dir dir{"loop-checkpoints"};
  const std::int64_t numbers = 20000;
  for (bool unaligned : {false, true}) {
    for (int round = 0; round < 2; ++round) {
      BOOST_TEST_CONTEXT((unaligned ? "unaligned" : "aligned") << ", round " << round) {
        run_options o;
        o.credit = 2;
        o.checkpoints.dir = dir / ((unaligned ? "u" : "a") + std::to_string(round));
        o.checkpoints.interval = std::chrono::milliseconds{3};
        o.checkpoints.unaligned = unaligned;
        BOOST_CHECK_EXCEPTION(run_collatz(numbers, 1, true, o, true), job_error,
                              [&](const job_error& e) {
                                return std::string{e.what()}.find("fails on purpose") !=
                                       std::string::npos;
                              });
        o.checkpoints.resume = true;
        auto r = run_collatz(numbers, 1, true, o);
        BOOST_TEST(r.result.restored_from > 0u);
        check_walks(r, numbers);
      }
    }
  }
}

namespace {

/// Keeps every element to itself and emits them all at its end, a lap further.
class hoard final : public operator_logic {
 public:
  void process(std::size_t, batch_ptr in, emitter&) override {
    for (auto x : static_cast<batch<int>&>(*in).values)
      if (x < 100) kept_.push_back(x + 100);
  }
  void finish(emitter& out) override {
    if (!kept_.empty()) out.emit(std::make_unique<batch<int>>(std::move(kept_)));
  }

 private:
  std::vector<int> kept_;
};

}  // namespace

BOOST_AUTO_TEST_CASE(elements_fed_back_after_the_loop_ended_fail_the_job) {
  job j{"late_feedback"};
  auto loop = j.iterate<int>("back");
  auto body = j.from_container(std::vector<int>{1, 2, 3}, "numbers")
                  .merge(loop.feedback())
                  .name("merge")
                  .transform<int>("hoard", [](const instance_info&) {
                    return std::make_unique<hoard>();
                  }, "hoard");
  loop.close(body.filter([](int x) { return x >= 100; }, "again"));
  body.count("out");
  std::string error;
  try {
    run(j);
  } catch (const job_error& e) {
    error = e.what();
  }
  BOOST_TEST(error.find("the loop through 'back' got elements back after it ended") !=
                 std::string::npos,
             error);
}

namespace {

struct figure4c_fixture : test::figure1_runs {
  static constexpr std::uint32_t laps = 3;
  figure4c_fixture() : figure1_runs("figure4c") {}
  std::vector<figure1::joined> run_once(std::uint64_t seed, bool synchronizers) {
    return run_seeded(seed, synchronizers,
                      [this](auto& out) { return figure1::build_loop(c, laps, out); });
  }
};

}  // namespace

// The lookup join is a delayed operator in the loop: its timezone is the loop, and the
// synchronizer lets the next timestamp in only once nothing of the last is left in the loop.
BOOST_FIXTURE_TEST_CASE(figure4c_every_seeded_run_equals_the_serial_result, figure4c_fixture) {
  const auto expected = figure1::serial_loop_result(c.elements, laps);
  for (std::uint64_t seed = 1; seed <= 50; ++seed) {
    auto got = run_once(seed, true);
    BOOST_TEST_REQUIRE(figure1::mismatches(got) == 0u, "seed " << seed);
    BOOST_TEST_REQUIRE((got == expected), "seed " << seed);
  }
}

BOOST_FIXTURE_TEST_CASE(figure4c_without_synchronizers_pairs_mismatch, figure4c_fixture) {
  std::size_t mismatched = 0;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    auto got = run_once(seed, false);
    BOOST_TEST(got.size() == c.elements * laps);
    mismatched += figure1::mismatches(got);
  }
  BOOST_TEST(mismatched > 0u);
}
