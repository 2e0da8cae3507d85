// Benchmark `keyed-state`: the keyed-state table (detail::flat_hash_map) as a keyed operator with
// millions of keys uses it: N string keys (sensor ids, as ETL's interpolation keeps on GRID at
// scale 500) inserted one by one, each insertion timed, then N lookups. The table doubles about
// log2(N) times on the way; the worst single insertion says whether a doubling stops the operator
// (it does, for about a second at 1.6 M keys: one insertion writes the new array and moves every
// entry).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "support/bench_support.hpp"
#include "tidemark/core/detail/flat_hash_map.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

/// A per-key state of the size of interpolation's (a few numbers and a time).
struct state {
  double values[3]{};
  std::int64_t last = 0;
};

struct run_result {
  double ns_per_insert = 0;
  double worst_insert_ms = 0;
  std::size_t inserts_over_1ms = 0;
  double ns_per_lookup = 0;
  bool correct = false;
};

double ms_since(clock_type::time_point t) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t).count();
}

run_result run(const std::vector<std::string>& keys) {
  using namespace tidemark::detail;
  flat_hash_map<std::string, state> table;
  std::vector<std::uint64_t> hashes;
  hashes.reserve(keys.size());
  for (const auto& k : keys) hashes.push_back(mix_hash(std::hash<std::string>{}(k)));
  run_result r;
  const auto start = clock_type::now();
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto t = clock_type::now();
    table.find_or_add(hashes[i], std::string_view{keys[i]}).first.last =
        static_cast<std::int64_t>(i);
    const auto ms = ms_since(t);
    r.worst_insert_ms = std::max(r.worst_insert_ms, ms);
    if (ms > 1) ++r.inserts_over_1ms;
  }
  r.ns_per_insert = ms_since(start) * 1e6 / static_cast<double>(keys.size());
  const auto lookups = clock_type::now();
  std::int64_t sum = 0;
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (auto* s = table.find(hashes[i], keys[i])) sum += s->last;
  r.ns_per_lookup = ms_since(lookups) * 1e6 / static_cast<double>(keys.size());
  // every key found with the index it was inserted at: the sum of 0 .. N-1
  const auto n = static_cast<std::int64_t>(keys.size());
  r.correct = table.size() == keys.size() && sum == n * (n - 1) / 2;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  return tidemark::bench::guarded_main(
      [](int argc, char** argv) {
        CLI::App app{"keyed-state table: insertion latency while it grows, and lookups"};
        std::string out = tidemark::bench::out_dir() + "/keyed-state.json";
        std::size_t keys = 4'000'000;
        int repeats = 3;
        app.add_option("--out", out, "JSON report");
        app.add_option("--keys", keys, "distinct keys inserted per run")
            ->check(CLI::PositiveNumber);
        app.add_option("--repeats", repeats, "runs (the median is reported)")
            ->check(CLI::PositiveNumber);
        CLI11_PARSE(app, argc, argv);

        std::vector<std::string> names;
        names.reserve(keys);
        // GRID's meter ids as the replay copies them (replay_schedule::copy_id): "<meter>",
        // then "<meter>-<copy>" for copies 1 to 499
        for (std::size_t i = 0; i < keys; ++i) {
          auto meter = std::to_string(1'000'000 + i / 500);
          names.push_back(i % 500 == 0 ? meter : meter + "-" + std::to_string(i % 500));
        }
        std::vector<double> insert_ns, worst_ms, over_1ms, lookup_ns;
        bool correct = true;
        for (int r = 0; r < repeats; ++r) {
          auto x = run(names);
          std::printf(
              "run %d: %.0f ns per insertion, worst insertion %.1f ms (%zu over 1 ms), %.0f ns per "
              "lookup%s\n",
              r + 1, x.ns_per_insert, x.worst_insert_ms, x.inserts_over_1ms, x.ns_per_lookup,
              x.correct ? "" : ", WRONG RESULT");
          insert_ns.push_back(x.ns_per_insert);
          worst_ms.push_back(x.worst_insert_ms);
          over_1ms.push_back(static_cast<double>(x.inserts_over_1ms));
          lookup_ns.push_back(x.ns_per_lookup);
          correct = correct && x.correct;
        }
        using tidemark::bench::spread;
        nlohmann::json doc{{"benchmark", "keyed-state"},
                           {"keys", keys},
                           {"ns_per_insert", spread(insert_ns)},
                           {"worst_insert_ms", spread(worst_ms)},
                           {"inserts_over_1ms", spread(over_1ms)},
                           {"ns_per_lookup", spread(lookup_ns)},
                           {"results_correct", correct},
                           {"load_average", tidemark::bench::load_average()}};
        std::ofstream(out) << doc.dump(2) << "\n";
        std::printf("wrote %s\n", out.c_str());
        return correct ? 0 : 1;
      },
      argc, argv);
}
