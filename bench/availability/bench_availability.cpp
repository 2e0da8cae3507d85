// Benchmark `availability`: the heuristic replication paper's availability experiment run live
// (issue 16). example-queries (by default 3 sources, 21 queries sharing their sources' windows)
// runs on local tidemark-node processes with replicas on spare CPU (--spare, 50 % by default),
// degraded mode (`on_loss: continue`) and no checkpoints. A seeded fault injector draws per trial which nodes
// crash (each with probability p); the same crash sets hit the product and the random plan. Per
// trial the live figure is the fraction of queries whose sink still wrote every result of the
// fault-free embedded run (observed in the sinks' files), the simulated one is
// replication::running_fraction for the plan the coordinator deploys and the same crash set.
// Exits non-zero when the mean live and simulated figures differ by more than 2 points.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "lines.hpp"
#include "support/bench_support.hpp"
#include "tidemark/chaos/local_cluster.hpp"
#include "tidemark/examples/example_jobs.hpp"
#include "tidemark/replication/availability.hpp"
#include "tidemark/replication/graph_adapter.hpp"
#include "tidemark/runtime/cluster.hpp"

using namespace tidemark;
using results = std::map<std::string, std::vector<std::string>>;  // per sink, sorted lines

namespace {

/// Every query's sink file in `dir` (qS_Q.txt), sorted.
results read_results(const std::filesystem::path& dir, const std::vector<std::string>& sinks) {
  results out;
  for (const auto& q : sinks) out[q] = test::sorted_lines(dir / (q + ".txt"));
  return out;
}

/// The plan the coordinator deploys on the whole cluster before it measures anything (what
/// net::replica_planner::deploy computes), with the model the simulation judges it on.
struct deployed_plan {
  replication::replication_model model;
  spare_plan plan;
  replication::replica_plan replicas;                       ///< plan.replicas, as the model's
  std::vector<std::vector<replication::host_index>> hosts;  ///< per stage instance, primary first
};

deployed_plan plan_as_the_coordinator(const job& j, const cluster_config& cluster) {
  const auto& g = j.graph();
  const auto p = compile(g);
  const auto placement = place(g, p, cluster);
  const auto load = instance_loads(g, p, cluster);
  deployed_plan d;
  d.plan = plan_spare_replicas(g, p, placement, cluster, load);
  std::vector<replication::host_info> hosts;
  for (const auto& n : cluster.nodes) hosts.push_back({n.id, n.cpu});
  d.model = replication::model_from_plan(g, p, load, std::move(hosts),
                                         {placement.begin(), placement.end()});
  d.replicas.replicas = d.plan.replicas;
  d.hosts = replication::instance_hosts(d.model, d.replicas);
  return d;
}

double mean(const std::vector<double>& xs) {
  double s = 0;
  for (auto x : xs) s += x;
  return xs.empty() ? 0 : s / static_cast<double>(xs.size());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"live availability of replicated queries under random node crashes"};
  std::string out = bench::out_dir() + "/availability.json";
  int trials = 40;
  std::size_t node_count = 12;
  double p = 0.1;
  std::uint64_t seed = 1;
  std::int64_t events = 8000;  // per source
  std::int64_t rate = 2000;    // per source and second: 4 s per run
  int sources = 3, queries = 7;
  double kill_at = 0.2;
  std::string spare = "50%";
  app.add_option("--out", out, "JSON report");
  app.add_option("--trials", trials, "crash draws; each is run once per heuristic");
  app.add_option("--nodes", node_count, "tidemark-node processes");
  app.add_option("--p", p, "probability that a node crashes in a trial");
  app.add_option("--seed", seed, "seed of the crash draws");
  app.add_option("--events", events, "samples per source");
  app.add_option("--rate", rate, "samples per source and second");
  app.add_option("--sources", sources, "sources (each with a shared window)");
  app.add_option("--queries", queries, "queries per source");
  app.add_option("--kill-at", kill_at, "share of all results written before the crash");
  app.add_option("--spare", spare, "CPU for replicas: a share of the job's load (\"50%\") or cores");
  CLI11_PARSE(app, argc, argv);
  // the coordinator's warnings name every stopped instance of every trial: the report has them
  spdlog::set_level(spdlog::level::err);

  job_registry registry;
  examples::register_jobs(registry);
  const auto& spec = registry.find("example-queries");
  std::vector<std::string> sinks;
  for (int s = 0; s < sources; ++s)
    for (int q = 0; q < queries; ++q)
      sinks.push_back("q" + std::to_string(s) + "_" + std::to_string(q));
  auto job_options_for = [&](const std::filesystem::path& dir, std::int64_t pace) {
    auto o = spec.make_options();
    o.set("sources", std::to_string(sources));
    o.set("queries", std::to_string(queries));
    o.set("events", std::to_string(events));
    o.set("rate", std::to_string(pace));
    o.set("out-dir", dir.string());
    return o;
  };

