#include "tidemark/core/graph.hpp"

#include <algorithm>
#include <sstream>

namespace tidemark {

const char* to_string(partitioning p) noexcept {
  switch (p) {
    case partitioning::forward: return "forward";
    case partitioning::rebalance: return "rebalance";
    case partitioning::key_hash: return "key_hash";
    case partitioning::broadcast: return "broadcast";
  }
  return "?";
}

node_id logical_graph::add(logical_node n) {
  n.id = static_cast<node_id>(nodes_.size());
  nodes_.push_back(std::move(n));
  return nodes_.back().id;
}

std::vector<node_id> logical_graph::consumers(node_id id) const {
  std::vector<node_id> result;
  for (const auto& n : nodes_)
    for (const auto& e : n.inputs)
      if (e.from == id) {
        result.push_back(n.id);
        break;
      }
  return result;
}

namespace {

// Kahn's algorithm; on a cycle the result lacks the nodes on or behind it.
std::vector<node_id> kahn_order(const logical_graph& g) {
  std::vector<std::size_t> missing(g.nodes().size());
  for (const auto& n : g.nodes())
    for (const auto& e : n.inputs) missing[n.id] += e.feedback ? 0 : 1;
  std::vector<node_id> order;
  for (const auto& n : g.nodes())
    if (missing[n.id] == 0) order.push_back(n.id);
  for (std::size_t i = 0; i < order.size(); ++i)
    for (const auto& n : g.nodes())
      for (const auto& e : n.inputs)
        if (!e.feedback && e.from == order[i] && --missing[n.id] == 0) order.push_back(n.id);
  return order;
}

}  // namespace

std::optional<std::vector<node_id>> logical_graph::topological_order() const {
  auto order = kahn_order(*this);
  if (order.size() != nodes_.size()) return std::nullopt;
  return order;
}

namespace {

// Names the operators of one cycle: walks input edges backwards from a node that the topological
// sort left over (each such node has a left-over input) until a node repeats.
std::string describe_cycle(const logical_graph& g) {
  std::vector<bool> sorted(g.nodes().size());
  for (auto id : kahn_order(g)) sorted[id] = true;
  node_id at = 0;
  while (sorted[at]) ++at;
  std::vector<node_id> path;
  while (std::find(path.begin(), path.end(), at) == path.end()) {
    path.push_back(at);
    for (const auto& e : g.node(at).inputs)
      if (!e.feedback && !sorted[e.from]) {
        at = e.from;
        break;
      }
  }
  // Data flows against the walk: from `at` through the path back to `at`.
  std::ostringstream out;
  out << "'" << g.node(at).name << "'";
  for (auto it = path.rbegin(); *it != at; ++it) out << " -> '" << g.node(*it).name << "'";
  out << " -> '" << g.node(at).name << "'";
  return out.str();
}

}  // namespace

std::optional<std::string> validate(const logical_graph& g) {
  if (g.nodes().empty()) return "the job has no operators: add a source and a sink";
  bool has_source = false;
  bool has_sink = false;
  for (const auto& n : g.nodes()) {
    if (n.parallelism < 1)
      return "operator '" + n.name + "' has parallelism 0: use 1 or more";
    for (const auto& e : n.inputs) {
      if (e.from >= g.nodes().size())
        return "operator '" + n.name + "' reads from unknown operator id " +
               std::to_string(e.from);
      const auto& from = g.node(e.from);
      if (e.port >= from.outputs.size())
        return "operator '" + n.name + "' reads output port " + std::to_string(e.port) +
               " of '" + from.name + "', which has " + std::to_string(from.outputs.size()) +
               " port(s)";
    }
    has_source |= n.kind == node_kind::source;
    has_sink |= n.kind == node_kind::sink;
    if (n.kind == node_kind::source && !n.inputs.empty())
      return "source '" + n.name + "' has inputs: sources cannot read from other operators";
    if (n.kind != node_kind::source && n.inputs.empty())
      return n.op == "feedback" ? "feedback '" + n.name +
                                      "' is never closed: pass the loop's result to close()"
                                : "operator '" + n.name + "' has no input";
    if (n.delayed && n.concurrency < 1)
      return "operator '" + n.name + "' has concurrency 0: use 1 or more";
  }
  if (!has_source) return "the job has no source: start it with a source such as from_container";
  if (!has_sink) return "the job has no sink: end each stream with a sink such as collect or count";
  auto order = g.topological_order();
  if (!order)
    return "the job has a cycle: " + describe_cycle(g) +
           "; close loops with job::iterate (a feedback edge)";
  for (const auto& n : g.nodes())
    if (n.kind != node_kind::sink && g.consumers(n.id).empty())
      return "the stream of operator '" + n.name +
             "' is never consumed: end it with a sink or remove it";
  return std::nullopt;
}

}  // namespace tidemark
