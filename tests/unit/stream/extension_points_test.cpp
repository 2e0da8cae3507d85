// The public extension points without actors: per_instance(make) gives each operator instance
// its own function object, built from its instance_info; keyed_stream::process keeps one state
// per key; stream::sink(op, make) takes an operator_logic or a function per instance.
#define BOOST_TEST_MODULE extension_points
#include <boost/test/unit_test.hpp>

#include <map>
#include <random>

#include "../event_time/harness.hpp"
#include "tidemark/core/job.hpp"

using namespace tidemark;
using tidemark::test::make_batch;
using tidemark::test::recording_emitter;

namespace {

instance_info instance(std::uint32_t index, std::uint32_t parallelism) {
  instance_info info;
  info.name = "op";
  info.index = index;
  info.parallelism = parallelism;
  return info;
}

const logical_node& node_named(const job& j, const std::string& name) {
  for (const auto& n : j.graph().nodes())
    if (n.name == name) return n;
  throw std::runtime_error("no node " + name);
}

/// Runs one instance of node `name` over `xs` (untimed, unhashed) and returns what it emitted.
template <class T>
recording_emitter run_instance(const job& j, const std::string& name, const instance_info& info,
                               std::vector<T> xs) {
  auto op = node_named(j, name).make_operator(info);
  recording_emitter out;
  op->process(0, make_batch(std::move(xs)), out);
  op->finish(out);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(per_instance_builds_one_function_object_per_instance_from_its_info) {
  job j{"per_instance"};
  auto made = std::make_shared<std::vector<std::uint32_t>>();
  j.from_container(std::vector<int>{})
      .map(per_instance([made](const instance_info& info) {
             made->push_back(info.index);
             // state of its own: a running count, tagged with the instance
             return [index = info.index, n = 0](int x) mutable {
               return std::make_pair(index, x + 100 * ++n);
             };
           }),
           "numbered")
      .count();
  BOOST_TEST(made->empty());  // nothing is built before an instance exists
  auto first = run_instance<int>(j, "numbered", instance(0, 2), {1, 2});
  auto second = run_instance<int>(j, "numbered", instance(1, 2), {5});
  BOOST_TEST(*made == (std::vector<std::uint32_t>{0, 1}));
  using out = std::pair<std::uint32_t, int>;
  BOOST_TEST((first.values<out>() == std::vector<out>{{0, 101}, {0, 202}}));
  BOOST_TEST((second.values<out>() == std::vector<out>{{1, 105}}));  // its own count starts at 1
}

BOOST_AUTO_TEST_CASE(per_instance_works_for_filter_flat_map_and_for_each) {
  job j{"per_instance_all"};
  auto seen = std::make_shared<std::vector<int>>();
  auto s = j.from_container(std::vector<int>{});
  s.filter(per_instance([](const instance_info& info) {
             return [m = info.index + 2](int x) { return x % m == 0; };
           }),
           "multiples")
      .count();
  s.flat_map<int>(per_instance([](const instance_info& info) {
                    return [copies = info.index + 1](int x, collector<int>& out) {
                      for (std::uint32_t i = 0; i < copies; ++i) out(x);
                    };
                  }),
                  "copies")
      .count();
  s.for_each(per_instance([seen](const instance_info& info) {
               return [seen, offset = static_cast<int>(info.index) * 1000](int x) {
                 seen->push_back(x + offset);
               };
             }),
             "seen");
  BOOST_TEST(run_instance<int>(j, "multiples", instance(1, 2), {1, 2, 3, 6}).values<int>() ==
             (std::vector<int>{3, 6}));
  BOOST_TEST(run_instance<int>(j, "copies", instance(1, 2), {7}).values<int>() ==
             (std::vector<int>{7, 7}));
  run_instance<int>(j, "seen", instance(1, 2), {4});
  BOOST_TEST(*seen == std::vector<int>{1004});
}

BOOST_AUTO_TEST_CASE(keyed_process_keeps_one_state_per_key_and_matches_a_reference) {
  struct reading {
    int sensor;
    double value;
  };
  struct stats {
    int count = 0;
    double max = 0;
  };
  job j{"keyed_process"};
  j.from_container(std::vector<reading>{})
      .key_by([](const reading& r) { return r.sensor; })
      .process<std::string>(
          [](const int& sensor) {
            return stats{0, -1.0 * sensor};
          },
          [](stats& s, const reading& r, collector<std::string>& out) {
            ++s.count;
            if (r.value > s.max) {
              s.max = r.value;
              out(std::to_string(r.sensor) + " max " + std::to_string(s.count));
            }
          },
          "new_maxima")
      .count();
  std::mt19937_64 rng{3};
  std::vector<reading> xs;
  std::vector<std::uint64_t> hashes;
  std::vector<event_time> times;
  for (int i = 0; i < 2000; ++i) {
    xs.push_back({static_cast<int>(rng() % 17), static_cast<double>(rng() % 1000)});
    hashes.push_back(detail::mix_hash(std::hash<int>{}(xs.back().sensor)));
    times.push_back(i);
  }
  // Reference: a std::map of (count, max) per sensor, the initial max being -sensor.
  std::vector<std::string> expected;
  std::vector<event_time> expected_times;
  std::map<int, std::pair<int, double>> ref;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    auto [it, added] = ref.try_emplace(xs[i].sensor, 0, -1.0 * xs[i].sensor);
    auto& [count, max] = it->second;
    ++count;
    if (xs[i].value > max) {
      max = xs[i].value;
      expected.push_back(std::to_string(xs[i].sensor) + " max " + std::to_string(count));
      expected_times.push_back(static_cast<event_time>(i));
    }
  }
  auto op = node_named(j, "new_maxima").make_operator(instance(0, 1));
  recording_emitter out;
  for (std::size_t i = 0; i < xs.size(); i += 100)
    op->process(
        0,
        make_batch(std::vector<reading>(xs.begin() + i, xs.begin() + i + 100),
                   std::vector<event_time>(times.begin() + i, times.begin() + i + 100),
                   std::vector<std::uint64_t>(hashes.begin() + i, hashes.begin() + i + 100)),
        out);
  BOOST_TEST(out.values<std::string>() == expected);
  std::vector<event_time> got_times;
  for (const auto& e : out.log)
    got_times.insert(got_times.end(), e.b->times.begin(), e.b->times.end());
  BOOST_TEST(got_times == expected_times);
  std::map<std::string, double> m;
  op->add_metrics(m);
  BOOST_TEST(m["keyed_states"] == 17.0);
}

BOOST_AUTO_TEST_CASE(sink_takes_an_operator_logic_or_a_function_per_instance) {
  struct counting final : operator_logic {
    explicit counting(std::shared_ptr<std::vector<std::size_t>> r) : result(std::move(r)) {}
    void process(std::size_t, batch_ptr in, emitter&) override { n += in->size(); }
    void finish(emitter&) override { result->push_back(n); }
    void add_metrics(std::map<std::string, double>& out) const override {
      out["counted"] = static_cast<double>(n);
    }
    std::shared_ptr<std::vector<std::size_t>> result;
    std::size_t n = 0;
  };
  job j{"sinks"};
  auto totals = std::make_shared<std::vector<std::size_t>>();
  auto sum = std::make_shared<int>(0);
  auto s = j.from_container(std::vector<int>{}).map([](int x) { return x; }).parallelism(3);
  s.sink("totals", [totals](const instance_info&) { return std::make_unique<counting>(totals); });
  s.sink(
      "summing",
      [sum](const instance_info& info) {
        return
            [sum, factor = static_cast<int>(info.index) + 1](const int& x) { *sum += factor * x; };
      },
      "sum");
  const auto& a = node_named(j, "totals_" + std::to_string(s.id() + 1));
  const auto& b = node_named(j, "sum");
  BOOST_TEST((a.kind == node_kind::sink && b.kind == node_kind::sink));
  BOOST_TEST(a.op == "totals");
  BOOST_TEST(b.op == "summing");
  BOOST_TEST(a.parallelism == 3u);  // sinks take the parallelism of what they end, to fuse
  run_instance<int>(j, a.name, instance(0, 3), {1, 2, 3});
  BOOST_TEST(*totals == std::vector<std::size_t>{3});
  run_instance<int>(j, "sum", instance(2, 3), {1, 2});
  BOOST_TEST(*sum == 9);
  BOOST_TEST(!validate(j.graph()));
}
