// The physical plan: the logical graph compiled into stages (chains of fused operators that
// run in one actor per instance), their parallelism, and the edges between stages.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tidemark/graph.hpp"

namespace tidemark {

struct plan_options {
  /// Fuse chains of operators joined by forward edges with equal parallelism into one actor.
  bool fuse = true;
};

/// Operators that run together, one actor per instance.
struct stage {
  std::vector<node_id> chain;  ///< in data-flow order; chain[0] may be a source
  std::uint32_t parallelism = 1;
};

struct stage_edge {
  std::uint32_t from = 0;  ///< stage index
  std::uint32_t to = 0;    ///< stage index
  std::uint32_t input = 0;  ///< input index of the receiving operator
  partitioning part = partitioning::forward;
};

struct physical_plan {
  std::vector<stage> stages;  ///< every stage follows the stages it reads from
  std::vector<stage_edge> edges;
  /// Number of channels (one per sending and receiving instance pair that exchange data).
  std::size_t channel_count() const;
};

/// Compiles a valid graph (see validate) into a physical plan.
physical_plan compile(const logical_graph& g, const plan_options& opts = {});

/// Human-readable plan: one line per stage with its operators, parallelism and inputs.
std::string to_text(const logical_graph& g, const physical_plan& p);
/// Graphviz DOT: operators as nodes, fused chains as clusters, edges labelled by partitioning.
std::string to_dot(const logical_graph& g, const physical_plan& p);

/// A forward edge only pairs instance i with instance i when both sides have equal parallelism.
inline bool pointwise(const stage_edge& e, const physical_plan& p) {
  return e.part == partitioning::forward &&
         p.stages[e.from].parallelism == p.stages[e.to].parallelism;
}

}  // namespace tidemark
