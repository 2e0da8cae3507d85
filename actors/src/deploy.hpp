// The one path from a compiled plan to running stage actors: the embedded runtime deploys every
// instance in its process, a node deploys the instances its placement names and puts proxies on
// channels to other nodes. Recovery and replica placement belong here too.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>

#include "wiring.hpp"

namespace tidemark::detail {

/// Proxies for channels whose other end runs on another node (absent when everything is local).
/// Channels are numbered by sending stage, instance, copy and output slot
/// (net::enumerate_channels).
struct remote_channels {
  /// Stands in for the receiver of channel `c` on node `peer`; encodes with `codec`.
  std::function<caf::actor(std::uint32_t c, std::uint32_t peer, const batch_codec* codec)> outbound;
  /// Stands in for the sender of channel `c` on node `peer`; forwards to the local `receiver`.
  std::function<caf::actor(std::uint32_t c, std::uint32_t peer, caf::actor receiver)> inbound;
};

/// Which node runs each stage instance and each of its replicas, and which node this process is.
struct placement {
  std::vector<std::uint32_t> node_of;  ///< per stage instance, stages in plan order
  std::uint32_t self = 0;
  /// Per stage instance (empty, or shorter: none): the nodes of its replicas (copies 1, 2, ...).
  std::vector<std::vector<std::uint32_t>> replicas;

  /// Every instance of `p` on this node.
  static placement all_local(const physical_plan& p);
  /// Stage instances and replicas on this node.
  std::size_t local_instances() const;
  /// The node of copy `copy` (0: the primary) of flat stage instance `k`.
  std::uint32_t node(std::uint32_t k, std::uint32_t copy) const {
    return copy == 0 ? node_of.at(k) : replicas.at(k).at(copy - 1);
  }
  /// The number of replicas of flat stage instance `k`.
  std::uint32_t replicas_of(std::uint32_t k) const {
    return k < replicas.size() ? static_cast<std::uint32_t>(replicas[k].size()) : 0u;
  }
  /// Replicas per flat stage instance, as wire() takes them.
  std::vector<std::uint32_t> replica_counts() const;
};

/// Where the stage instances start from: the pieces of completed checkpoint `checkpoint`, or
/// nothing (checkpoint 0).
struct restore_point {
  std::uint64_t checkpoint = 0;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::string> pieces;  ///< (stage, instance)
};

/// The stage actors (and proxies) of one job in this process.
class deployment_actors {
 public:
  /// Spawns the local stage instances, receivers before senders, each connected to its local
  /// receivers or to an outbound proxy, then the inbound proxies; every stage reports done or
  /// failed to `driver`. Keeps references to `g`, `p` and `w`, which must outlive it. With `from`, each instance (every copy of it) starts from its piece of
  /// that checkpoint (a missing piece throws job_error). On failure (an operator cannot be
  /// created) stops what it spawned and rethrows.
  deployment_actors(caf::actor_system& sys, const logical_graph& g, const physical_plan& p,
                    const wiring& w, const placement& where, const run_options& opts,
                    caf::actor driver, const remote_channels* remote = nullptr,
                    restore_point* from = nullptr);
  deployment_actors(const deployment_actors&) = delete;
  deployment_actors& operator=(const deployment_actors&) = delete;

  /// Starts the sources (and the stages without inputs).
  void start();
  /// Stops every actor it spawned and drops its handles.
  void stop();
  /// Node `node` is gone and every stage instance it ran has a copy elsewhere: the local stages
  /// stop sending to the copies there and stop waiting for the copies there
  /// (stage_core::on_copies_lost).
  void lose_node(std::uint32_t node);
  /// Copy `copy` of flat stage instance `k` is gone (it fell too far behind): as lose_node for
  /// that copy; when it runs here, its actor (the newest, when the copy ran here before) is
  /// stopped and returned (null otherwise).
  caf::actor lose_copy(std::uint32_t k, std::uint32_t copy);
  /// Copy `e`, lost with its node, runs again on node `node` from `from` (docs/replication.md,
  /// "Restoring the replication level"), the first of two steps: the local receivers of its
  /// output put its slots at the barrier of `from.checkpoint` (stage_core::on_input_restored) and
  /// get inbound proxies from `node`; when `node` is this one, the copy is spawned from its
  /// instance's piece of `from`, with inbound proxies from the senders elsewhere and its slots to
  /// and from copies that are gone (`lost(flat instance, copy)`) closed, and returned (null
  /// otherwise). Nothing reaches it before connect_copy.
  caf::actor restore_copy(wiring::endpoint e, std::uint32_t node, const restore_point& from,
                          const remote_channels& remote,
                          const std::function<bool(std::uint32_t, std::uint32_t)>& lost);
  /// The second step: the local senders of restored copy `e` send it what they sent since the
  /// barrier of `checkpoint`, then everything new (stage_core::on_output_restored).
  void connect_copy(wiring::endpoint e, std::uint64_t checkpoint, const remote_channels& remote);

