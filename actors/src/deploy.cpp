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
  auto n = static_cast<std::size_t>(std::count(node_of.begin(), node_of.end(), self));
  for (const auto& r : replicas)
    n += static_cast<std::size_t>(std::count(r.begin(), r.end(), self));
  return n;
}

std::vector<std::uint32_t> placement::replica_counts() const {
  std::vector<std::uint32_t> counts;
  for (const auto& r : replicas) counts.push_back(static_cast<std::uint32_t>(r.size()));
  return counts;
}

deployment_actors::deployment_actors(caf::actor_system& sys, const logical_graph& g,
                                     const physical_plan& p, const wiring& w,
                                     const placement& where, const run_options& opts,
                                     caf::actor driver, const remote_channels* remote,
                                     restore_point* from) {
  // flat index of each stage's first instance, and each copy's first channel
  std::vector<std::uint32_t> offset(p.stages.size());
  std::vector<std::vector<std::vector<std::uint32_t>>> first_channel(p.stages.size());
  std::uint32_t instances = 0;
  std::uint32_t channels = 0;
  for (std::uint32_t s = 0; s < p.stages.size(); ++s) {
    offset[s] = instances;
    instances += p.stages[s].parallelism;
    first_channel[s].resize(p.stages[s].parallelism);
    for (std::uint32_t i = 0; i < p.stages[s].parallelism; ++i)
      for (std::uint32_t c = 0; c < w.copies[s][i]; ++c) {
        first_channel[s][i].push_back(channels);
        channels += static_cast<std::uint32_t>(w.outputs[s][i].size());
      }
  }
  auto node_of = [&](wiring::endpoint e) {
    return where.node(offset[e.stage] + e.instance, e.copy);
  };
  auto local = [&](wiring::endpoint e) { return node_of(e) == where.self; };
  senders_.resize(channels);
  inbound_.resize(channels);
  // per stage, instance and copy: the local actor
  std::vector<std::vector<std::vector<caf::actor>>> actor_of(p.stages.size());
  std::vector<std::vector<std::vector<std::size_t>>> index_of(p.stages.size());  // in stages_
  try {
    // stages come in topological order: walking them backwards spawns receivers first
    for (auto s = static_cast<std::uint32_t>(p.stages.size()); s-- > 0;) {
      actor_of[s].resize(p.stages[s].parallelism);
      index_of[s].resize(p.stages[s].parallelism);
      for (std::uint32_t i = 0; i < p.stages[s].parallelism; ++i) {
        actor_of[s][i].resize(w.copies[s][i]);
        index_of[s][i].resize(w.copies[s][i]);
        for (std::uint32_t c = 0; c < w.copies[s][i]; ++c) {
          if (!local({s, i, c})) continue;
          auto setup = make_stage_setup(g, p, w, s, i, opts);
          setup.driver = driver;
          if (from && from->checkpoint) {
            // every copy starts from the instance's one piece
            auto piece = from->pieces.find({s, i});
            if (piece == from->pieces.end())
              throw job_error("checkpoint " + std::to_string(from->checkpoint) +
                              " has no state for stage " + std::to_string(s) + " instance " +
                              std::to_string(i));
            setup.core.restore_checkpoint = from->checkpoint;
            setup.core.restore_state = piece->second;
          }
          neighbours around;
          around.self = {offset[s] + i, c, where.self};
          const auto& outs = w.outputs[s][i];
          for (std::uint32_t k = 0; k < outs.size(); ++k) {
            const auto to = outs[k].to;
            around.outs.push_back({offset[to.stage] + to.instance, to.copy, node_of(to)});
            const auto slot = outs[k].slot + c;  // this copy's slot at the receiver
            if (local(outs[k].to)) {
              setup.outputs.push_back({actor_of[to.stage][to.instance][to.copy], slot});
              continue;
            }
            const auto& producer = g.node(p.stages[s].ops[outs[k].from_op].node);
            auto proxy = remote->outbound(first_channel[s][i][c] + k, node_of(outs[k].to),
                                          producer.outputs.at(outs[k].port).codec);
            proxies_.push_back(proxy);
            setup.outputs.push_back({proxy, slot});
          }
          around.ins.resize(setup.core.input_ports.size());
          const bool starts = setup.core.source != nullptr || setup.core.input_ports.empty();
          const bool source = setup.core.source != nullptr;
          if (source && !setup.core.source->replayable())
            unreplayable_.push_back(setup.core.nodes.front()->name);
          auto a = spawn_stage(sys, std::move(setup));
          actor_of[s][i][c] = a;
          index_of[s][i][c] = stages_.size();
          stages_.push_back(a);
          neighbours_.push_back(std::move(around));
          if (starts) starters_.push_back(a);
          if (source) sources_.push_back(a);
          for (std::uint32_t k = 0; k < outs.size(); ++k) senders_[first_channel[s][i][c] + k] = a;
        }
      }
    }
    // channels into this node: the senders of the local stages' input slots, and inbound proxies
    // for those on other nodes
    for (std::uint32_t s = 0; s < p.stages.size(); ++s)
      for (std::uint32_t i = 0; i < p.stages[s].parallelism; ++i)
        for (std::uint32_t c = 0; c < w.copies[s][i]; ++c) {
          const auto& outs = w.outputs[s][i];
          for (std::uint32_t k = 0; k < outs.size(); ++k) {
            const auto to = outs[k].to;
            if (!local(to)) continue;
            neighbours_[index_of[to.stage][to.instance][to.copy]].ins.at(outs[k].slot + c) = {
                offset[s] + i, c, node_of({s, i, c})};
            if (local({s, i, c})) continue;
            auto ch = first_channel[s][i][c] + k;
            inbound_[ch] = remote->inbound(ch, node_of({s, i, c}),
                                           actor_of[to.stage][to.instance][to.copy]);
            proxies_.push_back(inbound_[ch]);
          }
        }
  } catch (...) {
    stop();
    throw;
  }
}

template <class Gone>
void deployment_actors::lose(Gone gone) {
  for (std::size_t a = 0; a < stages_.size(); ++a) {
    copies_lost_msg m;
    const auto& n = neighbours_[a];
    for (std::uint32_t k = 0; k < n.outs.size(); ++k)
      if (gone(n.outs[k])) m.outs.push_back(k);
    for (std::uint32_t k = 0; k < n.ins.size(); ++k)
      if (gone(n.ins[k])) m.ins.push_back(k);
    if (!m.outs.empty() || !m.ins.empty()) caf::anon_send(stages_[a], std::move(m));
  }
}

void deployment_actors::lose_node(std::uint32_t node) {
  lose([node](const copy_id& c) { return c.node == node; });
}

caf::actor deployment_actors::lose_copy(std::uint32_t k, std::uint32_t copy) {
  auto gone = [k, copy](const copy_id& c) { return c.instance == k && c.copy == copy; };
  lose(gone);
  for (std::size_t a = 0; a < stages_.size(); ++a)
    if (gone(neighbours_[a].self)) {
      caf::anon_send_exit(stages_[a], caf::exit_reason::user_shutdown);
      return stages_[a];
    }
  return nullptr;
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
  neighbours_.clear();
}

}  // namespace tidemark::detail
