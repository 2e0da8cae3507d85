// Spawning and connecting the stage actors of a plan (see deploy.hpp).
#include "deploy.hpp"

#include <algorithm>

#include <caf/exit_reason.hpp>
#include <caf/send.hpp>

#include "messages.hpp"
#include "stage_actor.hpp"

namespace tidemark::detail {

placement placement::all_local(const physical_plan& p) {
  std::size_t n = 0;
  for (const auto& st : p.stages) n += st.parallelism;
  return {std::vector<std::uint32_t>(n, 0), 0};
}

std::size_t placement::local_instances() const {
  return static_cast<std::size_t>(std::count(node_of.begin(), node_of.end(), self));
}

deployment_actors::deployment_actors(caf::actor_system& sys, const logical_graph& g,
                                     const physical_plan& p, const wiring& w,
                                     const placement& where, const run_options& opts,
                                     caf::actor driver, const remote_channels* remote,
                                     restore_point* from) {
  // flat index of each stage's first instance, and each instance's first channel
  std::vector<std::uint32_t> offset(p.stages.size());
  std::vector<std::vector<std::uint32_t>> first_channel(p.stages.size());
  std::uint32_t instances = 0;
  std::uint32_t channels = 0;
  for (std::uint32_t s = 0; s < p.stages.size(); ++s) {
    offset[s] = instances;
    instances += p.stages[s].parallelism;
    for (std::uint32_t i = 0; i < p.stages[s].parallelism; ++i) {
      first_channel[s].push_back(channels);
      channels += static_cast<std::uint32_t>(w.outputs[s][i].size());
    }
  }
  auto node_of = [&](wiring::endpoint e) { return where.node_of.at(offset[e.stage] + e.instance); };
  auto local = [&](wiring::endpoint e) { return node_of(e) == where.self; };
  senders_.resize(channels);
  inbound_.resize(channels);
  std::vector<std::vector<caf::actor>> actor_of(p.stages.size());
  try {
    // stages come in topological order: walking them backwards spawns receivers first
    for (auto s = static_cast<std::uint32_t>(p.stages.size()); s-- > 0;) {
      actor_of[s].resize(p.stages[s].parallelism);
      for (std::uint32_t i = 0; i < p.stages[s].parallelism; ++i) {
        if (!local({s, i})) continue;
        auto setup = make_stage_setup(g, p, w, s, i, opts);
        setup.driver = driver;
        if (from && from->checkpoint) {
          auto piece = from->pieces.find({s, i});
          if (piece == from->pieces.end())
            throw job_error("checkpoint " + std::to_string(from->checkpoint) + " has no state for stage " +
                            std::to_string(s) + " instance " + std::to_string(i));
          setup.core.restore_checkpoint = from->checkpoint;
          setup.core.restore_state = std::move(piece->second);
        }
        const auto& outs = w.outputs[s][i];
        for (std::uint32_t k = 0; k < outs.size(); ++k) {
          if (local(outs[k].to)) {
            setup.outputs.push_back({actor_of[outs[k].to.stage][outs[k].to.instance], outs[k].slot});
            continue;
          }
          const auto& producer = g.node(p.stages[s].ops[outs[k].from_op].node);
          auto proxy = remote->outbound(first_channel[s][i] + k, node_of(outs[k].to),
                                        producer.outputs.at(outs[k].port).codec);
          proxies_.push_back(proxy);
          setup.outputs.push_back({proxy, outs[k].slot});
        }
        const bool starts = setup.core.source != nullptr || setup.core.input_ports.empty();
        const bool source = setup.core.source != nullptr;
        if (source && !setup.core.source->replayable())
          unreplayable_.push_back(setup.core.nodes.front()->name);
        auto a = spawn_stage(sys, std::move(setup));
        actor_of[s][i] = a;
        stages_.push_back(a);
        if (starts) starters_.push_back(a);
        if (source) sources_.push_back(a);
        for (std::uint32_t k = 0; k < outs.size(); ++k) senders_[first_channel[s][i] + k] = a;
      }
    }
    // channels from other nodes into this one
    for (std::uint32_t s = 0; s < p.stages.size(); ++s)
      for (std::uint32_t i = 0; i < p.stages[s].parallelism; ++i) {
        if (local({s, i})) continue;
        const auto& outs = w.outputs[s][i];
        for (std::uint32_t k = 0; k < outs.size(); ++k) {
          if (!local(outs[k].to)) continue;
          auto c = first_channel[s][i] + k;
          inbound_[c] = remote->inbound(c, node_of({s, i}),
                                        actor_of[outs[k].to.stage][outs[k].to.instance]);
          proxies_.push_back(inbound_[c]);
        }
      }
  } catch (...) {
    stop();
    throw;
  }
}

void deployment_actors::start() {
  for (auto& a : starters_) caf::anon_send(a, start_atom::value);
}

void deployment_actors::stop() {
  for (auto* group : {&stages_, &proxies_})
    for (auto& a : *group)
      if (a) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  // dropping the handles lets the actor system shut down
  for (auto* group : {&stages_, &proxies_, &starters_, &sources_, &senders_, &inbound_})
    group->clear();
}

}  // namespace tidemark::detail
