// Spawning and connecting the stage actors of a plan (see deploy.hpp).
#include "deploy.hpp"

#include <algorithm>
#include <utility>

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
                                     restore_point* from)
    : sys_(sys), g_(g), p_(p), w_(w), where_(where), opts_(opts), driver_(std::move(driver)) {
  // flat index of each stage's first instance, and each copy's first channel
  offset_.resize(p.stages.size());
  first_channel_.resize(p.stages.size());
  std::uint32_t instances = 0;
  std::uint32_t channels = 0;
  for (std::uint32_t s = 0; s < p.stages.size(); ++s) {
    offset_[s] = instances;
    instances += p.stages[s].parallelism;
    first_channel_[s].resize(p.stages[s].parallelism);
    for (std::uint32_t i = 0; i < p.stages[s].parallelism; ++i)
      for (std::uint32_t c = 0; c < w.copies[s][i]; ++c) {
        first_channel_[s][i].push_back(channels);
        channels += static_cast<std::uint32_t>(w.outputs[s][i].size());
      }
  }
  senders_.resize(channels);
  inbound_.resize(channels);
  actor_of_.resize(p.stages.size());
  index_of_.resize(p.stages.size());
  for (std::uint32_t s = 0; s < p.stages.size(); ++s) {
    actor_of_[s].resize(p.stages[s].parallelism);
    index_of_[s].resize(p.stages[s].parallelism);
    for (std::uint32_t i = 0; i < p.stages[s].parallelism; ++i) {
      actor_of_[s][i].resize(w.copies[s][i]);
      index_of_[s][i].resize(w.copies[s][i]);
    }
  }
  try {
    // stages come in topological order: walking them backwards spawns receivers first
    for (auto s = static_cast<std::uint32_t>(p.stages.size()); s-- > 0;)
      for (std::uint32_t i = 0; i < p.stages[s].parallelism; ++i)
        for (std::uint32_t c = 0; c < w.copies[s][i]; ++c)
          if (local({s, i, c})) spawn_copy({s, i, c}, remote, from);
    // a loop's feedback channels: their receivers came after their senders
    for (const auto& [from_copy, k, to, slot] : unconnected_)
      caf::anon_send(actor_of_[from_copy.stage][from_copy.instance][from_copy.copy],
                     connect_msg{k, actor_of_[to.stage][to.instance][to.copy], slot});
    unconnected_.clear();
    // channels into this node: the senders of the local stages' input slots, and inbound proxies
    // for those on other nodes
    for (std::uint32_t s = 0; s < p.stages.size(); ++s)
      for (std::uint32_t i = 0; i < p.stages[s].parallelism; ++i)
        for (std::uint32_t c = 0; c < w.copies[s][i]; ++c) {
          const auto& outs = w.outputs[s][i];
          for (std::uint32_t k = 0; k < outs.size(); ++k)
            if (local(outs[k].to)) connect_inbound({s, i, c}, k, remote);
        }
  } catch (...) {
    stop();
    throw;
  }
}

std::uint32_t deployment_actors::node_of(wiring::endpoint e) const {
  return where_.node(offset_[e.stage] + e.instance, e.copy);
}

/// Spawns copy `e` with its outputs connected (to local receivers, which exist already, or to
/// outbound proxies), restored from its instance's piece of `from`.
caf::actor deployment_actors::spawn_copy(wiring::endpoint e, const remote_channels* remote,
                                         const restore_point* from) {
  const auto [s, i, c] = e;
  auto setup = make_stage_setup(g_, p_, w_, s, i, opts_);
  setup.driver = driver_;
  setup.snapshots = snapshots_;
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
  around.self = {offset_[s] + i, c, where_.self};
  const auto& outs = w_.outputs[s][i];
  setup.core.remote_outputs.assign(outs.size(), false);
  for (std::uint32_t k = 0; k < outs.size(); ++k) {
    const auto to = outs[k].to;
    around.outs.push_back({offset_[to.stage] + to.instance, to.copy, node_of(to)});
    const auto slot = outs[k].slot + c;  // this copy's slot at the receiver
    if (local(to)) {
      const auto& target = actor_of_[to.stage][to.instance][to.copy];
      if (!target) unconnected_.push_back({e, k, to, slot});  // a feedback edge
      setup.outputs.push_back({target, slot});
      continue;
    }
    setup.core.remote_outputs[k] = true;
    setup.outputs.push_back({outbound(e, k, node_of(to), *remote), slot});
  }
  around.ins.resize(setup.core.input_ports.size());
  // sources, stages without inputs, and a loop's feedback stage (it sends the first probe)
  const auto& roles = setup.core.input_roles;
  const bool starts = setup.core.source != nullptr || setup.core.input_ports.empty() ||
                      std::find(roles.begin(), roles.end(), loop_role::feedback) != roles.end();
  const bool source = setup.core.source != nullptr;
  if (source && !setup.core.source->replayable())
    unreplayable_.push_back(setup.core.nodes.front()->name);
  auto a = spawn_stage(sys_, std::move(setup));
  actor_of_[s][i][c] = a;
  index_of_[s][i][c] = stages_.size();
  stages_.push_back(a);
  neighbours_.push_back(std::move(around));
  if (starts) starters_.push_back(a);
  if (source) sources_.push_back(a);
  for (std::uint32_t k = 0; k < outs.size(); ++k) senders_[first_channel_[s][i][c] + k] = a;
  return a;
}

