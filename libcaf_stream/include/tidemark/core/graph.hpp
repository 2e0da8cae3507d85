// The logical graph of a job: operators and the edges between them, as plain data. The typed
// API (job.hpp) builds it; validation, plan compilation, timezone analysis and the replication
// planner read it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tidemark/core/operator.hpp"

namespace tidemark {

using node_id = std::uint32_t;
class batch_codec;

/// How elements on an edge are spread over the consumer's instances.
enum class partitioning {
  forward,    ///< instance i to instance i (rebalance when the parallelism differs)
  rebalance,  ///< whole batches round robin over all consumer instances
  key_hash,   ///< by the key hash that key_by computed
  broadcast,  ///< every element to every consumer instance
};

const char* to_string(partitioning p) noexcept;

struct logical_edge {
  node_id from = 0;
  partitioning part = partitioning::forward;
  /// Closes a loop (see job::iterate): the only kind of edge allowed on a cycle. Topological
  /// order, validation and plan compilation look through it as if it were not there.
  bool feedback = false;
  /// The output port of `from` this edge reads (0: its main output; see emitter).
  std::uint32_t port = 0;
};

enum class node_kind { source, transform, sink };

/// One output of an operator: port 0 is the main output, further ports are side outputs.
struct output_port {
  /// "main", or what the side output carries ("late", the name of a side-output tag).
  std::string name = "main";
  /// Encodes the batches emitted on this port when they cross a process boundary; null when the
  /// value type has no tidemark::codec (then the port can only be read within one process).
  const batch_codec* codec = nullptr;
  /// The readable name of the value type, for errors about a missing codec.
  std::string value_type;
};

struct logical_node {
  node_id id = 0;
  std::string name;
  /// What the operator does, e.g. "map", "filter", "key_by", "reduce", "collect".
  std::string op;
  node_kind kind = node_kind::transform;
  std::uint32_t parallelism = 1;
  error_policy on_error = error_policy::fail;
  std::vector<logical_edge> inputs;
  /// Potentially delayed: the operator may complete elements late and out of order (async
  /// operators, table lookups, remote calls, user operators declared delayed). Everything
  /// downstream of it forms a timezone (timezones.hpp).
  bool delayed = false;
  /// Elements an instance of a delayed operator may process at once (shown in plans).
  std::uint32_t concurrency = 1;
  /// Creates the logic of one instance (sources use make_source instead).
  std::function<std::unique_ptr<operator_logic>(const instance_info&)> make_operator;
  std::function<std::unique_ptr<source_logic>(const instance_info&)> make_source;
  /// The operator's output ports; outputs[0] is its main output (sinks have it too, unused).
  std::vector<output_port> outputs{1};
};

class logical_graph {
 public:
  /// Adds a node and returns its id (ids are dense, in insertion order).
  node_id add(logical_node n);
  logical_node& node(node_id id) { return nodes_.at(id); }
  const logical_node& node(node_id id) const { return nodes_.at(id); }
  const std::vector<logical_node>& nodes() const noexcept { return nodes_; }
  /// Ids of the nodes that read from `id`, in insertion order.
  std::vector<node_id> consumers(node_id id) const;
  /// Node ids in an order where every node follows its inputs (feedback edges left out); nullopt
  /// on a cycle that no feedback edge closes.
  std::optional<std::vector<node_id>> topological_order() const;

 private:
  std::vector<logical_node> nodes_;
};

/// Checks that the graph can run: at least one source and one sink, every input edge points to an
/// existing node, no stream is left dangling, no cycles except through feedback edges, every
/// feedback placeholder closed, parallelism >= 1. Returns the first
/// problem as a message naming the operator, or nullopt when the graph is valid.
std::optional<std::string> validate(const logical_graph& g);

}  // namespace tidemark
