// What a node does with each frame it receives, without sockets: a control frame from a peer
// (Hello, Deploy, Start, Stop, Faults, checkpoints, state pieces, copies of pieces, status) and a data frame on a
// remote channel (reliable delivery, credit, link faults). The node server feeds it what its
// sockets receive and acts through a node_port; the frame fuzzer feeds it arbitrary bytes through
// a fake port. One thread (the node's I/O thread) owns it.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <zmq.hpp>

#include "../deploy.hpp"
#include "../messages.hpp"
#include "channels.hpp"
#include "checkpoint_copies.hpp"
#include "frames.hpp"
#include "link_fault_injector.hpp"
#include "reliable_channel.hpp"
#include "remote_channel.hpp"
#include "tidemark/runtime/cluster.hpp"
#include "tidemark/runtime/job_registry.hpp"

namespace tidemark::net {

/// What one node runs of one job, as its I/O thread sees it: the job built from a Deploy frame,
/// its plan and channels, where each stage instance runs, and the reliable ends of the channels
/// that cross to other nodes. The stage actors belong to the node (node_port::launch).
struct deployment {
  job built;
  synchronized_graph synced;  ///< the graph the plan was compiled from (gates included)
  physical_plan plan;
  detail::wiring wiring;
  std::vector<channel> channels;
  std::vector<std::uint32_t> offsets;
  detail::placement where;  ///< node of every copy of every stage instance; self: this node
  std::vector<cluster_node> nodes;
  std::uint32_t self = 0;
  std::uint32_t id = 0;         ///< Deploy.deployment: tags its data frames
  std::size_t chunk_bytes = 0;  ///< of StatePiece frames to the coordinator
  run_options opts;
  std::chrono::milliseconds heartbeat{250};
  std::chrono::milliseconds live_period{0};  ///< the coordinator's wish; 0: it wants no live metrics
  std::chrono::milliseconds fence{0};        ///< Deploy.fence_ms; 0: never
  // Reliable channels, by channel index: the sending end where the channel's sender runs here
  // and its receiver elsewhere, the receiving end the other way round; null otherwise.
  std::vector<std::unique_ptr<reliable_sender<zmq::message_t>>> senders;
  std::vector<std::unique_ptr<reliable_receiver<zmq::message_t>>> receivers;
  bool started = false;
  /// Nodes gone (NodeLost) and copies dropped (CopyLost, flat instance and copy): nothing is sent
  /// to them or waited for; a copy restored elsewhere (RestoreCopy) is no longer dropped.
  std::set<std::uint32_t> gone;
  std::set<std::pair<std::uint32_t, std::uint32_t>> dropped;
  /// Copies restored after a loss (flat instance and copy) and the node each ran on before.
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> restored;
  /// By channel, the nodes that ran one of its ends before that copy was restored elsewhere (this
  /// node among them when the end here moved away). A frame sent before the move may still arrive
  /// (delayed on the way): from such a node, or for an end that left this node, it is dropped as
  /// late, not refused or counted as a bad frame.
  std::map<std::uint32_t, std::set<std::uint32_t>> former_ends;
  /// Deploy 1.7: the replication planner's figures, echoed in status replies (-1: unknown).
  double spare_budget = -1;
  double replica_load = -1;
  double predicted_availability = -1;
  std::shared_ptr<void> prepared;            ///< job_spec::prepare_node's handle
  std::function<std::string()> node_report;  ///< job_spec::node_report with the options

