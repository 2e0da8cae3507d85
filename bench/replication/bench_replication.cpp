// Reproduces the simulation of the heuristic replication paper (remaining running queries per
// heuristic, spare level and host failure probability) and times the planner on 1,000
// operators and 100 hosts. Writes everything as JSON to --out.
#include <chrono>
#include <cstdio>
#include <fstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "support/bench_support.hpp"
#include "tidemark/replication/experiment.hpp"

using namespace tidemark::replication;
using clock_type = std::chrono::steady_clock;

namespace {

// Planning time per strategy on a generated system of about `operators` operators.
nlohmann::json time_planning(std::uint32_t target_operators) {
  workload_options w;
  w.hosts = 100;
  w.streams = 60;
  w.predicates = 8;
  // Grow the number of queries until the merged system has the requested operators.
  replication_model m;
  for (w.queries = 200;; w.queries += 20) {
    m = generate_workload(w);
    if (m.operators.size() >= target_operators) break;
  }
  for (auto& h : m.hosts) h.cpu_capacity = 1.5;  // 50 % spare
  nlohmann::json out;
  out["operators"] = m.operators.size();
  out["queries"] = m.queries.size();
  out["hosts"] = m.hosts.size();
  for (const auto& s : paper_series()) {
    constexpr int repeat = 20;
    auto start = clock_type::now();
    std::size_t replicas = 0;
    for (int i = 0; i < repeat; ++i) {
      auto o = s.options;
      o.seed = static_cast<std::uint64_t>(i + 1);
      replicas += plan_replicas(m, o).replica_count();
    }
    double ms =
        std::chrono::duration<double, std::milli>(clock_type::now() - start).count() / repeat;
    out["plan_ms"][s.name] = ms;
    out["replicas"][s.name] = replicas / repeat;
    std::printf("  plan %-24s %7.3f ms  (%zu operators, %zu replicas)\n", s.name.c_str(), ms,
                m.operators.size(), replicas / repeat);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Heuristic replication: the paper's simulation and planner timing"};
  std::string out_path = tidemark::bench::out_dir() + "/replication.json";
  experiment_options opts;
  app.add_option("--out", out_path, "JSON report");
  app.add_option("--runs", opts.runs, "runs per point (the paper: 1000)");
  app.add_option("--threads", opts.threads, "worker threads");
  app.add_option("--queries", opts.workload.queries, "queries per generated system");
  app.add_option("--streams", opts.workload.streams, "event streams the queries share");
  app.add_option("--predicates", opts.workload.predicates,
                 "distinct parameters per operator kind and input (fewer: more sharing)");
  app.add_option("--seed", opts.workload.seed, "seed of the first run's workload");
  CLI11_PARSE(app, argc, argv);

  std::printf("timing the planner on ~1000 operators, 100 hosts\n");
  auto timing = time_planning(1000);

  std::printf(
      "simulating %u runs x %zu strategies x %zu spare levels x %zu failure "
      "probabilities on %u threads\n",
      opts.runs, opts.series.size(), opts.spare_percent.size(), opts.failure_probabilities.size(),
      opts.threads);
  auto start = clock_type::now();
  std::uint32_t step = std::max(1u, opts.runs / 10);
  auto r = run_experiment(opts, [&](std::uint32_t done) {
    if (done % step == 0 || done == opts.runs)
      std::printf("  %u/%u runs (%.0f s)\n", done, opts.runs,
                  std::chrono::duration<double>(clock_type::now() - start).count());
    std::fflush(stdout);
  });
  double seconds = std::chrono::duration<double>(clock_type::now() - start).count();

  auto j = nlohmann::json::parse(to_json(opts, r));
  j["simulation_seconds"] = seconds;
  j["planning"] = timing;
  std::ofstream(out_path) << j.dump(1) << "\n";
  std::printf("%s\nsimulation took %.1f s; wrote %s\n", to_text(opts, r).c_str(), seconds,
              out_path.c_str());
}
