// Monte Carlo availability of replica plans and the cost/availability optimizer built on it.
#include "tidemark/replication/availability.hpp"

#include <cmath>

#include "random.hpp"

namespace tidemark::replication {

std::vector<std::vector<host_index>> instance_hosts(const replication_model& m,
                                                    const replica_plan& plan) {
  std::vector<std::vector<host_index>> result(m.operators.size());
  for (op_index i = 0; i < m.operators.size(); ++i) {
    result[i].push_back(m.primary[i]);
    if (i < plan.replicas.size())
      result[i].insert(result[i].end(), plan.replicas[i].begin(), plan.replicas[i].end());
  }
  return result;
}

double running_fraction(const replication_model& m,
                        const std::vector<std::vector<host_index>>& instances,
                        const std::vector<char>& failed) {
  std::vector<char> alive(instances.size());
  for (std::size_t i = 0; i < instances.size(); ++i)
    for (auto h : instances[i])
      if (!failed[h]) {
        alive[i] = 1;
        break;
      }
  std::size_t running = 0;
  for (const auto& q : m.queries) {
    bool ok = true;
    for (auto i : q.operators) ok = ok && alive[i];
    running += ok;
  }
  return static_cast<double>(running) / static_cast<double>(m.queries.size());
}

availability_estimate simulate_availability(const replication_model& m, const replica_plan& plan,
                                            const simulation_options& opts) {
  if (!(opts.failure_probability >= 0 && opts.failure_probability <= 1))
    throw model_error("failure probability " + std::to_string(opts.failure_probability) +
                      " is not in [0, 1]");
  if (opts.runs == 0) throw model_error("simulation needs at least one run");
  auto instances = instance_hosts(m, plan);
  detail::rng gen{opts.seed};
  std::vector<char> failed(m.hosts.size());
  double sum = 0;
  double sum_sq = 0;
  std::uint32_t all = 0;
  for (std::uint32_t run = 0; run < opts.runs; ++run) {
    for (auto& f : failed) f = gen.uniform() < opts.failure_probability;
    double x = running_fraction(m, instances, failed);
    sum += x;
    sum_sq += x * x;
    all += x == 1.0;
  }
  double n = opts.runs;
  availability_estimate result;
  result.running = sum / n;
  double var = opts.runs > 1 ? std::max(0.0, (sum_sq - n * result.running * result.running) / (n - 1))
                             : 0.0;
  result.standard_error = std::sqrt(var / n);
  result.all_running = all / n;
  return result;
}

namespace {

optimized_plan evaluate(const replication_model& m, planner_options opts, double spare,
                        const simulation_options& sim) {
  opts.spare = spare;
  optimized_plan r;
  r.options = opts;
  r.plan = plan_replicas(m, opts);
  r.availability = simulate_availability(m, r.plan, sim);
  return r;
}

// Higher availability wins; at equal availability the cheaper plan.
bool better(const optimized_plan& a, const optimized_plan& b) {
  if (a.availability.running != b.availability.running)
    return a.availability.running > b.availability.running;
  return a.plan.replica_load < b.plan.replica_load;
}

}  // namespace

optimized_plan maximize_availability(const replication_model& m, double cost_limit,
                                     const std::vector<planner_options>& candidates,
                                     const simulation_options& sim) {
  if (candidates.empty()) throw model_error("the optimizer needs at least one candidate");
  optimized_plan best;
  for (const auto& c : candidates) {
    auto r = evaluate(m, c, cost_limit, sim);
    if (!best.feasible || better(r, best)) {
      best = std::move(r);
      best.feasible = true;
    }
  }
  return best;
}

optimized_plan minimize_cost(const replication_model& m, double target,
                             const std::vector<planner_options>& candidates,
                             const simulation_options& sim) {
  if (candidates.empty()) throw model_error("the optimizer needs at least one candidate");
  double total = total_load(m);
  optimized_plan best;
  optimized_plan fallback;
  bool have_fallback = false;
  for (const auto& c : candidates) {
    double most = total * c.max_level;
    auto high = evaluate(m, c, most, sim);
    if (!have_fallback || better(high, fallback)) {
      fallback = high;
      have_fallback = true;
    }
    if (high.availability.running < target) continue;
    double lo = 0;
    double hi = most;
    auto at_hi = std::move(high);
    while (hi - lo > 1e-3 * total) {
      double mid = (lo + hi) / 2;
      auto r = evaluate(m, c, mid, sim);
      if (r.availability.running >= target) {
        hi = mid;
        at_hi = std::move(r);
      } else {
        lo = mid;
      }
    }
    if (!best.feasible || at_hi.plan.replica_load < best.plan.replica_load) {
      best = std::move(at_hi);
      best.feasible = true;
    }
  }
  return best.feasible ? best : fallback;
}

}  // namespace tidemark::replication