  chaos::local_cluster_options lo;
  lo.node_binary = bench::node_binary();
  lo.nodes = node_count;
  chaos::local_cluster nodes{lo};
  auto& cluster = nodes.cluster;
  cluster.continue_on_loss = true;
  cluster.planned.spare = spare;
  cluster.planned.failure_probability = p;
  cluster.planned.replan_interval = std::chrono::milliseconds{0};  // the deployment's plan stays
  // 12 processes on a small shared machine: a starved node must not be taken for a lost one (at
  // 3 s, a load average of 20 did). A SIGKILL breaks the connection, which is noticed at once.
  cluster.heartbeat_timeout = std::chrono::milliseconds{10000};
  const double load_before = bench::load_average();

  run_options quiet;
  quiet.print_summary = false;
  // the embedded reference run also measures each stage's load, on which the coordinator then
  // places the instances and plans the first deployment (as `tidemark run --placement-load`
  // does): with the equal guess it uses otherwise, every instance would be equally "low
  // utilization" and the product heuristic would order them as randomly as random does
  const auto measured = run_registered(spec, job_options_for(nodes.dir / "reference", 0), quiet);
  cluster.operator_load = stage_load_from_report(measured.to_json());
  const auto reference = read_results(nodes.dir / "reference", sinks);
  std::size_t total = 0;
  for (const auto& [q, lines] : reference) total += lines.size();
  std::printf(
      "%zu queries, %zu results in the embedded reference; %d trials at p = %.3f on %zu "
      "nodes\n",
      sinks.size(), total, trials, p, node_count);

  // the crash sets, drawn once: product and random face the same ones
  std::mt19937_64 rng{seed};
  std::bernoulli_distribution crashes{p};
  std::vector<std::vector<char>> crash_sets(static_cast<std::size_t>(trials));
  for (auto& set : crash_sets) {
    set.resize(node_count);
    for (auto& c : set) c = crashes(rng) ? 1 : 0;
  }

  std::vector<std::string> failures;
  nlohmann::json per_heuristic = nlohmann::json::object();
  std::map<std::string, double> live_mean, sim_mean;
  for (const std::string name : {"product", "random"}) {
    cluster.planned.planner.importance = *replication::parse_heuristic(name);
    const auto j = spec.build(job_options_for(nodes.dir / "plan", 0));
    const auto d = plan_as_the_coordinator(j, cluster);
    const auto predicted =
        replication::simulate_availability(d.model, d.replicas, {p, 10000, seed});
    std::size_t replicated = 0;
    for (const auto& r : d.plan.replicas) replicated += !r.empty();
    std::printf(
        "%s: %zu of %zu stage instances replicated (%.2f of %.2f spare cores); predicted "
        "%.2f %% running at p = %.3f\n",
        name.c_str(), replicated, d.plan.replicas.size(), d.plan.replica_load, d.plan.budget,
        100 * predicted.running, p);
    nlohmann::json curve = nlohmann::json::array();
    for (double q : {0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3})
      curve.push_back(
          {{"p", q},
           {"running",
            replication::simulate_availability(d.model, d.replicas, {q, 10000, seed}).running}});
    nlohmann::json runs = nlohmann::json::array();
    std::vector<double> live, sim;
    for (int t = 0; t < trials; ++t) {
      const auto& failed = crash_sets[static_cast<std::size_t>(t)];
      std::vector<std::string> crashed;
      for (std::size_t n = 0; n < node_count; ++n)
        if (failed[n]) crashed.push_back(cluster.nodes[n].id);
      const double simulated = replication::running_fraction(d.model, d.hosts, failed);
      nlohmann::json run{{"trial", t}, {"crashed", crashed}, {"sim", simulated}};
      if (crashed.empty()) {  // nothing to observe: every query runs, in both figures
        live.push_back(1);
        sim.push_back(simulated);
        run["live"] = 1.0;
        run["ran"] = false;
        runs.push_back(run);
        std::printf("  %s trial %d/%d: no crash (not run)\n", name.c_str(), t + 1, trials);
        std::fflush(stdout);
        continue;
      }
      for (std::size_t n = 0; n < node_count; ++n)
        if (!nodes.running(n)) nodes.start(n);
      const auto dir = nodes.dir / (name + "-" + std::to_string(t));
      run_options ro = quiet;
      auto job = std::async(std::launch::async, [&] {
        return run_on_cluster(spec, job_options_for(dir, rate), cluster, ro);
      });
      // the crash comes once results flow: after kill_at of all results reached the sinks
      const auto written = [&] {
        std::size_t n = 0;
        for (const auto& [q, lines] : read_results(dir, sinks)) n += lines.size();
        return n;
      };
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{30};
      while (job.wait_for(std::chrono::milliseconds{20}) != std::future_status::ready &&
             written() < static_cast<std::size_t>(kill_at * static_cast<double>(total)) &&
             std::chrono::steady_clock::now() < deadline) {
      }
      const bool before_end = job.wait_for(std::chrono::seconds{0}) != std::future_status::ready;
      for (std::size_t n = 0; n < node_count; ++n)
        if (failed[n]) nodes.kill(n);
      job_result r;
      try {
        r = job.get();
      } catch (const std::exception& e) {
        failures.push_back(name + " trial " + std::to_string(t) + ": " + e.what());
        std::fprintf(stderr, "%s trial %d: %s\n", name.c_str(), t, e.what());
        continue;
      }
      // observed at the sinks: a query runs when its sink wrote every result the embedded run
      // gives; a stopped one must hold none it does not give (a stopped stage never flushes)
      const auto got = read_results(dir, sinks);
      std::size_t running = 0, wrong = 0;
      std::vector<std::string> stopped_seen;
      for (const auto& q : sinks) {
        const auto& want = reference.at(q);
        const auto& have = got.at(q);
        if (have == want) {
          ++running;
          continue;
        }
        stopped_seen.push_back(q);
        if (!std::includes(want.begin(), want.end(), have.begin(), have.end())) ++wrong;
      }
      const double observed = static_cast<double>(running) / static_cast<double>(sinks.size());
      if (!before_end)
        failures.push_back(name + " trial " + std::to_string(t) +
                           ": the job ended before the crash");
      if (wrong)
        failures.push_back(name + " trial " + std::to_string(t) + ": " + std::to_string(wrong) +
                           " stopped queries wrote results the embedded run does not give");
      live.push_back(observed);
      sim.push_back(simulated);
      run["live"] = observed;
      run["ran"] = true;
      run["stopped_at_sinks"] = stopped_seen;
      run["stopped_reported"] = r.stopped_queries;
      run["wrong_queries"] = wrong;
      run["recoveries"] = r.recoveries;
      run["warnings"] = r.warnings;
      // nodes the coordinator gave up on though nobody killed them (a starved machine)
      std::size_t silent = 0;
      for (const auto& w : r.warnings) silent += w.find("sent no heartbeat") != std::string::npos;
      run["silent_nodes_given_up"] = silent;
      if (silent)
        failures.push_back(name + " trial " + std::to_string(t) + ": " + std::to_string(silent) +
                           " node(s) that were not killed sent no heartbeat within the timeout");
      run["seconds"] = r.seconds;
      runs.push_back(run);
      std::printf("  %s trial %d/%d: crashed %zu node(s), live %.3f, sim %.3f\n", name.c_str(),
                  t + 1, trials, crashed.size(), observed, simulated);
      std::fflush(stdout);
    }
    live_mean[name] = mean(live);
    sim_mean[name] = mean(sim);
    per_heuristic[name] = {{"replicated_instances", replicated},
                           {"instances", d.plan.replicas.size()},
                           {"budget_cores", d.plan.budget},
                           {"replica_cores", d.plan.replica_load},
                           {"predicted", predicted.running},
                           {"predicted_standard_error", predicted.standard_error},
                           {"curve", curve},
                           {"trials", runs}};
  }

