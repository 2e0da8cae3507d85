// Benchmark `async`: the table lookup join pipeline (source -> lookup with a fixed simulated
// latency per lookup -> label inside the synchronized timezone -> collect) at concurrency 1, 4,
// 16 and 64 with synchronizers on. Every run's output must equal the serial result, in order.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <iostream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "support/bench_support.hpp"
#include "support/temp_dir.hpp"
#include "tidemark/examples/figure1.hpp"
#include "tidemark/runtime/runtime.hpp"

using namespace tidemark;

int main(int argc, char** argv) {
  CLI::App app{"bench_async: table lookup join throughput by concurrency, synchronizers on"};
  std::string out_path = tidemark::bench::out_dir() + "/async.json";
  std::size_t elements = 2000;
  std::int64_t latency_us = 1000;
  int repeats = 3;
  std::vector<std::uint32_t> levels{1, 4, 16, 64};
  app.add_option("--out", out_path, "JSON result file");
  app.add_option("--elements", elements, "readings per run");
  app.add_option("--latency-us", latency_us, "simulated latency per lookup (microseconds)");
  app.add_option("--repeats", repeats, "runs per concurrency");
  app.add_option("--concurrency", levels, "concurrency levels");
  CLI11_PARSE(app, argc, argv);

  test::temp_dir dir{"bench-async"};
  figure1::config c;
  c.db = persistence::wt_connection::open(dir.path().string());
  c.elements = elements;
  c.min_delay_us = c.max_delay_us = latency_us;
  figure1::fill_table(c);
  std::vector<figure1::enriched> expected;
  for (const auto& x : figure1::serial_result(elements)) {
    expected.push_back(x.looked_up);
    expected.back().row += "/checked";
  }

  nlohmann::json report;
  report["benchmark"] = "async";
  report["elements"] = elements;
  report["latency_us"] = latency_us;
  report["time_slice"] = 1;
  report["synchronizers"] = true;
  bool identical = true;
  double base = 0;
  std::map<std::uint32_t, std::vector<double>> rates;
  for (auto level : levels) {
    for (int r = 0; r < repeats; ++r) {
      c.concurrency = level;
      collected<figure1::enriched> out;
      auto j = figure1::build_lookup_pipeline(c, out);
      auto result = run(j);
      bool same = out.values() == expected;  // in order: the timezone sees timestamps in order
      identical &= same;
      double mean_ms = 0, max_ms = 0, max_in_flight = 0, slices = 0;
      for (const auto& op : result.per_operator()) {
        if (op.name == "lookup") {
          mean_ms = op.extra.at("async_latency_mean_ms");
          max_ms = op.extra.at("async_latency_max_ms");
          max_in_flight = op.extra.at("max_in_flight");
        }
        if (op.op == "synchronizer") slices = op.extra.at("sync_slices");
      }
      double rate = static_cast<double>(elements) / result.seconds;
      rates[level].push_back(rate);
      if (level == levels.front() && r == 0) base = rate;
      report["runs"].push_back({{"concurrency", level},
                                {"repeat", r},
                                {"seconds", result.seconds},
                                {"events_per_s", rate},
                                {"speedup", base > 0 ? rate / base : 0.0},
                                {"lookup_latency_mean_ms", mean_ms},
                                {"lookup_latency_max_ms", max_ms},
                                {"max_in_flight", max_in_flight},
                                {"slices", slices},
                                {"output_identical", same}});
      std::cout << "concurrency " << level << " run " << r << ": " << static_cast<long>(rate)
                << " events/s (x" << (base > 0 ? rate / base : 0.0) << "), lookup latency mean "
                << mean_ms << " ms, max " << max_ms << " ms, " << slices << " slices, output "
                << (same ? "identical" : "DIFFERENT") << '\n';
    }
  }
  // the machine is shared: the median run per level is the headline
  const double median_1 = bench::percentile(rates.begin()->second, 0.5);
  for (auto& [level, xs] : rates) {
    const auto s = bench::spread(xs);
    const double m = s["median"];
    report["median"].push_back({{"concurrency", level},
                                {"events_per_s", m},
                                {"events_per_s_spread", s},
                                {"speedup", m / median_1}});
    std::cout << "concurrency " << level << ": median " << static_cast<long>(m) << " events/s, x"
              << m / median_1 << '\n';
    if (level == 16) report["target_met_at_16"] = m / median_1 >= 10.0;
  }
  report["all_outputs_identical"] = identical;
  std::ofstream{out_path} << report.dump(2) << '\n';
  if (!identical) {
    std::cerr << "bench_async: a run's output differs from the serial result\n";
    return 1;
  }
  return 0;
}
