#include "tidemark/runtime.hpp"

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/exit_reason.hpp>
#include <caf/scoped_actor.hpp>

#include "messages.hpp"
#include "stage_actor.hpp"

namespace tidemark {
namespace {

/// Where each channel of the plan starts and ends: slots on both sides, per stage instance.
struct wiring {
  struct endpoint {
    std::uint32_t stage;
    std::uint32_t instance;
  };
  // per stage, per instance: input ports of its slots
  std::vector<std::vector<std::vector<std::uint32_t>>> input_ports;
  // per stage, per instance: output channels (target stage/instance, receiver slot) and edges
  struct out_channel {
    endpoint to;
    std::uint32_t slot;
  };
  std::vector<std::vector<std::vector<out_channel>>> outputs;
  std::vector<std::vector<std::vector<detail::output_edge>>> edges;
};

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
      detail::output_edge edge;
      edge.part = e.part;
      for (std::uint32_t b = 0; b < receivers; ++b) {
        if (one_to_one && a != b) continue;
        auto& ports = w.input_ports[e.to][b];
        auto slot = static_cast<std::uint32_t>(ports.size());
        ports.push_back(e.input);
        edge.slots.push_back(static_cast<std::uint32_t>(w.outputs[e.from][a].size()));
        w.outputs[e.from][a].push_back({{e.to, b}, slot});
      }
      w.edges[e.from][a].push_back(std::move(edge));
    }
  }
  return w;
}

/// Batches are allocated on one thread and freed on another. With glibc's default dynamic
/// thresholds, large batch buffers went back to the kernel and returned with page faults on
/// every allocation (6x the CPU per event at batch 4096). Memory is bounded by credit anyway, so
/// keep freed buffers in the heap.
void keep_freed_batches_in_heap() {
  static const bool once = [] {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    return true;
  }();
  (void)once;
}

void configure(caf::actor_system_config& cfg, const run_options& opts) {
  auto threads = opts.threads ? opts.threads : std::max(1u, std::thread::hardware_concurrency());
  cfg.set("scheduler.max-threads", threads);
  // Work sharing spreads a pipeline's actors over the cores (work stealing keeps a chain on one
  // worker; see docs/architecture.md).
  cfg.set("scheduler.policy", caf::atom("sharing"));
}

}  // namespace

job_result run(const job& j, const run_options& opts) {
  if (auto problem = validate(j.graph())) throw job_error("job '" + j.name() + "': " + *problem);
  if (opts.batch_size == 0 || opts.credit == 0)
    throw job_error("job '" + j.name() + "': batch_size and credit must be at least 1");
  for (const auto& n : j.graph().nodes())
    for (const auto& e : n.inputs)
      if (e.feedback)
        throw job_error("job '" + j.name() + "': the loop closed at '" + n.name +
                        "' cannot run yet: the embedded runtime plans loops (tidemark plan) but "
                        "does not execute feedback edges");
  // gates of the synchronizers are operators of the rewritten graph; it outlives the actors
  const auto synced = synchronize(j.graph(), opts.synchronizers);
  const auto& g = synced.graph;
  auto plan = compile(g, {opts.fuse});
  auto w = wire(plan);
  // Tiered window stores keep it alive as long as they run.
  std::shared_ptr<block_storage> storage = opts.state_storage;
  if (!storage) storage = std::make_shared<persistence::storage_service>(opts.storage);

  if (opts.tune_malloc) keep_freed_batches_in_heap();
  caf::actor_system_config cfg;
  configure(cfg, opts);
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};

  job_result result;
  result.job = j.name();
  result.plan = to_text(synced, plan);
  batch_gauge::reset_peak();
  auto started = std::chrono::steady_clock::now();

  // Spawn receivers before senders: stages are in topological order, so walk them backwards.
  std::vector<std::vector<caf::actor>> actors(plan.stages.size());
  std::vector<caf::actor> sources;
  std::size_t total = 0;
  try {
    for (auto s = plan.stages.size(); s-- > 0;) {
      const auto& st = plan.stages[s];
      actors[s].resize(st.parallelism);
      for (std::uint32_t i = 0; i < st.parallelism; ++i) {
        detail::stage_setup setup;
        setup.stage = static_cast<std::uint32_t>(s);
        setup.instance = i;
        setup.parallelism = st.parallelism;
        setup.opts = opts;
        setup.driver = caf::actor_cast<caf::actor>(self);
        for (auto id : st.chain) {
          const auto& n = g.node(id);
          setup.nodes.push_back(&n);
          instance_info info{n.name, i, st.parallelism, opts.batch_size, storage};
          if (n.kind == node_kind::source) {
            setup.source = n.make_source(info);
          } else {
            setup.ops.push_back(n.make_operator(info));
            setup.ops.back()->on_error = n.on_error;
          }
        }
        setup.input_ports = w.input_ports[s][i];
        for (auto& o : w.outputs[s][i])
          setup.outputs.push_back({actors[o.to.stage][o.to.instance], o.slot});
        setup.edges = w.edges[s][i];
        bool is_source = setup.source != nullptr;
        actors[s][i] = detail::spawn_stage(sys, std::move(setup));
        self->monitor(actors[s][i]);
        if (is_source || w.input_ports[s][i].empty()) sources.push_back(actors[s][i]);
        ++total;
      }
    }
  } catch (...) {
    for (auto& stage : actors)
      for (auto& a : stage)
        if (a) self->send_exit(a, caf::exit_reason::user_shutdown);
    throw;
  }

  for (auto& a : sources) self->send(a, detail::start_atom::value);
  std::string failure;
  std::size_t done = 0;
  while (done < total && failure.empty()) {
    self->receive(
        [&](detail::done_msg& m) {
          result.instances.push_back(std::move(m.metrics));
          ++done;
        },
        [&](detail::failed_msg& m) { failure = std::move(m.what); },
        [&](caf::down_msg& m) {
          if (m.reason && m.reason != caf::exit_reason::user_shutdown)
            failure = "an operator actor stopped unexpectedly: " + sys.render(m.reason);
        });
  }
  if (!failure.empty()) {
    for (auto& stage : actors)
      for (auto& a : stage) self->send_exit(a, caf::exit_reason::user_shutdown);
    throw job_error("job '" + j.name() + "' failed: " + failure);
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  result.peak_live_batches = batch_gauge::peak();
  std::sort(result.instances.begin(), result.instances.end(), [](auto& a, auto& b) {
    return std::tie(a.stage, a.instance) < std::tie(b.stage, b.instance);
  });
  if (opts.print_summary) std::cout << result.summary();
  if (!opts.report_path.empty()) {
    std::ofstream out{opts.report_path};
    if (!out) throw job_error("cannot write the metrics report to '" + opts.report_path + "'");
    out << result.to_json() << '\n';
  }
  return result;
}

}  // namespace tidemark
