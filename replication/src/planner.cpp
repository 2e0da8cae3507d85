// The three planning steps in sequence: importance, selection, placement.
#include "tidemark/replication/planner.hpp"

#include <algorithm>
#include <exception>
#include <string>

namespace tidemark::replication {

std::size_t replica_plan::replica_count() const noexcept {
  std::size_t n = 0;
  for (const auto& r : replicas) n += r.size();
  return n;
}

double spare_capacity(const replication_model& m) {
  std::vector<double> free(m.hosts.size());
  for (host_index h = 0; h < m.hosts.size(); ++h) free[h] = m.hosts[h].cpu_capacity;
  for (op_index i = 0; i < m.operators.size(); ++i) {
    free[m.primary[i]] -= m.operators[i].load;
    if (!m.replicas.empty())
      for (auto h : m.replicas[i]) free[h] -= m.operators[i].load;
  }
  double sum = 0;
  for (auto f : free) sum += std::max(0.0, f);
  return sum;
}

std::optional<double> parse_spare(std::string_view text, double total_load) {
  const std::string t{text};
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(t, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const bool percent = used + 1 == t.size() && t.back() == '%';
  if ((used != t.size() && !percent) || !(value >= 0)) return std::nullopt;
  return percent ? total_load * value / 100 : value;
}

std::vector<planner_options> all_strategies(std::uint32_t max_level) {
  std::vector<planner_options> result;
  for (auto h : {heuristic::random, heuristic::low_utilization, heuristic::query_out_degree,
                 heuristic::product})
    for (bool query_level : {false, true})
      for (auto s : {selection_strategy::breadth_first, selection_strategy::direct_levels,
                     selection_strategy::knapsack})
        for (auto p : {placement_strategy::bin_packing, placement_strategy::colour_constrained}) {
          planner_options o;
          o.importance = h;
          o.query_level = query_level;
          o.selection = s;
          o.placement = p;
          o.max_level = max_level;
          result.push_back(o);
        }
  return result;
}

replica_plan plan_replicas(const replication_model& m, const planner_options& opts) {
  if (auto problem = validate(m)) throw model_error(*problem);
  if (opts.max_level < 1) throw model_error("max_level is 0: ask for at least one replica");
  if (opts.spare && !(*opts.spare >= 0))
    throw model_error("spare load " + std::to_string(*opts.spare) + " is negative");
  replica_plan plan;
  plan.importance = operator_importance(m, opts.importance, opts.seed);
  plan.budget = opts.spare ? *opts.spare : spare_capacity(m);
  replica_packer packer{m, {opts.placement, opts.colour_limit, opts.seed}, m.replicas};
  std::vector<std::uint32_t> current;
  for (const auto& r : m.replicas) current.push_back(static_cast<std::uint32_t>(r.size()));
  select_replicas(m, plan.importance,
                  {opts.selection, opts.query_level, opts.max_level, plan.budget, opts.seed,
                   std::move(current), &packer});
  plan.replicas = packer.replicas();
  plan.unplaced = packer.rejected();
  for (op_index i = 0; i < m.operators.size(); ++i)
    plan.replica_load += m.operators[i].load * static_cast<double>(plan.replicas[i].size());
  return plan;
}

}  // namespace tidemark::replication
