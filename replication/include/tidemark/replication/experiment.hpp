// The simulation experiment of the heuristic replication paper: generated queries from six
// templates on simulated hosts, replicated within a spare load by several strategies, then hit
// by random host crashes. Used by `tidemark replication simulate` and bench_replication.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tidemark/replication/model.hpp"
#include "tidemark/replication/planner.hpp"

namespace tidemark::replication {

struct workload_options {
  std::uint32_t hosts = 100;
  std::uint32_t queries = 500;
  std::uint32_t streams = 40;     ///< distinct event sources the queries read
  std::uint32_t predicates = 6;   ///< distinct parameters per operator kind and input
  double load = 100;              ///< total load of the primaries, in host capacities
  std::uint64_t seed = 1;
};

/// Queries drawn from six templates (filter; filter-aggregate; projection-filter;
/// filter-sequence; join of two filtered streams; join-aggregate) over shared event streams.
/// Operators with equal kind, parameter and inputs are merged as multi-query optimization does,
/// so they serve several queries. Loads follow the load model, scaled to `load` in total;
/// primaries are spread by place_primaries over hosts of capacity load / hosts.
replication_model generate_workload(const workload_options& opts);

/// One line of the experiment: a named planner configuration.
struct experiment_series {
  std::string name;
  planner_options options;  ///< spare is set per spare level
};

/// The paper's four operator-level heuristics (random, low utilization, query out-degree,
/// product) with breadth-first selection and bin packing, then the variants this planner adds:
/// product at query level, knapsack on out-degree, product with colour constraints.
std::vector<experiment_series> paper_series();

struct experiment_options {
  workload_options workload;
  std::vector<double> failure_probabilities{0.0025, 0.005, 0.01, 0.02, 0.03};
  std::vector<double> spare_percent{0, 1, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100};
  std::vector<experiment_series> series = paper_series();
  std::uint32_t runs = 1000;
  std::uint32_t threads = 2;
};

/// Means over runs; index order [series][spare level][failure probability].
struct experiment_result {
  std::vector<std::vector<std::vector<double>>> running;         ///< fraction of queries
  std::vector<std::vector<std::vector<double>>> standard_error;  ///< of running
  std::vector<std::vector<double>> replicated_operators;  ///< [series][spare] fraction
  /// [series][spare]: replicas per run that fit the budget but no host (plan.unplaced)
  std::vector<std::vector<double>> unplaced;
  // Workload statistics, averaged over runs.
  double operators = 0;
  double queries = 0;
  double shared_operators = 0;  ///< fraction of operators in more than one query
  double max_operator_load = 0;
};

/// Runs the experiment. Each run generates its own workload (seed + run) and draws one crash
/// threshold per host, so every series, spare level and failure probability of a run sees the
/// same system and the same crashes (host h fails at p when its threshold is below p). With
/// spare level s the hosts get capacity (load + s% of load) / hosts and the planner a budget of
/// s% of the load. The result depends on the options only, not on the thread count.
/// `progress` (optional) is called with the number of finished runs, from one thread at a time.
experiment_result run_experiment(const experiment_options& opts,
                                 const std::function<void(std::uint32_t)>& progress = {});

/// The options and results as a JSON document: "failure_probabilities", "spare_percent",
/// "workload" statistics, and per series "running" and "standard_error" ([spare][p]),
/// "replicated_operators" and "rejected_placements" ([spare], see replica_plan::unplaced).
std::string to_json(const experiment_options& opts, const experiment_result& r);

/// A table per spare level of 50 % and 100 % (when simulated): running queries in percent per
/// series and failure probability.
std::string to_text(const experiment_options& opts, const experiment_result& r);

}  // namespace tidemark::replication