  /// The local stage actors (not the proxies).
  const std::vector<caf::actor>& stages() const noexcept { return stages_; }
  /// The local stage actors that begin with a source (checkpoints start there).
  const std::vector<caf::actor>& sources() const noexcept { return sources_; }
  /// Names of the local sources that cannot replay their input after a restore.
  const std::vector<std::string>& unreplayable() const noexcept { return unreplayable_; }
  /// Per channel: the local stage that sends on it (its credit goes there), or null.
  const std::vector<caf::actor>& senders() const noexcept { return senders_; }
  /// Per channel: the inbound proxy of a channel from another node to this one, or null.
  const std::vector<caf::actor>& inbound() const noexcept { return inbound_; }

 private:
  std::vector<caf::actor> stages_;
  std::vector<caf::actor> proxies_;
  std::vector<caf::actor> starters_;
  std::vector<caf::actor> sources_;
  std::vector<std::string> unreplayable_;
  std::vector<caf::actor> senders_;
  std::vector<caf::actor> inbound_;
  /// A copy of a stage instance: flat instance index, copy (0: the primary) and node.
  struct copy_id {
    std::uint32_t instance = 0, copy = 0, node = 0;
  };
  /// Per local stage actor (as stages_): itself, and the copy at the other end of each output and
  /// input slot.
  struct neighbours {
    copy_id self;
    std::vector<copy_id> outs, ins;
  };
  std::vector<neighbours> neighbours_;
  /// Tells each local stage which of its slots lead to a copy for which `gone` is true.
  template <class Gone>
  void lose(Gone gone);

  std::uint32_t node_of(wiring::endpoint e) const;
  bool local(wiring::endpoint e) const { return node_of(e) == where_.self; }
  caf::actor spawn_copy(wiring::endpoint e, const remote_channels* remote,
                        const restore_point* from);
  caf::actor outbound(wiring::endpoint from, std::uint32_t k, std::uint32_t peer,
                      const remote_channels& remote);
  void connect_inbound(wiring::endpoint from, std::uint32_t k, const remote_channels* remote);
  /// Calls f(sender copy, its output slot) for every channel into copy `e`.
  template <class F>
  void for_each_sender_of(wiring::endpoint e, F&& f) const;

  caf::actor_system& sys_;
  const logical_graph& g_;
  const physical_plan& p_;
  const wiring& w_;
  placement where_;  // updated as copies are restored elsewhere
  run_options opts_;
  caf::actor driver_;
  std::shared_ptr<snapshot_writer> snapshots_ = std::make_shared<snapshot_writer>();
  std::vector<std::uint32_t> offset_;  // per stage: flat index of its first instance
  std::vector<std::vector<std::vector<std::uint32_t>>> first_channel_;  // per stage, instance, copy
  std::vector<std::vector<std::vector<caf::actor>>> actor_of_;          // local copies
  std::vector<std::vector<std::vector<std::size_t>>> index_of_;         // in stages_
  /// Output slots spawned before their local receiver (a loop's feedback edge): connected once
  /// every copy exists.
  struct unconnected {
    wiring::endpoint from;
    std::uint32_t out;
    wiring::endpoint to;
    std::uint32_t slot;
  };
  std::vector<unconnected> unconnected_;
};

}  // namespace tidemark::detail
