// Output ports through the actor runtime: an operator that emits on its main output (port 0) and
// a side output (port 1) reaches exactly the readers of each port, fused and unfused.
#define BOOST_TEST_MODULE runtime ports
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <mutex>
#include <numeric>

#include "tidemark/runtime/runtime.hpp"

using namespace tidemark;

namespace {

/// Even numbers on port 0, odd numbers on port 1.
struct parity_split final : operator_logic {
  void process(std::size_t, batch_ptr in, emitter& out) override {
    auto even = std::make_unique<batch<int>>();
    auto odd = std::make_unique<batch<int>>();
    for (int x : static_cast<batch<int>&>(*in).values) (x % 2 ? odd : even)->values.push_back(x);
    out.emit(0, std::move(even));
    out.emit(1, std::move(odd));
  }
};

/// What one sink saw over all its instances.
struct port_log {
  std::mutex m;
  std::vector<int> values;
  int end_watermarks = 0;  ///< instances that saw the end-of-stream watermark
};

struct collect_sink final : operator_logic {
  explicit collect_sink(port_log& c) : c_(c) {}
  void process(std::size_t, batch_ptr in, emitter&) override {
    std::lock_guard<std::mutex> lock{c_.m};
    auto& xs = static_cast<batch<int>&>(*in).values;
    c_.values.insert(c_.values.end(), xs.begin(), xs.end());
  }
  void on_watermark(event_time wm, emitter&) override {
    if (wm != end_of_time) return;
    std::lock_guard<std::mutex> lock{c_.m};
    ++c_.end_watermarks;
  }

 private:
  port_log& c_;
};

std::vector<int> iota(int n) {
  std::vector<int> xs(n);
  std::iota(xs.begin(), xs.end(), 0);
  return xs;
}

/// numbers => split (x`parallelism`), with one sink per entry of `readers` (the port it reads).
job split_job(int n, std::uint32_t parallelism, const std::vector<std::uint32_t>& readers,
              std::vector<std::unique_ptr<port_log>>& out) {
  job j{"ports"};
  auto numbers = j.from_container(iota(n), "numbers").parallelism(parallelism);
  logical_node split;
  split.name = "split";
  split.op = "parity_split";
  split.parallelism = parallelism;
  split.inputs = {{numbers.id(), partitioning::forward}};
  split.outputs.push_back({"odd", nullptr, "int"});
  split.make_operator = [](const instance_info&) { return std::make_unique<parity_split>(); };
  auto split_id = j.graph().add(std::move(split));
  for (std::size_t r = 0; r < readers.size(); ++r) {
    auto& c = *out.emplace_back(std::make_unique<port_log>());
    logical_node sink;
    sink.name = "sink" + std::to_string(r);
    sink.op = "collect";
    sink.kind = node_kind::sink;
    sink.parallelism = parallelism;
    sink.inputs = {{split_id, partitioning::forward, false, readers[r]}};
    sink.make_operator = [&c](const instance_info&) { return std::make_unique<collect_sink>(c); };
    j.graph().add(std::move(sink));
  }
  return j;
}

std::vector<int> expected(int n, int parity) {
  std::vector<int> xs;
  for (int i = 0; i < n; ++i)
    if (i % 2 == parity) xs.push_back(i);
  return xs;
}

std::vector<int> sorted(std::vector<int> xs) {
  std::sort(xs.begin(), xs.end());
  return xs;
}

}  // namespace

BOOST_AUTO_TEST_CASE(each_reader_gets_exactly_its_port) {
  const int n = 10000;
  for (bool fuse : {true, false})
    for (std::uint32_t par : {1u, 3u}) {
      BOOST_TEST_CONTEXT("fuse " << fuse << ", parallelism " << par) {
        std::vector<std::unique_ptr<port_log>> sinks;
        auto j = split_job(n, par, {0, 1}, sinks);
        run_options o;
        o.batch_size = 64;
        o.fuse = fuse;
        auto result = run(j, o);
        // fused, the split and both readers run in the source's actor: one stage
        BOOST_TEST((result.plan.find("stage 1") == std::string::npos) == fuse);
        BOOST_TEST(sorted(sinks[0]->values) == expected(n, 0), boost::test_tools::per_element());
        BOOST_TEST(sorted(sinks[1]->values) == expected(n, 1), boost::test_tools::per_element());
        // watermarks hold for every port
        BOOST_TEST(sinks[0]->end_watermarks == static_cast<int>(par));
        BOOST_TEST(sinks[1]->end_watermarks == static_cast<int>(par));
      }
    }
}

BOOST_AUTO_TEST_CASE(a_port_nobody_reads_drops_its_batches_and_a_shared_port_is_copied) {
  const int n = 5000;
  for (bool fuse : {true, false}) {
    BOOST_TEST_CONTEXT("fuse " << fuse) {
      std::vector<std::unique_ptr<port_log>> sinks;
      // nobody reads port 0; port 1 has two readers
      auto j = split_job(n, 2, {1, 1}, sinks);
      run_options o;
      o.batch_size = 16;
      o.fuse = fuse;
      run(j, o);
      BOOST_TEST(sorted(sinks[0]->values) == expected(n, 1), boost::test_tools::per_element());
      BOOST_TEST(sorted(sinks[1]->values) == expected(n, 1), boost::test_tools::per_element());
    }
  }
}
