// Availability of a replica plan under crash-stop host failures, estimated by Monte Carlo
// simulation, and the optimizer that trades replica load (cost) against that availability.
#pragma once

#include <cstdint>
#include <vector>

#include "tidemark/replication/model.hpp"
#include "tidemark/replication/planner.hpp"

namespace tidemark::replication {

struct simulation_options {
  /// Probability that a host crashes (and stays down) during the period, e.g. one day.
  double failure_probability = 0.02;
  std::uint32_t runs = 1000;
  std::uint64_t seed = 1;
};

struct availability_estimate {
  double running = 0;         ///< mean fraction of queries still running at the period's end
  double standard_error = 0;  ///< of `running`
  double all_running = 0;     ///< fraction of runs in which every query kept running
};

/// The hosts of every instance of each operator: the primary first, then the replicas.
std::vector<std::vector<host_index>> instance_hosts(const replication_model& m,
                                                    const replica_plan& plan);

/// Fraction of queries in which every operator has an instance on a host that did not fail.
/// `failed` holds one flag per host.
double running_fraction(const replication_model& m,
                        const std::vector<std::vector<host_index>>& instances,
                        const std::vector<char>& failed);

/// Draws each host's crash independently with the failure probability, `runs` times. The same
/// seed draws the same crashes for any plan of the same hosts, so plans compare fairly.
availability_estimate simulate_availability(const replication_model& m, const replica_plan& plan,
                                            const simulation_options& opts);

struct optimized_plan {
  bool feasible = false;  ///< false when no candidate met the target (the best is returned)
  planner_options options;
  replica_plan plan;
  availability_estimate availability;
};

/// The candidate with the highest estimated availability whose replicas use at most
/// `cost_limit` load (the planner's spare is set to it); ties go to the cheaper plan.
optimized_plan maximize_availability(const replication_model& m, double cost_limit,
                                     const std::vector<planner_options>& candidates,
                                     const simulation_options& sim);

/// The cheapest plan (replica load) whose estimated availability reaches `target`: for each
/// candidate, a bisection on the spare load finds the smallest budget meeting the target to
/// within 0.1 % of the total load. Availability need not grow with the budget everywhere, so
/// the result is the cheapest found, not a proven minimum. When no budget reaches the target,
/// feasible is false and the plan with the highest availability is returned.
optimized_plan minimize_cost(const replication_model& m, double target,
                             const std::vector<planner_options>& candidates,
                             const simulation_options& sim);

}  // namespace tidemark::replication
