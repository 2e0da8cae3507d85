// Channel wiring of a physical plan and stage setup (see wiring.hpp).
#include "wiring.hpp"

namespace tidemark::detail {

wiring wire(const physical_plan& p) {
  wiring w;
  const auto stages = p.stages.size();
  w.input_ports.resize(stages);
  w.outputs.resize(stages);
  w.edges.resize(stages);
  for (std::size_t s = 0; s < stages; ++s) {
    w.input_ports[s].resize(p.stages[s].parallelism);
    w.outputs[s].resize(p.stages[s].parallelism);
    w.edges[s].resize(p.stages[s].parallelism);
  }
  for (const auto& e : p.edges) {
    const auto senders = p.stages[e.from].parallelism;
    const auto receivers = p.stages[e.to].parallelism;
    const bool one_to_one = pointwise(e, p);
    for (std::uint32_t a = 0; a < senders; ++a) {
      output_edge edge;
      edge.part = e.part;
      edge.from_op = e.from_op;
      edge.port = e.port;
      for (std::uint32_t b = 0; b < receivers; ++b) {
        if (one_to_one && a != b) continue;
        auto& ports = w.input_ports[e.to][b];
        auto slot = static_cast<std::uint32_t>(ports.size());
        ports.push_back(e.input);
        edge.slots.push_back(static_cast<std::uint32_t>(w.outputs[e.from][a].size()));
        w.outputs[e.from][a].push_back({{e.to, b}, slot, e.from_op, e.port});
      }
      w.edges[e.from][a].push_back(std::move(edge));
    }
  }
  return w;
}

synchronized_graph executable_graph(const job& j, const run_options& opts) {
  if (auto problem = validate(j.graph())) throw job_error("job '" + j.name() + "': " + *problem);
  if (opts.batch_size == 0 || opts.credit == 0)
    throw job_error("job '" + j.name() + "': batch_size and credit must be at least 1");
  for (const auto& n : j.graph().nodes())
    for (const auto& e : n.inputs)
      if (e.feedback)
        throw job_error("job '" + j.name() + "': the loop closed at '" + n.name +
                        "' cannot run yet: the runtime plans loops (tidemark plan) but does not "
                        "execute feedback edges");
  return synchronize(j.graph(), opts.synchronizers);
}

stage_setup make_stage_setup(const logical_graph& g, const physical_plan& p, const wiring& w,
                             std::uint32_t s, std::uint32_t i, const run_options& opts) {
  const auto& st = p.stages[s];
  stage_setup setup;
  auto& c = setup.core;
  c.stage = s;
  c.instance = i;
  c.parallelism = st.parallelism;
  c.opts = opts;
  for (const auto& op : st.ops) {
    const auto& n = g.node(op.node);
    c.nodes.push_back(&n);
    c.tree.push_back(op);
    instance_info info{n.name, i, st.parallelism, opts.batch_size, opts.state_storage};
    if (n.kind == node_kind::source) {
      c.source = n.make_source(info);
    } else {
      c.ops.push_back(n.make_operator(info));
      c.ops.back()->on_error = n.on_error;
    }
  }
  c.input_ports = w.input_ports[s][i];
  c.deterministic_merge = opts.deterministic_merge;
  c.outputs = static_cast<std::uint32_t>(w.outputs[s][i].size());
  c.edges = w.edges[s][i];
  return setup;
}

}  // namespace tidemark::detail
