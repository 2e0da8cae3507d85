// One instance of a physical stage: a tree of fused operators (optionally headed by a source),
// its input channels with credit, and its output channels with batching and partitioning.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include "tidemark/graph.hpp"
#include "tidemark/plan.hpp"
#include "tidemark/runtime.hpp"

namespace tidemark::detail {

struct output_channel {
  caf::actor target;
  std::uint32_t in = 0;  ///< the receiver's input slot
};

/// Output channels of one stage edge, which carries output `port` of the operator at `from_op`.
struct output_edge {
  partitioning part = partitioning::forward;
  std::uint32_t from_op = 0;
  std::uint32_t port = 0;
  std::vector<std::uint32_t> slots;  ///< indices into stage_setup::outputs
};

struct stage_setup {
  std::uint32_t stage = 0;
  std::uint32_t instance = 0;
  std::uint32_t parallelism = 1;
  std::vector<const logical_node*> nodes;  ///< the stage's operators, in plan order
  std::vector<fused_operator> tree;        ///< per operator: what it reads within the stage
  std::unique_ptr<source_logic> source;    ///< set when the chain starts with a source
  std::vector<std::unique_ptr<operator_logic>> ops;  ///< one per non-source node, in order
  std::vector<std::uint32_t> input_ports;  ///< per input slot: input index of the first operator
  std::vector<output_channel> outputs;
  std::vector<output_edge> edges;
  caf::actor driver;
  run_options opts;
};

caf::actor spawn_stage(caf::actor_system& sys, stage_setup setup);

}  // namespace tidemark::detail
