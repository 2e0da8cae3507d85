// The replication planner's interface: a model of the running system in, a replica placement
// out. The supervisor calls plan_replicas whenever hosts or loads change and deploys the
// difference; the three steps (importance, selection, placement) are also usable one by one.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "tidemark/replication/importance.hpp"
#include "tidemark/replication/model.hpp"
#include "tidemark/replication/placement.hpp"
#include "tidemark/replication/selection.hpp"

namespace tidemark::replication {

struct planner_options {
  heuristic importance = heuristic::product;
  bool query_level = false;
  selection_strategy selection = selection_strategy::breadth_first;
  placement_strategy placement = placement_strategy::bin_packing;
  /// Load new replicas may use; when unset, the CPU the hosts have left after the primaries
  /// and the running replicas.
  std::optional<double> spare;
  std::uint32_t max_level = 1;
  std::uint32_t colour_limit = 1;
  std::uint64_t seed = 1;
};

struct replica_plan {
  std::vector<double> importance;  ///< per operator
  /// Hosts of each operator's replicas: the running ones (model.replicas), then the new ones.
  std::vector<std::vector<host_index>> replicas;
  double budget = 0;        ///< the spare load selection worked with
  double replica_load = 0;  ///< load of all replicas in `replicas`
  /// Replicas that the budget allowed but no host could take; selection skipped their
  /// operators (or queries) and offered the load to the next ones.
  std::size_t unplaced = 0;

  std::size_t replica_count() const noexcept;
};

/// Plans replicas for a model that validate() accepts and whose loads are set (see
/// apply_load_model); throws model_error otherwise. Deterministic for a given seed.
/// Selection drives placement: each replica (or query's worth of replicas) that selection
/// accepts is placed at once, in selection order, and only placed replicas use budget.
replica_plan plan_replicas(const replication_model& m, const planner_options& opts);

/// The spare load a budget text asks for: "0.5" is a load (in the hosts' CPU units), "50%" a
/// share of `total_load` (the primaries' load). Nullopt when the text is neither, or negative.
std::optional<double> parse_spare(std::string_view text, double total_load);

/// Every combination of heuristic, operator or query level, selection and placement strategy.
std::vector<planner_options> all_strategies(std::uint32_t max_level);

/// Free CPU after the primaries and running replicas, summed over hosts (an overloaded host
/// counts as 0).
double spare_capacity(const replication_model& m);

}  // namespace tidemark::replication
