// Each built-in operator and sink through the actor runtime, checked against exact results.
#define BOOST_TEST_MODULE runtime operators
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>

#include "../../support/environment.hpp"
#include "tidemark/runtime/runtime.hpp"

using namespace tidemark;

namespace {

std::vector<int> iota(int n) {
  std::vector<int> xs(n);
  std::iota(xs.begin(), xs.end(), 0);
  return xs;
}

template <class T>
std::vector<T> sorted(std::vector<T> xs) {
  std::sort(xs.begin(), xs.end());
  return xs;
}

run_options small_batches() {
  run_options o;
  o.batch_size = 7;
  o.credit = 2;
  return o;
}

}  // namespace

BOOST_AUTO_TEST_CASE(map_filter_flat_map) {
  job j{"chain"};
  auto out = j.from_container(iota(1000))
                 .map([](int x) { return x * 3; })
                 .filter([](int x) { return x % 2 == 0; })
                 .flat_map<long>([](int x, collector<long>& c) {
                   c(x);
                   if (x % 4 == 0) c(-x);
                 })
                 .collect();
  run(j, small_batches());
  std::vector<long> expected;
  for (int i = 0; i < 1000; ++i) {
    int x = i * 3;
    if (x % 2) continue;
    expected.push_back(x);
    if (x % 4 == 0) expected.push_back(-x);
  }
  BOOST_TEST(sorted(out.values()) == sorted(expected));
}

BOOST_AUTO_TEST_CASE(unfused_chain_keeps_order_per_instance) {
  job j{"ordered"};
  auto out = j.from_container(iota(5000)).map([](int x) { return x + 1; }).collect();
  auto o = small_batches();
  o.fuse = false;
  auto result = run(j, o);
  std::vector<int> expected(5000);
  std::iota(expected.begin(), expected.end(), 1);
  BOOST_TEST(out.values() == expected);  // forward channels with parallelism 1 keep order
  BOOST_TEST(result.instances.size() == 3u);
}

BOOST_AUTO_TEST_CASE(keyed_reduce_and_fold) {
  job j{"keyed"};
  auto src = j.from_container(iota(10000));
  auto sums = src.map([](int x) { return std::pair<int, int>{x % 10, x}; })
                  .key_by([](const std::pair<int, int>& p) { return p.first; })
                  .reduce([](std::pair<int, int> a, const std::pair<int, int>& b) {
                    a.second += b.second;
                    return a;
                  });
  sums.parallelism(3);
  auto counts = src.key_by([](int x) { return x % 7; })
                    .fold(0, [](int n, int) { return n + 1; })
                    .parallelism(2)
                    .collect();
  auto final_sums = sums.collect();
  run(j, small_batches());
  // the running sums per key end at the full sums
  std::map<int, int> best;
  for (auto [k, s] : final_sums.values()) best[k] = std::max(best[k], s);
  for (int k = 0; k < 10; ++k) {
    int expected = 0;
    for (int x = k; x < 10000; x += 10) expected += x;
    BOOST_TEST(best[k] == expected);
  }
  BOOST_TEST(final_sums.values().size() == 10000u);
  // running counts form 1..n per key
  std::map<int, std::vector<int>> per_key;
  for (auto& [k, n] : counts.values()) per_key[k].push_back(n);
  BOOST_TEST(per_key.size() == 7u);
  for (auto& [k, ns] : per_key) {
    auto n = static_cast<int>(ns.size());
    std::vector<int> one_to_n(n);
    std::iota(one_to_n.begin(), one_to_n.end(), 1);
    BOOST_TEST(sorted(ns) == one_to_n);
  }
}

