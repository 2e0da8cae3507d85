// The physical plan: the logical graph compiled into stages (small trees of fused operators that
// run in one actor per instance), their parallelism, and the edges between stages.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tidemark/core/graph.hpp"

namespace tidemark {

struct plan_options {
  /// Fuse operators joined by forward edges with equal parallelism into one actor.
  bool fuse = true;
};

/// One operator of a stage and the operator of the same stage it reads from.
struct fused_operator {
  node_id node = 0;
  /// Position in the stage of the operator whose output this one reads, and the output port it
  /// reads; unused for position 0, the head, which reads the stage's input channels.
  std::uint32_t from = 0;
  std::uint32_t port = 0;
};

/// Operators that run together, one actor per instance: a tree rooted at ops[0] (which may be a
/// source). A node joins the stage of its input when it has exactly one input, the edge is
/// forward, the parallelism is equal, the input is not a sink and nothing else reads the same
/// (operator, port); so a window whose results and late events each have one forward reader
/// runs with both readers, and no batch is copied.
struct stage {
  std::vector<fused_operator> ops;  ///< every operator follows the one it reads from
  std::uint32_t parallelism = 1;
};

struct stage_edge {
  std::uint32_t from = 0;      ///< stage index
  std::uint32_t from_op = 0;   ///< position in the sending stage of the operator it reads
  std::uint32_t port = 0;      ///< the output port of that operator it reads
  std::uint32_t to = 0;        ///< stage index; the edge feeds that stage's head
  std::uint32_t input = 0;     ///< input index of the receiving operator
  partitioning part = partitioning::forward;
  bool feedback = false;       ///< closes a loop (job::iterate): `from` comes later in the plan
};

struct physical_plan {
  /// Every stage follows the stages it reads from, feedback edges aside.
  std::vector<stage> stages;
  std::vector<stage_edge> edges;
  /// Number of channels (one per sending and receiving instance pair that exchange data).
  std::size_t channel_count() const;
};

/// Compiles a valid graph (see validate) into a physical plan.
physical_plan compile(const logical_graph& g, const plan_options& opts = {});

/// Human-readable plan: one line per stage with its operators, parallelism and inputs; an
/// operator that reads a side output or not the operator before it names what it reads
/// (`, w:late => late_sink (sink)`).
std::string to_text(const logical_graph& g, const physical_plan& p);
/// Graphviz DOT: operators as nodes, stages as clusters, edges labelled by partitioning (and by
/// the port when it is a side output).
std::string to_dot(const logical_graph& g, const physical_plan& p);

/// Per stage, the loop it runs in: the index of the lowest stage that both reaches it and is
/// reached from it (every such cycle closes through a feedback edge), or -1 outside every loop.
std::vector<std::int32_t> loops_of(const physical_plan& p);

/// A forward edge only pairs instance i with instance i when both sides have equal parallelism.
inline bool pointwise(const stage_edge& e, const physical_plan& p) {
  return e.part == partitioning::forward &&
         p.stages[e.from].parallelism == p.stages[e.to].parallelism;
}

}  // namespace tidemark
