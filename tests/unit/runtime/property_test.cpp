// Property: whatever the parallelism (1-4 per operator), batch size, credit and fusion, a pipeline
// gives the same multiset of results as a sequential reference.
#define BOOST_TEST_MODULE runtime property
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <random>

#include "tidemark/runtime/runtime.hpp"

using namespace tidemark;

namespace {

struct reading {
  int sensor;
  int value;
};

using keyed_count = std::pair<int, int>;

// map -> filter -> flat_map -> key_by -> running count per key, plus a merged side branch.
std::vector<keyed_count> reference(const std::vector<reading>& in) {
  std::vector<keyed_count> out;
  std::map<int, int> counts;
  for (auto r : in) {
    r.value = r.value * 2 + 1;
    if (r.value % 3 == 0) continue;
    for (int copy = 0; copy < 1 + r.value % 2; ++copy) {
      int key = (r.sensor + copy) % 17;
      out.emplace_back(key, ++counts[key]);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(random_parallelism_and_batching_match_sequential_reference) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng{seed};
    auto par = [&] { return std::uniform_int_distribution<std::uint32_t>{1, 4}(rng); };
    std::vector<reading> input(5000 + rng() % 5000);
    for (auto& r : input) r = {static_cast<int>(rng() % 100), static_cast<int>(rng() % 1000)};

    job j{"property"};
    auto s = j.from_container(input).parallelism(par());
    auto mapped = s.map([](reading r) {
                     r.value = r.value * 2 + 1;
                     return r;
                   }).parallelism(par());
    auto kept = mapped.filter([](const reading& r) { return r.value % 3 != 0; }).parallelism(par());
    auto fanned = kept.flat_map<reading>([](const reading& r, collector<reading>& out) {
                        for (int copy = 0; copy < 1 + r.value % 2; ++copy)
                          out({(r.sensor + copy) % 17, r.value});
                      }).parallelism(par());
    auto counts = fanned.key_by([](const reading& r) { return r.sensor; })
                      .fold(0, [](int n, const reading&) { return n + 1; })
                      .parallelism(par());
    auto result = counts.collect();

    run_options opts;
    opts.batch_size = 1 + rng() % 300;
    opts.credit = 1 + rng() % 6;
    opts.fuse = rng() % 2 == 0;
    run(j, opts);
    auto got = result.values();
    std::sort(got.begin(), got.end());
    BOOST_TEST_CONTEXT("seed " << seed << " batch " << opts.batch_size << " credit " << opts.credit) {
      BOOST_TEST(got.size() == reference(input).size());
      BOOST_TEST((got == reference(input)));
    }
  }
}
