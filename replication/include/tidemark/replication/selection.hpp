// Operator selection: which operators get replicas, and how many, within the spare load;
// optionally placing each accepted replica right away.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "tidemark/replication/model.hpp"
#include "tidemark/replication/placement.hpp"

namespace tidemark::replication {

enum class selection_strategy {
  /// By decreasing importance; every operator gets one replica before any gets a second.
  breadth_first,
  /// By decreasing importance; each operator directly gets its level, ceil(importance * max),
  /// so important operators may take the budget that others would have needed.
  direct_levels,
  /// The 0-1 knapsack approximation: by decreasing importance per unit of load.
  knapsack,
};

const char* to_string(selection_strategy s) noexcept;
/// Parses "breadth-first", "direct" or "knapsack".
std::optional<selection_strategy> parse_selection(std::string_view s);

struct selection_options {
  selection_strategy strategy = selection_strategy::breadth_first;
  /// Rank whole queries (query_importance) and replicate all their operators first; only then
  /// spend what is left on single operators.
  bool query_level = false;
  std::uint32_t max_level = 1;  ///< replicas per operator at most
  double budget = 0;            ///< spare load the replicas may use
  std::uint64_t seed = 1;       ///< orders equal importances
  /// Replicas each operator has already (empty: none); selection raises levels from there and
  /// the budget pays only for the new ones.
  std::vector<std::uint32_t> current;
  /// When set, a raise is accepted only if the packer can place its new replicas (all of a
  /// query's, or none), so budget is never spent on replicas that fit no host.
  replica_packer* packer = nullptr;
};

/// The number of replicas of each operator, current ones included. An operator (or query) is
/// skipped when its load no longer fits the budget (or the packer finds no host), and smaller
/// ones after it are still considered. The new replicas' load, (level - current) * load, sums
/// to at most the budget.
std::vector<std::uint32_t> select_replicas(const replication_model& m,
                                           const std::vector<double>& op_importance,
                                           const selection_options& opts);

}  // namespace tidemark::replication