/// An outbound proxy for output slot `k` of copy `from`, towards `peer`.
caf::actor deployment_actors::outbound(wiring::endpoint from, std::uint32_t k, std::uint32_t peer,
                                       const remote_channels& remote) {
  const auto& out = w_.outputs[from.stage][from.instance][k];
  const auto& producer = g_.node(p_.stages[from.stage].ops[out.from_op].node);
  auto proxy = remote.outbound(first_channel_[from.stage][from.instance][from.copy] + k, peer,
                               producer.outputs.at(out.port).codec);
  proxies_.push_back(proxy);
  return proxy;
}

/// Output slot `k` of copy `from` leads to a local receiver: records who sends on the receiver's
/// slot and, when the sender runs elsewhere, puts an inbound proxy on the channel.
void deployment_actors::connect_inbound(wiring::endpoint from, std::uint32_t k,
                                        const remote_channels* remote) {
  const auto& out = w_.outputs[from.stage][from.instance][k];
  const auto to = out.to;
  const auto& receiver = actor_of_[to.stage][to.instance][to.copy];
  neighbours_[index_of_[to.stage][to.instance][to.copy]].ins.at(out.slot + from.copy) = {
      offset_[from.stage] + from.instance, from.copy, node_of(from)};
  if (local(from)) return;
  auto ch = first_channel_[from.stage][from.instance][from.copy] + k;
  inbound_[ch] = remote->inbound(ch, node_of(from), receiver);
  proxies_.push_back(inbound_[ch]);
}

template <class F>
void deployment_actors::for_each_sender_of(wiring::endpoint e, F&& f) const {
  for (std::uint32_t s = 0; s < p_.stages.size(); ++s)
    for (std::uint32_t i = 0; i < p_.stages[s].parallelism; ++i) {
      const auto& outs = w_.outputs[s][i];
      for (std::uint32_t k = 0; k < outs.size(); ++k) {
        const auto to = outs[k].to;
        if (to.stage != e.stage || to.instance != e.instance || to.copy != e.copy) continue;
        for (std::uint32_t c = 0; c < w_.copies[s][i]; ++c) f(wiring::endpoint{s, i, c}, k);
      }
    }
}

caf::actor deployment_actors::restore_copy(wiring::endpoint e, std::uint32_t node,
                                           const restore_point& from,
                                           const remote_channels& remote,
                                           const std::function<bool(std::uint32_t, std::uint32_t)>& lost) {
  const auto [s, i, c] = e;
  const auto k = offset_[s] + i;
  (c == 0 ? where_.node_of.at(k) : where_.replicas.at(k).at(c - 1)) = node;
  for (auto& n : neighbours_)
    for (auto* side : {&n.outs, &n.ins})
      for (auto& other : *side)
        if (other.instance == k && other.copy == c) other.node = node;
  caf::actor spawned;
  if (node == where_.self) {
    spawned = spawn_copy(e, &remote, &from);
    // its inputs: the senders connect (connect_copy); those elsewhere through inbound proxies
    for_each_sender_of(e, [&](wiring::endpoint sender, std::uint32_t out) {
      connect_inbound(sender, out, &remote);
    });
    // it neither sends to nor waits for copies that are gone
    copies_lost_msg m;
    const auto& n = neighbours_.back();
    for (std::uint32_t x = 0; x < n.outs.size(); ++x)
      if (lost(n.outs[x].instance, n.outs[x].copy)) m.outs.push_back(x);
    for (std::uint32_t x = 0; x < n.ins.size(); ++x)
      if (lost(n.ins[x].instance, n.ins[x].copy)) m.ins.push_back(x);
    if (!m.outs.empty() || !m.ins.empty()) caf::anon_send(spawned, std::move(m));
  }
  // the local receivers of its output start its slots at the checkpoint's barrier
  const auto& outs = w_.outputs[s][i];
  for (std::uint32_t x = 0; x < outs.size(); ++x) {
    const auto to = outs[x].to;
    const auto& receiver = local(to) ? actor_of_[to.stage][to.instance][to.copy] : caf::actor{};
    if (!receiver) continue;
    caf::anon_send(receiver, input_restored_msg{outs[x].slot + c, from.checkpoint});
    if (node == where_.self) continue;  // connected at the spawn
    const auto ch = first_channel_[s][i][c] + x;
    inbound_[ch] = remote.inbound(ch, node, receiver);
    proxies_.push_back(inbound_[ch]);
  }
  return spawned;
}

void deployment_actors::connect_copy(wiring::endpoint e, std::uint64_t checkpoint,
                                     const remote_channels& remote) {
  const auto node = node_of(e);
  for_each_sender_of(e, [&](wiring::endpoint sender, std::uint32_t out) {
    const auto& a = actor_of_[sender.stage][sender.instance][sender.copy];
    if (!local(sender) || !a) return;
    auto target = node == where_.self ? actor_of_[e.stage][e.instance][e.copy]
                                      : outbound(sender, out, node, remote);
    const auto slot = w_.outputs[sender.stage][sender.instance][out].slot + sender.copy;
    caf::anon_send(a, output_restored_msg{out, std::move(target), slot, checkpoint});
  });
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
  if (where_.node(k, copy) != where_.self) return nullptr;
  // the newest actor of the copy: one spawned before it here was stopped when the copy was
  // dropped or moved, and the copy came back to this node
  for (auto a = stages_.size(); a-- > 0;)
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
  for (auto& copies : actor_of_)
    for (auto& instance : copies) instance.clear();
}

}  // namespace tidemark::detail
