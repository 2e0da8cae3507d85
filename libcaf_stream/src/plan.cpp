#include "tidemark/plan.hpp"

#include <sstream>

namespace tidemark {

std::size_t physical_plan::channel_count() const {
  std::size_t n = 0;
  for (const auto& e : edges)
    n += pointwise(e, *this) ? stages[e.to].parallelism
                             : std::size_t{stages[e.from].parallelism} * stages[e.to].parallelism;
  return n;
}

physical_plan compile(const logical_graph& g, const plan_options& opts) {
  physical_plan p;
  auto order = g.topological_order();
  if (!order) return p;
  std::vector<std::uint32_t> stage_of(g.nodes().size());
  for (auto id : *order) {
    const auto& n = g.node(id);
    bool fused = false;
    if (opts.fuse && n.inputs.size() == 1) {
      const auto& in = n.inputs[0];
      const auto& up = g.node(in.from);
      auto& s = p.stages[stage_of[in.from]];
      fused = in.part == partitioning::forward && up.parallelism == n.parallelism &&
              up.kind != node_kind::sink && s.chain.back() == in.from && g.consumers(in.from).size() == 1;
      if (fused) {
        s.chain.push_back(id);
        stage_of[id] = stage_of[in.from];
      }
    }
    if (fused) continue;
    stage_of[id] = static_cast<std::uint32_t>(p.stages.size());
    p.stages.push_back({{id}, n.parallelism});
    for (std::uint32_t i = 0; i < n.inputs.size(); ++i)
      p.edges.push_back({stage_of[n.inputs[i].from], stage_of[id], i, n.inputs[i].part});
  }
  return p;
}

namespace {

/// "async_map", or "async_map, delayed, concurrency 16" for a delayed operator.
std::string describe_op(const logical_node& n) {
  if (!n.delayed) return n.op;
  return n.op + ", delayed, concurrency " + std::to_string(n.concurrency);
}

}  // namespace

std::string to_text(const logical_graph& g, const physical_plan& p) {
  std::ostringstream out;
  for (std::size_t s = 0; s < p.stages.size(); ++s) {
    const auto& st = p.stages[s];
    out << "stage " << s << " x" << st.parallelism << ": ";
    for (std::size_t i = 0; i < st.chain.size(); ++i) {
      const auto& n = g.node(st.chain[i]);
      out << (i ? " => " : "") << n.name << " (" << describe_op(n) << ")";
    }
    for (const auto& e : p.edges)
      if (e.to == s) out << "  <- stage " << e.from << " [" << to_string(e.part) << "]";
    out << '\n';
  }
  out << "(=> fused into one actor per instance; <- channels between stages)\n";
  return out.str();
}

std::string to_dot(const logical_graph& g, const physical_plan& p) {
  std::ostringstream out;
  out << "digraph plan {\n  rankdir=LR;\n  node [shape=box];\n";
  for (std::size_t s = 0; s < p.stages.size(); ++s) {
    const auto& st = p.stages[s];
    out << "  subgraph cluster_" << s << " {\n    label=\"stage " << s << " x" << st.parallelism
        << "\";\n";
    for (auto id : st.chain)
      out << "    n" << id << " [label=\"" << g.node(id).name << "\\n" << describe_op(g.node(id))
          << "\"];\n";
    for (std::size_t i = 1; i < st.chain.size(); ++i)
      out << "    n" << st.chain[i - 1] << " -> n" << st.chain[i] << " [style=bold];\n";
    out << "  }\n";
  }
  for (const auto& e : p.edges) {
    auto to = p.stages[e.to].chain.front();
    out << "  n" << p.stages[e.from].chain.back() << " -> n" << to << " [label=\""
        << to_string(e.part) << "\"];\n";
  }
  out << "}\n";
  return out.str();
}

}  // namespace tidemark
