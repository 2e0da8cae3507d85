#include "tidemark/core/plan.hpp"

#include <algorithm>
#include <sstream>

namespace tidemark {

std::size_t physical_plan::channel_count() const {
  std::size_t n = 0;
  for (const auto& e : edges)
    n += pointwise(e, *this) ? stages[e.to].parallelism
                             : std::size_t{stages[e.from].parallelism} * stages[e.to].parallelism;
  return n;
}

namespace {

/// Edges that read output `port` of `id` (a node reading it twice counts twice).
std::size_t readers(const logical_graph& g, node_id id, std::uint32_t port) {
  std::size_t n = 0;
  for (const auto& c : g.nodes())
    for (const auto& e : c.inputs) n += e.from == id && e.port == port;
  return n;
}

}  // namespace

physical_plan compile(const logical_graph& g, const plan_options& opts) {
  physical_plan p;
  auto order = g.topological_order();
  if (!order) return p;
  // where each node runs: its stage and its position in that stage
  std::vector<std::uint32_t> stage_of(g.nodes().size());
  std::vector<std::uint32_t> pos_of(g.nodes().size());
  for (auto id : *order) {
    const auto& n = g.node(id);
    if (opts.fuse && n.inputs.size() == 1) {
      const auto& in = n.inputs[0];
      const auto& up = g.node(in.from);
      if (!in.feedback && in.part == partitioning::forward && up.parallelism == n.parallelism &&
          up.kind != node_kind::sink && readers(g, in.from, in.port) == 1) {
        auto& s = p.stages[stage_of[in.from]];
        stage_of[id] = stage_of[in.from];
        pos_of[id] = static_cast<std::uint32_t>(s.ops.size());
        s.ops.push_back({id, pos_of[in.from], in.port});
        continue;
      }
    }
    stage_of[id] = static_cast<std::uint32_t>(p.stages.size());
    pos_of[id] = 0;
    p.stages.push_back({{{id, 0, 0}}, n.parallelism});
    for (std::uint32_t i = 0; i < n.inputs.size(); ++i) {
      const auto& in = n.inputs[i];
      if (!in.feedback)
        p.edges.push_back({stage_of[in.from], pos_of[in.from], in.port, stage_of[id], i, in.part});
    }
  }
  // a feedback edge's sender comes later in the order: its stage is known only now
  for (auto id : *order) {
    const auto& n = g.node(id);
    for (std::uint32_t i = 0; i < n.inputs.size(); ++i) {
      const auto& in = n.inputs[i];
      if (in.feedback)
        p.edges.push_back(
            {stage_of[in.from], pos_of[in.from], in.port, stage_of[id], i, in.part, true});
    }
  }
  return p;
}

std::vector<std::int32_t> loops_of(const physical_plan& p) {
  const auto n = p.stages.size();
  std::vector<std::int32_t> loop(n, -1);
  if (std::none_of(p.edges.begin(), p.edges.end(), [](const auto& e) { return e.feedback; }))
    return loop;
  // reach[a][b]: a path leads from stage a to stage b (plans are small: a closure by search)
  std::vector<std::vector<bool>> reach(n, std::vector<bool>(n, false));
  for (std::size_t a = 0; a < n; ++a) {
    std::vector<std::size_t> todo{a};
    while (!todo.empty()) {
      auto s = todo.back();
      todo.pop_back();
      for (const auto& e : p.edges)
        if (e.from == s && !reach[a][e.to]) {
          reach[a][e.to] = true;
          todo.push_back(e.to);
        }
    }
  }
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = 0; b <= a && loop[a] < 0; ++b)
      if (reach[a][b] && reach[b][a]) loop[a] = static_cast<std::int32_t>(b);
  return loop;
}

namespace {

/// "async_map", or "async_map, delayed, concurrency 16" for a delayed operator.
std::string describe_op(const logical_node& n) {
  if (!n.delayed) return n.op;
  return n.op + ", delayed, concurrency " + std::to_string(n.concurrency);
}

/// "w" for the main output of w, "w:late" for its side output named "late".
std::string describe_output(const logical_node& n, std::uint32_t port) {
  if (port == 0) return n.name;
  return n.name + ":" + (port < n.outputs.size() ? n.outputs[port].name : std::to_string(port));
}

}  // namespace

std::string to_text(const logical_graph& g, const physical_plan& p) {
  std::ostringstream out;
  for (std::size_t s = 0; s < p.stages.size(); ++s) {
    const auto& st = p.stages[s];
    out << "stage " << s << " x" << st.parallelism << ": ";
    for (std::size_t i = 0; i < st.ops.size(); ++i) {
      const auto& op = st.ops[i];
      const auto& n = g.node(op.node);
      // a chain reads as a => b => c; a branch names what it reads
      if (i > 0 && (op.from + 1 != i || op.port != 0))
        out << ", " << describe_output(g.node(st.ops[op.from].node), op.port);
      out << (i ? " => " : "") << n.name << " (" << describe_op(n) << ")";
    }
    for (const auto& e : p.edges) {
      if (e.to != s) continue;
      out << "  <- stage " << e.from;
      const auto& from = p.stages[e.from];
      if (e.from_op + 1 != from.ops.size() || e.port != 0)
        out << " " << describe_output(g.node(from.ops[e.from_op].node), e.port);
      out << " [" << to_string(e.part) << (e.feedback ? ", feedback" : "") << "]";
    }
    out << '\n';
  }
  out << "(=> fused into one actor per instance; <- channels between stages)\n";
  return out.str();
}

std::string to_dot(const logical_graph& g, const physical_plan& p) {
  std::ostringstream out;
  out << "digraph plan {\n  rankdir=LR;\n  node [shape=box];\n";
  auto port_label = [&](node_id id, std::uint32_t port) {
    const auto& n = g.node(id);
    return port < n.outputs.size() ? n.outputs[port].name : std::to_string(port);
  };
  for (std::size_t s = 0; s < p.stages.size(); ++s) {
    const auto& st = p.stages[s];
    out << "  subgraph cluster_" << s << " {\n    label=\"stage " << s << " x" << st.parallelism
        << "\";\n";
    for (const auto& op : st.ops)
      out << "    n" << op.node << " [label=\"" << g.node(op.node).name << "\\n"
          << describe_op(g.node(op.node)) << "\"];\n";
    for (std::size_t i = 1; i < st.ops.size(); ++i) {
      auto from = st.ops[st.ops[i].from].node;
      out << "    n" << from << " -> n" << st.ops[i].node << " [style=bold";
      if (st.ops[i].port != 0) out << ", label=\"" << port_label(from, st.ops[i].port) << "\"";
      out << "];\n";
    }
    out << "  }\n";
  }
  for (const auto& e : p.edges) {
    auto from = p.stages[e.from].ops[e.from_op].node;
    out << "  n" << from << " -> n" << p.stages[e.to].ops.front().node << " [label=\""
        << to_string(e.part);
    if (e.port != 0) out << ", " << port_label(from, e.port);
    out << "\"];\n";
  }
  out << "}\n";
  return out.str();
}

}  // namespace tidemark
