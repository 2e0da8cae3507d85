// `tidemark replication plan GRAPH.json|JOB` prints which operators get how many replicas where and
// the plan's estimated availability, for a JSON graph or measured on a running registered job;
// `tidemark replication simulate` runs the paper's experiment.
#include "replication_command.hpp"

#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include <CLI/CLI.hpp>

#include "tidemark/core/synchronizer.hpp"
#include "tidemark/replication/availability.hpp"
#include "tidemark/replication/experiment.hpp"
#include "tidemark/replication/graph_adapter.hpp"
#include "tidemark/runtime/cluster.hpp"
#include "tidemark/runtime/job_registry.hpp"
#include "tidemark/runtime/live.hpp"

namespace tidemark {

namespace {

using namespace replication;

struct plan_args {
  std::string graph;  // a JSON graph file, or a registered job's name
  std::vector<std::string> job_args;
  std::string cluster_file;
  bool insecure = false;
  std::string measure = "10s";
  std::uint32_t hosts = 4;
  double host_cpu = 1;
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

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("cannot read graph file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// `measured_on` (per operator, may be empty) adds the node each instance was measured on.
void print_plan(const replication_model& m, const replica_plan& plan,
                const availability_estimate& with, const availability_estimate& without,
                const simulation_options& sim, const std::vector<std::string>& measured_on) {
  const bool live = !measured_on.empty();
  say("%-24s %8s %10s %8s  %s%s\n", "operator", "load", "importance", "replicas",
      live ? "measured on  " : "", "primary -> replica hosts");
  std::size_t replicated = 0;
  for (op_index i = 0; i < m.operators.size(); ++i) {
    const auto& r = plan.replicas[i];
    replicated += !r.empty();
    std::string where = m.hosts[m.primary[i]].name + " ->";
    for (auto h : r) where += " " + m.hosts[h].name;
    std::string measured = live ? measured_on[i] + " " : "";
    if (live) measured.resize(std::max<std::size_t>(measured.size(), 13), ' ');
    say("%-24s %8.3f %10.3f %8zu  %s%s\n", m.operators[i].name.c_str(), m.operators[i].load,
        plan.importance[i], r.size(), measured.c_str(), where.c_str());
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

// "10s", "500ms", "2m", or seconds as a plain number.
std::chrono::milliseconds parse_duration(const std::string& text) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string unit = text.substr(used);
  double ms = unit == "ms" ? 1 : unit == "s" || unit.empty() ? 1e3 : unit == "m" ? 6e4 : -1;
  if (used == 0 || ms < 0 || !(value > 0))
    fail("--measure '" + text + "' is not a duration such as 10s, 500ms or 2m");
  return std::chrono::milliseconds{static_cast<std::int64_t>(value * ms)};
}

bool every_instance_reported(const live_snapshot& s) {
  std::size_t instances = 0;
  for (const auto& stage : s.plan->stages) instances += stage.parallelism;
  return s.instances.size() == instances;
}

// Runs the registered job `a.graph` (embedded, or on the nodes of --cluster), measures it between
// two live snapshots --measure apart, stops it, and builds the model from what it measured.
live_model measure_job(const job_registry& registry, const plan_args& a) {
  const auto& spec = registry.find(a.graph);
  auto options = parse_job_arguments(spec, a.job_args);
  const auto interval = std::chrono::duration<double>(parse_duration(a.measure)).count();
  std::optional<cluster_config> cluster;
  std::vector<host_info> hosts;
  if (!a.cluster_file.empty()) {
    cluster = cluster_config::load(a.cluster_file);
    if (a.insecure != cluster->insecure)
      fail("--insecure and 'insecure: true' in the cluster file go together: the nodes must "
           "agree to run in plain text");
    for (const auto& n : cluster->nodes) hosts.push_back({n.id, a.host_cpu});
  } else {
    for (std::uint32_t i = 0; i < a.hosts; ++i)
      hosts.push_back({"h" + std::to_string(i), a.host_cpu});
  }
  run_options opts;
  opts.live = std::make_shared<live_view>();
  opts.live_period = std::chrono::milliseconds{250};
  auto stop = std::make_shared<std::atomic<bool>>(false);
  opts.stop = stop;
  std::exception_ptr failure;
  std::atomic<bool> ended{false};
  std::thread runner{[&, options] {
    try {
      if (cluster)
        run_on_cluster(spec, options, *cluster, opts);
      else
        run_registered(spec, options, opts);
    } catch (...) {
      failure = std::current_exception();
    }
    ended = true;
  }};
  // The interval starts once every instance reported (deploying and starting take a while) and
  // ends `interval` later or when the job does.
  std::shared_ptr<const live_snapshot> first;
  std::shared_ptr<const live_snapshot> last;
  const auto started = std::chrono::steady_clock::now();
  auto next_progress = started + std::chrono::seconds{1};
  while (true) {
    const bool runner_ended = ended.load();
    auto s = opts.live->latest();
    if (s && !first && (every_instance_reported(*s) || s->finished)) first = s;
    if (runner_ended || (s && s->finished) ||
        (first && s->seconds - first->seconds >= interval)) {
      last = s;
      break;
    }
    if (std::chrono::steady_clock::now() >= next_progress) {
      next_progress += std::chrono::seconds{1};
      if (first)
        std::fprintf(stderr, "  measuring '%s': %.0f of %.0f s\n", spec.name.c_str(),
                     s->seconds - first->seconds, interval);
      else
        std::fprintf(stderr, "  starting '%s'\n", spec.name.c_str());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  stop->store(true);
  runner.join();
  if (failure) std::rethrow_exception(failure);
  if (!last) fail("job '" + spec.name + "' ended before it reported any counters");
  live_measurement m;
  if (first && !first->finished) m.before = first->instances;  // else: from the job's start
  m.after = last->instances;
  m.seconds = last->seconds - (m.before.empty() ? 0 : first->seconds);
  for (const auto& stage : last->plan->stages) m.node_of.push_back(stage.nodes);
  if (last->finished)
    say("job '%s' ended after %.1f s, before the %.1f s interval: measured %.1f s up to its "
        "end\n", spec.name.c_str(), last->seconds, interval, m.seconds);
  else
    say("measured job '%s' %s for %.1f s (%.1f s to %.1f s after its start), then stopped it\n",
        spec.name.c_str(), cluster ? ("on the nodes of " + a.cluster_file).c_str() : "embedded",
        m.seconds, last->seconds - m.seconds, last->seconds);
  // the graph that ran: the job's own plus the synchronizer gates the runtime adds
  auto j = spec.build(options);
  auto live = model_from_live(synchronize(j.graph()).graph, m, std::move(hosts));
  if (!live.measured_placement)
    say("primaries placed on %zu hosts of %.1f cores (the job did not run on them)\n",
        live.model.hosts.size(), a.host_cpu);
  return live;
}

void run_plan(const plan_args& a, const job_registry& registry) {
  try {
    const bool json_file = std::filesystem::path(a.graph).extension() == ".json" &&
                           std::filesystem::is_regular_file(a.graph);
    if (json_file && !a.job_args.empty()) fail("unexpected arguments after the graph file");
    live_model live;
    if (json_file)
      live.model = model_from_json(read_file(a.graph), a.graph);
    else
      live = measure_job(registry, a);
    const auto& m = live.model;
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
    if (!a.spare.empty()) {
      o.spare = parse_spare(a.spare, total_load(m));
      if (!o.spare) fail("--spare '" + a.spare + "' is not a load >= 0 or a percentage such as 50%");
    }
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
    print_plan(m, plan, with, without, sim, live.measured_on);
  } catch (const model_error& e) {
    fail(e.what());
  } catch (const job_error& e) {
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

void add_replication_commands(CLI::App& app, const job_registry& registry) {
  auto* repl = app.add_subcommand("replication", "Plan active replicas within spare capacity");
  repl->require_subcommand(1);

  auto pa = std::make_shared<plan_args>();
  auto* plan = repl->add_subcommand(
      "plan",
      "Print which operators of a graph or a running job get replicas, where, and the "
      "availability");
  plan->add_option("graph", pa->graph,
                   "JSON graph (see docs/replication.md), or a registered job to run and measure "
                   "(options the plan does not know go to the job)")
      ->required();
  plan->allow_extras();
  plan->add_option("--cluster", pa->cluster_file,
                   "with a job: run it on the nodes of this cluster file, which are the hosts")
      ->check(CLI::ExistingFile);
  plan->add_flag("--insecure", pa->insecure, "with --cluster: the cluster runs in plain text");
  plan->add_option("--measure", pa->measure,
                   "with a job: how long to measure it (10s, 500ms, 2m; default 10s)");
  plan->add_option("--hosts", pa->hosts, "with a job, embedded: plan on this many equal hosts")
      ->check(CLI::Range(1u, 100000u));
  plan->add_option("--host-cpu", pa->host_cpu,
                   "with a job: CPU of each host in cores, the unit of measured loads (default 1)")
      ->check(CLI::PositiveNumber);
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
  plan->callback([pa, plan, &registry] {
    pa->job_args = plan->remaining();
    run_plan(*pa, registry);
  });

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