BOOST_AUTO_TEST_CASE(a_key_returned_as_a_view_into_the_key_functions_buffer_is_stored_as_a_string) {
  // The key is composed per element in a buffer the key function owns and reuses: the stored
  // keys must be copies, not views of that buffer (which holds only the last element's key).
  job j{"view_keys"};
  auto composed = [buffer = std::string()](int x) mutable -> std::string_view {
    buffer.assign("sensor-") += std::to_string(x % 5);
    return buffer;
  };
  auto keyed = j.from_container(iota(1000)).key_by(composed);
  auto running_counts = keyed.fold(0, [](int n, int) { return n + 1; });
  static_assert(std::is_same_v<decltype(running_counts), stream<std::pair<std::string, int>>>);
  auto counts = running_counts.parallelism(2).collect();
  auto firsts = keyed
                    .process<std::string>([](const std::string& key) { return key; },
                                          [](std::string& key, int, collector<std::string>& out) {
                                            if (!key.empty()) out(std::exchange(key, ""));
                                          })
                    .parallelism(2)
                    .collect();
  run(j, small_batches());
  std::map<std::string, int> last;
  for (auto& [k, n] : counts.values()) last[k] = std::max(last[k], n);
  const std::map<std::string, int> expected{{"sensor-0", 200},
                                            {"sensor-1", 200},
                                            {"sensor-2", 200},
                                            {"sensor-3", 200},
                                            {"sensor-4", 200}};
  BOOST_TEST(last == expected);
  BOOST_TEST(
      sorted(firsts.values()) ==
      (std::vector<std::string>{"sensor-0", "sensor-1", "sensor-2", "sensor-3", "sensor-4"}));
}

BOOST_AUTO_TEST_CASE(merge_rebalance_broadcast) {
  job j{"shapes"};
  auto a = j.from_container(iota(100));
  auto b = j.from_container(std::vector<int>{1000, 1001});
  auto merged = a.merge(b).map([](int x) { return x; }).parallelism(3);
  auto total = merged.rebalance().filter([](int) { return true; }).parallelism(2).count();
  auto copies = merged.broadcast().filter([](int) { return true; }).parallelism(4).count();
  run(j, small_batches());
  BOOST_TEST(total.value() == 102u);
  BOOST_TEST(copies.value() == 4u * 102u);
}

BOOST_AUTO_TEST_CASE(partition_by_keeps_each_keys_order_through_a_stateless_operator) {
  // (key, sequence) pairs, 7 keys: source (1) -> partition_by(key) -> map (3) -> keyed fold (2)
  // that counts the elements arriving below their key's last sequence number
  using item = std::pair<int, int>;
  std::vector<item> xs;
  for (int i = 0; i < 20000; ++i) xs.push_back({i % 7, i});
  job j{"partition_by"};
  auto key = [](const item& x) { return x.first; };
  auto mapped = j.from_container(xs).parallelism(1).partition_by(key).map([](item x) { return x; }).parallelism(3);
  auto checked = mapped.key_by(key)
                     .fold(item{-1, 0},
                           [](item last_and_late, const item& x) {
                             return item{x.second, last_and_late.second + (x.second < last_and_late.first)};
                           })
                     .parallelism(2)
                     .collect();
  run(j, small_batches());
  BOOST_REQUIRE_EQUAL(checked.values().size(), xs.size());
  std::map<int, int> late;
  for (const auto& [k, acc] : checked.values()) late[k] = std::max(late[k], acc.second);
  BOOST_TEST(late.size() == 7u);
  for (const auto& [k, n] : late) BOOST_TEST(n == 0, "key " << k << ": " << n << " elements overtaken");
}

BOOST_AUTO_TEST_CASE(generator_source) {
  job j{"gen"};
  int next = 0;
  auto n = j.from_generator([next]() mutable -> std::optional<int> {
              if (next == 12345) return std::nullopt;
              return next++;
            })
               .count();
  run(j);
  BOOST_TEST(n.value() == 12345u);
}

