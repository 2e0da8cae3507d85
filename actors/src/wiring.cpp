// Channel wiring of a physical plan and stage setup (see wiring.hpp).
#include "wiring.hpp"

namespace tidemark::detail {

wiring wire(const physical_plan& p, const std::vector<std::uint32_t>& replicas) {
  wiring w;
  const auto stages = p.stages.size();
  w.input_ports.resize(stages);
  w.logical_input.resize(stages);
  w.input_roles.resize(stages);
  w.outputs.resize(stages);
  w.edges.resize(stages);
  w.output_copies.resize(stages);
  w.copies.resize(stages);
  std::size_t flat = 0;
  for (std::size_t s = 0; s < stages; ++s) {
    const auto n = p.stages[s].parallelism;
    w.input_ports[s].resize(n);
    w.logical_input[s].resize(n);
    w.input_roles[s].resize(n);
    w.outputs[s].resize(n);
    w.edges[s].resize(n);
    w.output_copies[s].resize(n);
    for (std::uint32_t i = 0; i < n; ++i, ++flat) {
      w.copies[s].push_back(1 + (flat < replicas.size() ? replicas[flat] : 0u));
    }
  }
  const auto loops = loops_of(p);
  for (const auto& e : p.edges) {
    const bool in_loop = loops[e.from] >= 0 && loops[e.from] == loops[e.to];
    const auto role = e.feedback ? loop_role::feedback
                      : in_loop  ? loop_role::inside
                                 : loop_role::outside;
    const auto senders = p.stages[e.from].parallelism;
    const auto receivers = p.stages[e.to].parallelism;
    const bool one_to_one = pointwise(e, p);
    for (std::uint32_t a = 0; a < senders; ++a) {
      output_edge edge;
      edge.part = e.part;
      edge.from_op = e.from_op;
      edge.port = e.port;
      edge.loop = in_loop;
      auto& outs = w.outputs[e.from][a];
      auto& copies_of = w.output_copies[e.from][a];
      for (std::uint32_t b = 0; b < receivers; ++b) {
        if (one_to_one && a != b) continue;
        // one slot per copy of the sender, all feeding one logical input of the receiver
        auto& ports = w.input_ports[e.to][b];
        auto& logical = w.logical_input[e.to][b];
        const auto slot = static_cast<std::uint32_t>(ports.size());
        const auto input = logical.empty() ? 0u : logical.back() + 1;
        for (std::uint32_t c = 0; c < w.copies[e.from][a]; ++c) {
          ports.push_back(e.input);
          logical.push_back(input);
          w.input_roles[e.to][b].push_back(role);
        }
        // one output slot per copy of the receiver: the primary's takes part in partitioning,
        // the replicas' get the same stream
        const auto primary = static_cast<std::uint32_t>(outs.size());
        edge.slots.push_back(primary);
        for (std::uint32_t c = 0; c < w.copies[e.to][b]; ++c)
          outs.push_back({{e.to, b, c}, slot, e.from_op, e.port});
        copies_of.resize(outs.size());
        for (std::uint32_t c = 1; c < w.copies[e.to][b]; ++c)
          copies_of[primary].push_back(primary + c);
      }
      w.edges[e.from][a].push_back(std::move(edge));
    }
  }
  return w;
}

synchronized_graph executable_graph(const job& j, const run_options& opts) {
  if (auto problem = validate(j.graph())) throw job_error("job '" + j.name() + "': " + *problem);
  if (opts.batch_size == 0) throw job_error("job '" + j.name() + "': batch_size must be at least 1");
  for (const auto& n : j.graph().nodes())
    for (const auto& e : n.inputs)
      if (e.feedback && opts.deterministic_merge)
        throw job_error("job '" + j.name() + "': the loop closed at '" + n.name +
                        "' cannot run with the deterministic merge (its order would wait for the "
                        "loop's own watermark)");
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
  if (!c.input_ports.empty()) {
    const auto& head = *c.nodes.front();
    for (auto port : c.input_ports) {
      const auto& in = head.inputs.at(port);
      c.input_from.push_back(&g.node(in.from).outputs.at(in.port));
    }
  }
  c.logical_input = w.logical_input[s][i];
  c.input_roles = w.input_roles[s][i];
  // the copies of a replicated instance must see their inputs in one order to emit one sequence
  c.deterministic_merge = opts.deterministic_merge || w.copies[s][i] > 1;
  c.outputs = static_cast<std::uint32_t>(w.outputs[s][i].size());
  c.edges = w.edges[s][i];
  c.output_copies = w.output_copies[s][i];
  return setup;
}

}  // namespace tidemark::detail
