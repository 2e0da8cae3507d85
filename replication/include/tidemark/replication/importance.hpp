// Importance heuristics of heuristic replication: how much replicating an operator (or a whole
// query) is expected to help the availability of queries. Every score is normalized to [0, 1].
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "tidemark/replication/model.hpp"

namespace tidemark::replication {

enum class heuristic {
  random,            ///< baseline: a seeded uniform score
  low_utilization,   ///< 1 - load / max load: replicate as many operators as possible
  query_out_degree,  ///< queries using the operator / all queries: shared operators first
  product,           ///< query_out_degree * low_utilization
};

const char* to_string(heuristic h) noexcept;
/// Parses "random", "low-utilization", "out-degree" or "product".
std::optional<heuristic> parse_heuristic(std::string_view s);

/// The importance of every operator under `h`; `seed` drives the random heuristic only.
std::vector<double> operator_importance(const replication_model& m, heuristic h,
                                        std::uint64_t seed);

/// The importance of every query: the mean importance of its operators, divided by the
/// largest such mean so the most important query scores 1.
std::vector<double> query_importance(const replication_model& m,
                                     const std::vector<double>& op_importance);

/// Indices 0..scores.size()-1 by decreasing score. Equal scores are ordered by a shuffle drawn
/// from `seed`, so that ties do not favour whatever came first in the input.
std::vector<std::uint32_t> by_decreasing(const std::vector<double>& scores, std::uint64_t seed);

}  // namespace tidemark::replication