BOOST_AUTO_TEST_CASE(a_slow_generator_does_not_hold_its_actor_for_a_whole_batch) {
  // 2 ms per element, longer than a pull's time budget: each pull returns after one element
  // instead of after a batch of 4096 (8 s), and the stream is still complete and in order
  struct collecting_emitter final : emitter {
    std::vector<std::size_t> batch_sizes;
    std::vector<int> values;
    void emit_watermark(event_time) override {}
    void emit_idle(bool) override {}
    void emit_on(std::uint32_t, batch_ptr b) override {
      auto& xs = static_cast<batch<int>&>(*b).values;
      batch_sizes.push_back(xs.size());
      values.insert(values.end(), xs.begin(), xs.end());
    }
  };
  static_assert(ops::generator_source<int, int (*)()>::time_budget < std::chrono::milliseconds{2});
  int next = 0;
  auto slow = [&next]() -> std::optional<int> {
    if (next == 5) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds{2});
    return next++;
  };
  ops::generator_source<int, decltype(slow)> source{slow};
  collecting_emitter out;
  while (source.pull(4096, out)) {
  }
  BOOST_TEST(out.batch_sizes == (std::vector<std::size_t>{1, 1, 1, 1, 1}), boost::test_tools::per_element());
  BOOST_TEST(out.values == iota(5), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(text_file_in_and_out) {
  auto in = tidemark::test::data_dir() + "/SYS_sample_data_senml.csv";
  auto out_path = boost::unit_test::framework::current_test_case().p_name.get() + ".out";
  job j{"files"};
  auto lines = j.from_text_file(in).parallelism(2);
  lines.map([](const std::string& l) { return l.size(); }).write_lines(out_path);
  auto n = lines.count();
  run(j);
  BOOST_TEST(n.value() == 1000u);
  std::ifstream check{out_path};
  std::ifstream orig{in};
  std::multiset<std::size_t> got, want;
  std::string line;
  while (std::getline(check, line)) got.insert(std::stoul(line));
  while (std::getline(orig, line)) want.insert(line.size());
  BOOST_TEST((got == want));
  std::remove(out_path.c_str());
}

BOOST_AUTO_TEST_CASE(metrics_count_events) {
  job j{"metrics"};
  j.from_container(iota(100)).filter([](int x) { return x < 10; }).name("small").count();
  auto r = run(j);
  auto ops = r.per_operator();
  auto small = std::find_if(ops.begin(), ops.end(), [](auto& m) { return m.name == "small"; });
  BOOST_REQUIRE(small != ops.end());
  BOOST_TEST(small->events_in == 100u);
  BOOST_TEST(small->events_out == 10u);
  BOOST_TEST(r.summary().find("small") != std::string::npos);
  BOOST_TEST(r.to_json().find("\"events_out\": 10") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(print_sink_writes_one_line_per_element) {
  std::ostringstream captured;
  auto* old = std::cout.rdbuf(captured.rdbuf());
  job j{"print"};
  j.from_container(std::vector<int>{3, 1, 2}).map([](int x) { return x * 10; }).print();
  run(j);
  std::cout.rdbuf(old);
  BOOST_TEST(captured.str() == "30\n10\n20\n");
}

namespace {
std::atomic<int> probes_destroyed{0};
struct probe_sink final : operator_logic {
  ~probe_sink() override { ++probes_destroyed; }
  void process(std::size_t, batch_ptr, emitter&) override {}
};
}  // namespace

BOOST_AUTO_TEST_CASE(operators_are_destroyed_when_run_returns) {
  job j{"cleanup"};
  auto s = j.from_container(iota(100)).map([](int x) { return x; }).parallelism(3);
  logical_node sink;
  sink.name = "probe";
  sink.op = "probe";
  sink.kind = node_kind::sink;
  sink.parallelism = 3;
  sink.inputs = {{s.id(), partitioning::forward}};
  sink.make_operator = [](const instance_info&) { return std::make_unique<probe_sink>(); };
  j.graph().add(std::move(sink));
  run(j);
  // operators own resources (files, database sessions): they must not outlive the run
  BOOST_TEST(probes_destroyed.load() == 3);
}
