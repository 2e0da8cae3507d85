// The public extension points through tidemark::run with parallel instances: per_instance state,
// keyed process state per key, user sinks with their metrics, and side outputs routed to their
// own consumers; a user source that cannot replay is named in the warnings of a checkpointed run.
#define BOOST_TEST_MODULE extension_points_run
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <map>
#include <set>

#include "../../support/temp_dir.hpp"
#include "tidemark/runtime/runtime.hpp"

using namespace tidemark;

namespace {

run_options small_batches() {
  run_options o;
  o.batch_size = 7;
  return o;
}

std::vector<int> numbers(int n) {
  std::vector<int> xs(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) xs[static_cast<std::size_t>(i)] = i;
  return xs;
}

// A user source that counts to `n` and, like every source_logic by default, cannot replay.
class counting_source final : public source_logic {
 public:
  explicit counting_source(int n) : n_(n) {}
  bool pull(std::size_t max, emitter& out) override {
    auto b = std::make_unique<batch<int>>();
    while (next_ < n_ && b->values.size() < max) b->values.push_back(next_++);
    if (!b->values.empty()) out.emit(std::move(b));
    return next_ < n_;
  }

 private:
  int n_;
  int next_ = 0;
};

}  // namespace

BOOST_AUTO_TEST_CASE(each_parallel_instance_runs_its_own_function_object) {
  job j{"per_instance_run"};
  auto made = std::make_shared<std::atomic<int>>(0);
  auto tagged = j.from_container(numbers(1000))
                    .rebalance()
                    .map(per_instance([made](const instance_info& info) {
                           ++*made;
                           return [index = info.index, n = 0](int) mutable {
                             return std::make_pair(index, ++n);
                           };
                         }),
                         "count_per_instance")
                    .parallelism(3)
                    .collect();
  run(j, small_batches());
  BOOST_TEST(made->load() == 3);
  // Each instance numbers what it saw 1, 2, ..., n_i: no counter is shared between instances.
  std::map<std::uint32_t, std::vector<int>> per_instance_counts;
  for (const auto& [index, n] : tagged.values()) per_instance_counts[index].push_back(n);
  std::size_t total = 0;
  for (auto& [index, ns] : per_instance_counts) {
    BOOST_TEST(index < 3u);
    std::sort(ns.begin(), ns.end());
    for (std::size_t i = 0; i < ns.size(); ++i) BOOST_TEST(ns[i] == static_cast<int>(i + 1));
    total += ns.size();
  }
  BOOST_TEST(total == 1000u);
}

BOOST_AUTO_TEST_CASE(keyed_process_state_per_key_survives_parallel_instances) {
  job j{"keyed_process_run"};
  // per key (x % 13): the running sum, emitted every third element of the key
  auto sums =
      j.from_container(numbers(3000))
          .key_by([](int x) { return x % 13; })
          .process<std::pair<int, long>>(
              [] {
                return std::pair<int, long>{0, 0};
              },
              [](std::pair<int, long>& s, const int& x, collector<std::pair<int, long>>& out) {
                s.second += x;
                if (++s.first % 3 == 0) out({x % 13, s.second});
              },
              "running_sums")
          .parallelism(3)
          .collect();
  run(j, small_batches());
  std::multiset<std::pair<int, long>> expected;
  std::map<int, std::pair<int, long>> ref;
  for (int x : numbers(3000)) {
    auto& s = ref[x % 13];
    s.second += x;
    if (++s.first % 3 == 0) expected.insert({x % 13, s.second});
  }
  std::multiset<std::pair<int, long>> got(sums.values().begin(), sums.values().end());
  BOOST_TEST((got == expected));
}

BOOST_AUTO_TEST_CASE(a_user_sink_sees_every_element_ends_once_per_instance_and_reports_metrics) {
  struct counting final : operator_logic {
    explicit counting(std::shared_ptr<std::atomic<int>> f) : finished(std::move(f)) {}
    void process(std::size_t, batch_ptr in, emitter&) override { n += in->size(); }
    void finish(emitter&) override { ++*finished; }
    void add_metrics(std::map<std::string, double>& out) const override {
      out["counted"] = static_cast<double>(n);
    }
    std::shared_ptr<std::atomic<int>> finished;
    std::size_t n = 0;
  };
  job j{"user_sink"};
  auto finished = std::make_shared<std::atomic<int>>(0);
  auto sum = std::make_shared<std::atomic<long>>(0);
  auto s = j.from_container(numbers(500)).rebalance().map([](int x) { return x; }).parallelism(2);
  s.sink(
      "counting", [finished](const instance_info&) { return std::make_unique<counting>(finished); },
      "counter");
  s.sink(
      "summing", [sum](const instance_info&) { return [sum](const int& x) { *sum += x; }; },
      "summer");
  auto r = run(j, small_batches());
  BOOST_TEST(finished->load() == 2);
  BOOST_TEST(sum->load() == 499L * 500 / 2);
  double counted = 0;
  for (const auto& m : r.per_operator())
    if (m.name == "counter") counted += m.extra.count("counted") ? m.extra.at("counted") : 0;
  BOOST_TEST(counted == 500.0);
}

BOOST_AUTO_TEST_CASE(side_outputs_reach_their_own_consumers_through_run) {
  const output_tag<std::string> odd{"odd", 1};
  const output_tag<int> big{"big", 2};
  job j{"side_outputs_run"};
  auto evens = j.from_container(numbers(1000))
                   .flat_map<int>(
                       [odd, big](const int& x, collector<int>& out) {
                         if (x % 2)
                           out.side(odd, std::to_string(x));
                         else
                           out(x);
                         if (x >= 990) out.side(big, x);
                       },
                       "split")
                   .parallelism(2);
  auto odds = evens.side_output(odd).collect();
  auto bigs = evens.side_output(big).collect();
  auto main = evens.collect();
  run(j, small_batches());
  BOOST_TEST(main.values().size() == 500u);
  for (int x : main.values()) BOOST_TEST(x % 2 == 0);
  std::set<std::string> got_odds(odds.values().begin(), odds.values().end());
  BOOST_TEST(got_odds.size() == 500u);
  BOOST_TEST(got_odds.count("999") == 1u);
  std::vector<int> got_bigs = bigs.values();
  std::sort(got_bigs.begin(), got_bigs.end());
  BOOST_TEST(got_bigs == (std::vector<int>{990, 991, 992, 993, 994, 995, 996, 997, 998, 999}));
}

BOOST_AUTO_TEST_CASE(a_source_that_cannot_replay_is_named_in_the_warnings_of_a_checkpointed_run) {
  tidemark::test::temp_dir dir;
  auto run_counting = [&](bool user_source, bool checkpointed) {
    job j{"unreplayable"};
    auto xs = user_source ? j.from_source<int>([](const instance_info&) {
                return std::make_unique<counting_source>(500);
              }, "counter")
                          : j.from_container(numbers(500), "counter");
    auto out = xs.collect();
    auto o = small_batches();
    if (checkpointed) {
      o.checkpoints.dir = dir / (std::to_string(user_source) + "-checkpoints");
      o.checkpoints.interval = std::chrono::milliseconds{10};
    }
    auto result = run(j, o);
    BOOST_TEST(out.values().size() == 500u);
    return result.warnings;
  };
  const auto warned = run_counting(true, true);
  BOOST_REQUIRE(warned.size() == 1u);
  BOOST_TEST(warned.front().find("source 'counter' cannot replay") != std::string::npos);
  // a replayable source, or no checkpoints (nothing to replay from), gives no warning
  BOOST_TEST(run_counting(false, true).empty());
  BOOST_TEST(run_counting(true, false).empty());
}
