// The patent's figure 1 at run time: a table lookup join with random latency beside a direct
// path, paired downstream. With synchronizers every seeded run equals the serial result; with
// them off (debug option) pairs mismatch. Also async_map on its own.
#define BOOST_TEST_MODULE figure1
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <thread>

#include "figure1_runs.hpp"
#include "tidemark/examples/figure1.hpp"
#include "tidemark/runtime/job_registry.hpp"
#include "tidemark/persistence/table_store.hpp"
#include "tidemark/runtime/runtime.hpp"

using namespace tidemark;

namespace {

struct fixture : test::figure1_runs {
  fixture() : figure1_runs("figure1") {}
  std::vector<figure1::joined> run_once(std::uint64_t seed, bool synchronizers) {
    return run_seeded(seed, synchronizers, [this](auto& out) { return figure1::build(c, out); });
  }
};

}  // namespace

BOOST_FIXTURE_TEST_CASE(synchronized_runs_equal_the_serial_result, fixture) {
  const auto expected = figure1::serial_result(c.elements);
  for (std::uint64_t seed = 1; seed <= 100; ++seed) {
    auto got = run_once(seed, true);
    BOOST_TEST_REQUIRE(figure1::mismatches(got) == 0u, "seed " << seed);
    BOOST_TEST_REQUIRE((got == expected), "seed " << seed);
  }
}

BOOST_FIXTURE_TEST_CASE(without_synchronizers_pairs_mismatch, fixture) {
  std::size_t mismatched = 0;
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    auto got = run_once(seed, false);
    BOOST_TEST(got.size() == c.elements);
    mismatched += figure1::mismatches(got);
  }
  BOOST_TEST(mismatched > 0u);
}

BOOST_AUTO_TEST_CASE(async_map_completes_out_of_order_and_keeps_every_element) {
  job j{"async"};
  std::vector<int> xs(200);
  for (int i = 0; i < 200; ++i) xs[i] = i;
  auto out = j.from_container(xs, "src")
                 .assign_timestamps([](int x) { return x; }, ascending_timestamps().every_events(10))
                 .async_map([](int x) {
                   std::this_thread::sleep_for(std::chrono::microseconds((x * 37) % 300));
                   return x * 2;
                 }, 16, "slow")
                 .collect("out");
  auto result = run(j);
  auto got = out.values();
  // the timezone (the sink) sees timestamps in order: the synchronizer sorted them
  std::vector<int> expected(200);
  for (int i = 0; i < 200; ++i) expected[i] = 2 * i;
  BOOST_TEST(got == expected, boost::test_tools::per_element());
  BOOST_TEST(result.plan.find("slow (async_map, delayed, concurrency 16) => sync0<-slow "
                              "(synchronizer) => out (collect)") != std::string::npos,
             result.plan);
  for (const auto& op : result.per_operator())
    if (op.name == "slow") {
      BOOST_TEST(op.extra.at("async_completed") == 200.0);
      BOOST_TEST(op.extra.at("max_in_flight") == 16.0);
    }
}

BOOST_AUTO_TEST_CASE(a_failing_async_element_fails_the_job_with_the_operator_name) {
  job j{"async_fail"};
  j.from_container(std::vector<int>{1, 2, 3}, "src")
      .async_map<int>([](const int& x, async_result<int> r) {
        if (x == 2)
          r.fail("no row for 2");
        else
          r.complete(x);
      }, 2, "lookup")
      .count("out");
  BOOST_CHECK_EXCEPTION(run(j), job_error, [](const job_error& e) {
    return std::string{e.what()} ==
           "job 'async_fail' failed: operator 'lookup' (instance 0 of 1) failed: no row for 2";
  });
}

namespace {

/// A user operator that emits each batch backwards: out of order, so it is declared delayed.
class reverse_batches final : public operator_logic {
 public:
  void process(std::size_t, batch_ptr in, emitter& out) override {
    auto& b = static_cast<batch<int>&>(*in);
    std::reverse(b.values.begin(), b.values.end());
    std::reverse(b.times.begin(), b.times.end());
    out.emit(std::move(in));
  }
};

std::vector<int> run_reversing(bool synchronizers) {
  job j{"user_delayed"};
  std::vector<int> xs(100);
  for (int i = 0; i < 100; ++i) xs[i] = i;
  auto out = j.from_container(xs, "src")
                 .assign_timestamps([](int x) { return x; }, ascending_timestamps().every_events(50))
                 .transform<int>("reverse", [](const instance_info&) {
                   return std::make_unique<reverse_batches>();
                 }, "reverse")
                 .delayed()
                 .collect("out");
  run_options o;
  o.synchronizers.enabled = synchronizers;
  auto result = run(j, o);
  BOOST_TEST(result.plan.find("reverse (reverse, delayed, concurrency 1)") != std::string::npos);
  return out.values();
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_user_operator_declared_delayed_gets_a_synchronized_timezone) {
  std::vector<int> in_order(100);
  for (int i = 0; i < 100; ++i) in_order[i] = i;
  BOOST_TEST(run_reversing(true) == in_order, boost::test_tools::per_element());
  auto unsynchronized = run_reversing(false);
  BOOST_TEST(unsynchronized.size() == 100u);
  BOOST_TEST(unsynchronized.front() == 49);  // the first batch of 50, backwards
}

namespace {

double join_mismatches(const job_result& r) {
  for (const auto& m : r.per_operator())
    if (m.name == "join") return m.extra.at("mismatched");
  return -1;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_registered_job_fills_its_table_and_reports_mismatches) {
  job_registry registry;
  figure1::register_jobs(registry);
  const auto& spec = registry.find("figure1");
  auto options = parse_job_arguments(spec, {"--elements", "30", "--max-delay-us", "2000"});
  run_options synced;
  BOOST_TEST(join_mismatches(run_registered(spec, options, synced)) == 0.0);
  run_options off;
  off.synchronizers.enabled = false;
  double mismatched = 0;
  for (int seed = 1; seed <= 3; ++seed) {
    options.set("seed", std::to_string(seed));
    mismatched += join_mismatches(run_registered(spec, options, off));
  }
  BOOST_TEST(mismatched > 0.0);
  BOOST_CHECK_EXCEPTION(spec.build(parse_job_arguments(spec, {"--concurrency", "0"})), job_error,
                        [](const job_error& e) {
                          return std::string{e.what()} ==
                                 "figure1: --elements >= 1, --concurrency >= 1 and 0 <= "
                                 "--min-delay-us <= --max-delay-us are required";
                        });
}
