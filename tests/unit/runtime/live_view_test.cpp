// The live view: while a job runs, run_options::live shows every stage instance's counters and
// watermark as they grow; when it ends, the last snapshot is marked finished and holds the same
// counters as the job's result.
#define BOOST_TEST_MODULE runtime live view
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <thread>

#include "../../support/wait_until.hpp"
#include "tidemark/runtime/live.hpp"
#include "tidemark/runtime/runtime.hpp"

using namespace tidemark;

namespace {

constexpr int events = 2000;

/// The counters of operator `name` summed over its instances in `instances`.
operator_metrics totals(const std::vector<instance_metrics>& instances, const std::string& name) {
  operator_metrics t;
  for (const auto& inst : instances)
    for (const auto& m : inst.operators)
      if (m.name == name) {
        t.events_in += m.events_in;
        t.events_out += m.events_out;
      }
  return t;
}

}  // namespace

BOOST_AUTO_TEST_CASE(shows_progress_while_running_and_the_final_counters_at_the_end) {
  job j{"live"};
  int next = 0;
  j.from_generator(
       [next]() mutable -> std::optional<int> {
         if (next == events) return std::nullopt;
         return next++;
       },
       "numbers")
      .assign_timestamps([](int x) -> event_time { return x; },
                         ascending_timestamps().every_events(16), "stamp")
      .rebalance()
      .for_each([](int) { std::this_thread::sleep_for(std::chrono::microseconds(500)); }, "slow");

  run_options opts;
  opts.batch_size = 16;
  opts.credit = 2;
  opts.threads = 2;
  opts.live = std::make_shared<live_view>();
  opts.live_period = std::chrono::milliseconds{10};
  BOOST_TEST(opts.live->latest() == nullptr);

  job_result result;
  std::thread runner{[&] { result = run(j, opts); }};

  // mid-run: the sink has taken some events, not all, and the watermark moved
  std::shared_ptr<const live_snapshot> mid;
  test::wait_until([&] {
    mid = opts.live->latest();
    if (!mid || mid->finished) return false;
    auto slow = totals(mid->instances, "slow");
    return slow.events_in > 0 && slow.events_in < static_cast<std::uint64_t>(events);
  });
  runner.join();

  BOOST_REQUIRE(mid->plan);
  BOOST_TEST(mid->plan->job == "live");
  BOOST_REQUIRE_EQUAL(mid->plan->stages.size(), 2u);  // rebalance splits the chain in two stages
  BOOST_TEST(mid->plan->stages[0].operators ==
             (std::vector<std::string>{"numbers", "stamp"}), boost::test_tools::per_element());
  BOOST_TEST(mid->plan->stages[1].operators == std::vector<std::string>{"slow"},
             boost::test_tools::per_element());
  BOOST_REQUIRE_EQUAL(mid->plan->edges.size(), 1u);
  BOOST_TEST(mid->plan->edges[0].partitioning == "rebalance");
  BOOST_TEST(mid->plan->stages[0].nodes == std::vector<std::string>{"local"},
             boost::test_tools::per_element());

  auto last = opts.live->latest();
  BOOST_REQUIRE(last);
  BOOST_TEST(last->finished);
  BOOST_TEST(last->seconds >= mid->seconds);
  BOOST_REQUIRE_EQUAL(last->instances.size(), result.instances.size());
  for (const auto* name : {"numbers", "stamp", "slow"}) {
    BOOST_TEST(totals(last->instances, name).events_out == totals(result.instances, name).events_out);
    BOOST_TEST(totals(last->instances, name).events_in == totals(result.instances, name).events_in);
  }
  BOOST_TEST(totals(last->instances, "slow").events_in == static_cast<std::uint64_t>(events));
  // the source stage passed on watermarks up to the end of the stream
  BOOST_TEST(last->instances[0].watermark == end_of_time);
}