  /// The node of copy `copy` (0: the primary) of stage instance (stage, instance).
  std::uint32_t node_of(std::uint32_t stage, std::uint32_t instance, std::uint32_t copy = 0) const {
    return where.node(offsets[stage] + instance, copy);
  }
  /// Whether a node for which `is(node)` holds ran an end of channel `c` before it moved (see
  /// former_ends).
  template <class Pred>
  bool ran_an_end_before(std::uint32_t c, Pred is) const {
    auto it = former_ends.find(c);
    return it != former_ends.end() && std::any_of(it->second.begin(), it->second.end(), is);
  }
  std::uint32_t sender_node(const channel& c) const {
    return node_of(c.from_stage, c.from_instance, c.from_copy);
  }
  std::uint32_t receiver_node(const channel& c) const {
    return node_of(c.to_stage, c.to_instance, c.to_copy);
  }
  /// Copy `copy` of flat stage instance `k` is gone (its node, or itself).
  bool lost(std::uint32_t k, std::uint32_t copy) const {
    return gone.count(where.node(k, copy)) > 0 || dropped.count({k, copy}) > 0;
  }
};

/// Builds what node `self_id` runs of the job a Deploy frame describes, with the jobs this
/// release registers; throws job_error naming what in the frame does not fit (another node's
/// frame, a placement of another plan, a channel between nodes without a codec).
std::unique_ptr<deployment> read_deploy(const wire::Deploy& d, const job_registry& jobs,
                                        const std::string& self_id,
                                        std::int64_t max_message_bytes);

/// What node `x` knows of its deployment, for its status reply: the plan with every copy's state,
/// and the lag of the copies this node sends to over links (batches not yet processed).
deployment_status describe(const deployment& x);

/// What the dispatch asks of the node around it. Calls come from the dispatch's thread.
class node_port {
 public:
  virtual ~node_port() = default;
  /// Sends `msg` to the control peer whose routing id is `to` (the answer to its frame).
  virtual void reply(std::string_view to, zmq::message_t msg) = 0;
  /// Like reply(), but from any thread (the writer of the node's checkpoint copies): the I/O
  /// thread sends it soon.
  virtual void reply_later(std::string to, zmq::message_t msg) = 0;
  /// Spawns the stage actors of `d`, restored from `from`; they wait for start(). Throws when
  /// they cannot be spawned (then nothing of them is left). Returns the names of the launched
  /// sources that cannot replay their input after a restore.
  virtual std::vector<std::string> launch(deployment& d, detail::restore_point from) = 0;
  /// Lets the launched sources run.
  virtual void start() = 0;
  /// Stops the launched actors, if any, and waits for them; the deployment they ran is destroyed
  /// next.
  virtual void halt() = 0;
  /// Node `node` of the deployment is gone; its stage instances have copies elsewhere
  /// (detail::deployment_actors::lose_node).
  virtual void lose_node(std::uint32_t node) = 0;
  /// Copy `copy` of flat stage instance `k` is gone (detail::deployment_actors::lose_copy).
  virtual void lose_copy(std::uint32_t k, std::uint32_t copy) = 0;
  /// The two steps of restoring a lost copy on node `node` of `d`
  /// (detail::deployment_actors::restore_copy and connect_copy); `d.where` names `node` already.
  virtual void restore_copy(const deployment& d, detail::wiring::endpoint e, std::uint32_t node,
                            const detail::restore_point& from) = 0;
  virtual void connect_copy(const deployment& d, detail::wiring::endpoint e,
                            std::uint64_t checkpoint) = 0;
  /// Tells the sources to take checkpoint `id` / every stage that checkpoint `id` is complete.
  virtual void checkpoint(std::uint64_t id) = 0;
  virtual void commit(std::uint64_t id) = 0;
  /// Hands what a peer sent on remote channel `channel` to its local end: credit to the sending
  /// stage, a batch or a signal to the receiving one.
  virtual void to_sender(std::uint32_t channel, detail::credit_msg m) = 0;
  virtual void to_receiver(std::uint32_t channel, detail::data_msg m) = 0;
  virtual void to_receiver(std::uint32_t channel, detail::signal_msg m) = 0;
  /// Adds the counters kept outside the dispatch (refused connections, frames ZeroMQ dropped).
  virtual void outside_counters(node_status& s) = 0;
};

/// The node's handling of received frames and of its reliable channels.
class node_dispatch {
 public:
  using clock = std::chrono::steady_clock;