  const double load_after = bench::load_average();
  const auto differs = [&](const std::string& h) {
    return std::abs(live_mean[h] - sim_mean[h]) > 0.02;
  };
  for (const std::string h : {"product", "random"})
    if (differs(h))
      failures.push_back(h + ": live " + std::to_string(live_mean[h]) + " and sim " +
                         std::to_string(sim_mean[h]) + " differ by more than 2 points");
  const nlohmann::json doc{
      {"benchmark", "availability"},
      {"live_product", live_mean["product"]},
      {"sim_product", sim_mean["product"]},
      {"live_random", live_mean["random"]},
      {"sim_random", sim_mean["random"]},
      {"predicted_product", per_heuristic["product"]["predicted"]},
      {"predicted_random", per_heuristic["random"]["predicted"]},
      {"per_heuristic", per_heuristic},
      {"settings",
       {{"nodes", node_count},
        {"trials", trials},
        {"p", p},
        {"seed", seed},
        {"sources", sources},
        {"queries", sinks.size()},
        {"events_per_source", events},
        {"rate_per_source", rate},
        {"kill_at", kill_at},
        {"spare", cluster.planned.spare},
        {"heartbeat_timeout_ms", cluster.heartbeat_timeout.count()},
        {"results_in_reference", total}}},
      {"load_average", {{"before", load_before}, {"after", load_after}}},
      {"definitions",
       {{"live",
         "per trial, the fraction of queries whose sink file holds every result of the "
         "fault-free embedded run (trials without a crash are not run and count 1)"},
        {"sim",
         "per trial, replication::running_fraction of the deployed plan for the same "
         "crashed nodes"},
        {"predicted", "replication::simulate_availability of the deployed plan at p (10000 runs)"},
        {"curve",
         "simulate_availability of the deployed plan over p, as the paper's figure 4 "
         "plots it"}}},
      {"failures", failures}};
  std::ofstream{out} << doc.dump(2) << "\n";
  std::printf(
      "live_product %.4f sim_product %.4f live_random %.4f sim_random %.4f (load %.2f -> "
      "%.2f); wrote %s\n",
      live_mean["product"], sim_mean["product"], live_mean["random"], sim_mean["random"],
      load_before, load_after, out.c_str());
  for (const auto& f : failures) std::fprintf(stderr, "miss: %s\n", f.c_str());
  return failures.empty() ? 0 : 1;
}
