// Backpressure: with a sink that sleeps, what is buffered stays within the credit bound for the
// whole run, and nothing is lost.
#define BOOST_TEST_MODULE runtime backpressure
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "tidemark/runtime/runtime.hpp"

using namespace tidemark;

BOOST_AUTO_TEST_CASE(slow_sink_bounds_buffered_batches) {
  constexpr int events = 20000;
  std::atomic<std::int64_t> peak_seen{0};
  std::atomic<int> received{0};
  job j{"backpressure"};
  int next = 0;
  j.from_generator([next]() mutable -> std::optional<int> {
     if (next == events) return std::nullopt;
     return next++;
   })
      .map([](int x) { return x + 1; })
      .parallelism(2)
      .rebalance()
      .filter([](int) { return true; })
      .parallelism(3)
      .for_each([&](int) {
        // sample the live batches from inside the slow consumer, many times over the run
        auto live = batch_gauge::live();
        auto seen = peak_seen.load();
        while (live > seen && !peak_seen.compare_exchange_weak(seen, live)) {
        }
        if (++received % 50 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
      });

  run_options opts;
  opts.batch_size = 16;
  opts.credit = 3;
  opts.fuse = false;
  auto result = run(j, opts);

  // Channels: source->map 1x2 (forward, parallelism differs: all to all), map->filter 2x3,
  // filter->sink 3x1 (forward, differs) = 2 + 6 + 3 = 11 channels of `credit` batches in flight.
  const auto stages = 4;
  const auto channels = 11;
  const std::int64_t in_flight = channels * opts.credit;
  // Each stage instance also holds at most one batch under construction per output channel and
  // one being processed.
  const std::int64_t instances = 1 + 2 + 3 + 1;
  const std::int64_t bound = in_flight + channels + instances;
  BOOST_TEST(received.load() == events);
  BOOST_TEST(result.peak_live_batches <= bound);
  BOOST_TEST(peak_seen.load() <= bound);
  BOOST_TEST(peak_seen.load() > 0);
  for (const auto& inst : result.instances) BOOST_TEST(inst.max_queued_batches <= 3u * opts.credit);
  // without credit, 20000 / 16 = 1250 batches would pile up in front of the sink
  BOOST_TEST_MESSAGE("peak live batches " << result.peak_live_batches << " (bound " << bound << ", "
                                          << stages << " stages)");
}