  /// `coordinator_key`: the only key (Z85) that may send control messages; ignored with
  /// opts.insecure. Keeps references to `opts`, `jobs` and `port`.
  node_dispatch(const node_options& opts, std::string coordinator_key, const job_registry& jobs,
                node_port& port);
  node_dispatch(const node_dispatch&) = delete;
  node_dispatch& operator=(const node_dispatch&) = delete;

  /// Takes a control frame from the peer with routing id `from` and CURVE key `key` (null when
  /// unknown): checks it (size, verifier, sender, version), acts on it and answers through the
  /// port. Never throws for a bad frame: it is counted in bad_frames or refused_control.
  void on_control(std::string_view from, const char* key, zmq::message_t& received);
  /// Takes a data frame from the peer with key `key` (null when unknown): checks it, passes it
  /// through its channel's reliable end and delivers what that frees. May take `received`. A
  /// frame at an address not aligned for 8-byte scalars (ZeroMQ's plain-text receive) is read
  /// from an aligned copy.
  void on_data(const char* key, zmq::message_t& received);

  /// A frame the deployment's stages send (from the node's outbox) to a peer node; without a
  /// frame, credit a local receiver returned.
  void on_outgoing(outgoing o, clock::time_point now);
  /// Retransmissions, probes and receiver reports of the reliable channels that are due.
  void keep_channels(clock::time_point now);
  /// When keep_channels() or the link faults have something to do next (nullopt: nothing).
  std::optional<clock::time_point> next_due() const;

  /// Stops the deployment, if any (the port halts its actors first); faults' delayed frames go.
  /// The owner calls it before the port goes away.
  void end_deployment();

  /// The deployment running here, or null.
  deployment* current() noexcept { return dep_.get(); }
  /// The routing id of the coordinator's connection (empty until it said Hello or Deploy).
  const std::string& coordinator() const noexcept { return coordinator_; }
  /// When the coordinator last sent a job control message (for fencing).
  clock::time_point heard_from_coordinator() const noexcept { return heard_; }
  /// The node's counters; the I/O loop adds its own (retransmissions are counted here).
  node_status& status() noexcept { return status_; }
  /// Fills in the counters kept by the link faults and outside (node_port::outside_counters).
  void collect_counters();
  /// The injected link faults: frames to peer nodes leave through faults().flush().
  link_fault_injector& faults() noexcept { return faults_; }

 private:
  bool oversized(zmq::message_t& m, const char* socket);
  bool may_send(const char* key, wire::Body body) const;
  void refuse_control(std::string_view from, zmq::message_t& m, wire::Body body);
  void bad_frame(zmq::message_t& m, const std::string& what);
  void on_deploy(std::string_view from, const wire::Deploy& d);
  void on_faults(std::string_view from, const wire::Faults& body);
  void lose_node(std::uint32_t node);
  void lose_copy(const wire::CopyLost& m);
  void restore_copy(std::string_view from, const wire::RestoreCopy& m);
  void deliver(std::uint32_t c, zmq::message_t& payload);
  void transmit(std::uint32_t peer, zmq::message_t msg, clock::time_point now);
  auto resend_to(std::uint32_t peer, clock::time_point now);

  const node_options& opts_;
  std::string coordinator_key_;
  const job_registry& jobs_;
  node_port& port_;
  node_status status_;
  std::uint64_t oversized_refused_ = 0;  // frames above the limit that ZeroMQ let through
  std::string coordinator_;
  clock::time_point heard_ = clock::now();
  std::unique_ptr<deployment> dep_;
  std::optional<std::uint32_t> ended_;  // the id of the deployment that ended last
  // pieces of the checkpoint the next Deploy restores, as the coordinator sends them
  piece_assembler assembler_;
  detail::restore_point incoming_;
  link_fault_injector faults_;
  copy_keeper copies_;  // copies of other nodes' checkpoint pieces, in DATA/checkpoints
};

}  // namespace tidemark::net
