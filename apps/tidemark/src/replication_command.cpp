// `tidemark replication plan GRAPH.json` prints which operators get how many replicas where and
// the plan's estimated availability; `tidemark replication simulate` runs the paper's experiment.
#include "replication_command.hpp"

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include <CLI/CLI.hpp>

#include "tidemark/replication/availability.hpp"
#include "tidemark/replication/experiment.hpp"
#include "tidemark/replication/graph_adapter.hpp"

namespace tidemark {

namespace {

using namespace replication;

struct plan_args {
  std::string graph;
  std::string spare;
  std::string heuristic_name = "product";
  bool query_level = false;
  std::string selection_name = "breadth-first";
  std::string placement_name = "bin-packing";
  std::uint32_t max_level = 1;
  std::uint32_t colour_limit = 1;
  std::uint64_t seed = 1;
  double failure_probability = 0.02;
  std::uint32_t runs = 1000;
  double target = -1;
  double max_cost = -1;
};

// printf-style formatting onto std::cout, so that callers (and tests) can redirect it.
[[gnu::format(printf, 1, 2)]] void say(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  std::string line(static_cast<std::size_t>(std::vsnprintf(nullptr, 0, format, args)), '\0');
  va_end(args);
  std::vsnprintf(line.data(), line.size() + 1, format, again);
  va_end(again);
  std::cout << line;
}

[[noreturn]] void fail(const std::string& message) {
  std::cerr << "tidemark replication: " << message << "\n";
  throw CLI::RuntimeError(1);
}

// "0.5" is a load in host capacities; "50%" is a share of the primaries' total load.
double parse_spare(const std::string& text, double total) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  bool percent = used + 1 == text.size() && text.back() == '%';
  if (used == 0 || (used != text.size() && !percent) || !(value >= 0))
    fail("--spare '" + text + "' is not a load >= 0 or a percentage such as 50%");
  return percent ? total * value / 100 : value;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("cannot read graph file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void print_plan(const replication_model& m, const replica_plan& plan,
                const availability_estimate& with, const availability_estimate& without,
                const simulation_options& sim) {
  say("%-24s %8s %10s %8s  %s\n", "operator", "load", "importance", "replicas",
      "primary -> replica hosts");
  std::size_t replicated = 0;
  for (op_index i = 0; i < m.operators.size(); ++i) {
    const auto& r = plan.replicas[i];
    replicated += !r.empty();
    std::string where = m.hosts[m.primary[i]].name + " ->";
    for (auto h : r) where += " " + m.hosts[h].name;
    say("%-24s %8.3f %10.3f %8zu  %s\n", m.operators[i].name.c_str(), m.operators[i].load,
        plan.importance[i], r.size(), where.c_str());
  }
  say("\n%zu of %zu operators replicated (%zu replicas), replica load %.3f of budget "
      "%.3f; %zu replicas found no host\n",
      replicated, m.operators.size(), plan.replica_count(), plan.replica_load, plan.budget,
      plan.unplaced);
  say("estimated availability (host failure probability %.2f %% over the period, %u "
      "runs): %.2f %% of queries running (+- %.2f), all %zu queries running in %.1f %% "
      "of runs; without replicas %.2f %%\n",
      100 * sim.failure_probability, sim.runs, 100 * with.running, 100 * with.standard_error,
      m.queries.size(), 100 * with.all_running, 100 * without.running);
}

void run_plan(const plan_args& a) {
  try {
    auto m = model_from_json(read_file(a.graph), a.graph);
    planner_options o;
    auto h = parse_heuristic(a.heuristic_name);
    auto s = parse_selection(a.selection_name);
    auto p = parse_placement(a.placement_name);
    if (!h) fail("unknown --heuristic '" + a.heuristic_name + "'");
    if (!s) fail("unknown --selection '" + a.selection_name + "'");
    if (!p) fail("unknown --placement '" + a.placement_name + "'");
    o.importance = *h;
    o.selection = *s;
    o.placement = *p;
    o.query_level = a.query_level;
    o.max_level = a.max_level;
    o.colour_limit = a.colour_limit;
    o.seed = a.seed;
    if (!a.spare.empty()) o.spare = parse_spare(a.spare, total_load(m));
    simulation_options sim{a.failure_probability, a.runs, a.seed};
    say("%s: %zu operators, %zu queries, %zu hosts, primary load %.3f\n", a.graph.c_str(),
        m.operators.size(), m.queries.size(), m.hosts.size(), total_load(m));
    replica_plan plan;
    availability_estimate with;
    if (a.target >= 0 || a.max_cost >= 0) {
      auto candidates = all_strategies(a.max_level);
      auto best = a.target >= 0 ? minimize_cost(m, a.target, candidates, sim)
                                : maximize_availability(m, a.max_cost, candidates, sim);
      if (a.target >= 0 && !best.feasible)
        say("no plan reaches %.2f %%; the most available one follows\n", 100 * a.target);
      o = best.options;
      plan = std::move(best.plan);
      with = best.availability;
    } else {
      plan = plan_replicas(m, o);
      with = simulate_availability(m, plan, sim);
    }
    say("heuristic %s%s, selection %s, placement %s, at most %u replicas per operator\n\n",
        to_string(o.importance), o.query_level ? " (query level)" : "", to_string(o.selection),
        to_string(o.placement), o.max_level);
    auto without = simulate_availability(m, replica_plan{}, sim);
    print_plan(m, plan, with, without, sim);
  } catch (const model_error& e) {
    fail(e.what());
  }
}

struct simulate_args {
  experiment_options opts;
  std::string out;
};

void run_simulate(const simulate_args& a) {
  try {
    auto start = std::chrono::steady_clock::now();
    std::uint32_t step = std::max(1u, a.opts.runs / 10);
    auto r = run_experiment(a.opts, [&](std::uint32_t done) {
      if (done % step != 0 && done != a.opts.runs) return;
      std::fprintf(stderr, "  %u/%u runs (%.0f s)\n", done, a.opts.runs,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    });
    std::cout << to_text(a.opts, r);
    if (!a.out.empty()) {
      std::ofstream out(a.out);
      if (!(out << to_json(a.opts, r) << "\n")) fail("cannot write '" + a.out + "'");
    }
  } catch (const model_error& e) {
    fail(e.what());
  }
}

}  // namespace

void add_replication_commands(CLI::App& app) {
  auto* repl = app.add_subcommand("replication", "Plan active replicas within spare capacity");
  repl->require_subcommand(1);

  auto pa = std::make_shared<plan_args>();
  auto* plan = repl->add_subcommand(
      "plan", "Print which operators of a graph get replicas, where, and the availability");
  plan->add_option("graph", pa->graph, "JSON graph (see docs/replication.md)")
      ->required()
      ->check(CLI::ExistingFile);
  plan->add_option("--spare", pa->spare,
                   "load replicas may use: a number (host capacities) or a percentage of the "
                   "primary load such as 50%; default: the hosts' free CPU");
  plan->add_option("--heuristic", pa->heuristic_name,
                   "random, low-utilization, out-degree, product")
      ->check(CLI::IsMember({"random", "low-utilization", "out-degree", "product"}));
  plan->add_flag("--query-level", pa->query_level, "replicate whole queries first");
  plan->add_option("--selection", pa->selection_name, "breadth-first, direct, knapsack")
      ->check(CLI::IsMember({"breadth-first", "direct", "knapsack"}));
  plan->add_option("--placement", pa->placement_name, "bin-packing, colour")
      ->check(CLI::IsMember({"bin-packing", "colour"}));
  plan->add_option("--max-level", pa->max_level, "replicas per operator at most")
      ->check(CLI::Range(1u, 16u));
  plan->add_option("--colour-limit", pa->colour_limit,
                   "replicas of one query per host with --placement colour")
      ->check(CLI::Range(1u, 1000u));
  plan->add_option("--seed", pa->seed, "seed of the random heuristic, tie breaks and simulation");
  plan->add_option("--failure-probability", pa->failure_probability,
                   "probability that a host crashes during the period")
      ->check(CLI::Range(0.0, 1.0));
  plan->add_option("--runs", pa->runs, "Monte Carlo runs")->check(CLI::Range(1u, 10000000u));
  auto* target = plan->add_option("--target", pa->target,
                                  "find the cheapest plan reaching this availability (0..1)")
                     ->check(CLI::Range(0.0, 1.0));
  plan->add_option("--max-cost", pa->max_cost,
                   "find the most available plan using at most this replica load")
      ->check(CLI::NonNegativeNumber)
      ->excludes(target);
  plan->callback([pa] { run_plan(*pa); });

  auto sa = std::make_shared<simulate_args>();
  auto* sim = repl->add_subcommand(
      "simulate",
      "Run the heuristic replication paper's experiment (generated queries, 100 hosts)");
  sim->add_option("--runs", sa->opts.runs, "runs per point")->check(CLI::Range(1u, 100000u));
  sim->add_option("--threads", sa->opts.threads, "worker threads")->check(CLI::Range(1u, 256u));
  sim->add_option("--hosts", sa->opts.workload.hosts, "hosts")->check(CLI::Range(1u, 100000u));
  sim->add_option("--queries", sa->opts.workload.queries, "queries per generated system")
      ->check(CLI::Range(1u, 1000000u));
  sim->add_option("--seed", sa->opts.workload.seed, "seed of the generated systems");
  sim->add_option("--out", sa->out, "also write the results as JSON to this file");
  sim->callback([sa] { run_simulate(*sa); });
}

}  // namespace tidemark
