// Distributed execution: the cluster file, CURVE key pairs, placement of a physical plan on
// nodes, the node server (what `tidemark-node` runs) and the coordinator (what
// `tidemark run JOB --cluster FILE` runs). Transport details (ZeroMQ, FlatBuffers) stay in src/.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tidemark/persistence/checkpoint_store.hpp"
#include "tidemark/replication/planner.hpp"
#include "tidemark/runtime/job_registry.hpp"
#include "tidemark/runtime/live.hpp"
#include "tidemark/runtime/runtime.hpp"

namespace tidemark {

/// A CURVE key pair as Z85 text (40 characters each).
struct key_pair {
  std::string public_key;
  std::string secret_key;

  /// A fresh key pair from libzmq's CURVE implementation.
  static key_pair generate();
  /// Reads `NAME.key` (both keys) as written by save(); throws std::runtime_error naming the file.
  static key_pair load(const std::string& path);
  /// Reads a public key from a `.pub` file (or a `.key` file).
  static std::string load_public(const std::string& path);
  /// Writes `DIR/NAME.key` (both keys, mode 0600) and `DIR/NAME.pub` (the public key).
  void save(const std::string& dir, const std::string& name) const;
};

struct cluster_node {
  std::string id;
  std::string endpoint;    ///< control endpoint, e.g. tcp://10.0.0.5:7100 (data: port + 1)
  std::string public_key;  ///< the node's CURVE public key (Z85)
  double cpu = 1;          ///< CPU capacity in cores (`cpu:`), for the replication planner
};

/// `replication: {spare: 50%, ...}` in the cluster file (docs/replication.md, "Replicas on spare
/// CPU"): the coordinator spends spare CPU on replicas that the replication planner chooses.
struct spare_replication {
  /// Empty: off. "50%": that share of the primaries' load; "1.5": that many cores.
  std::string spare;
  /// Heuristic, query level, selection, placement, replicas per instance (max_level), seed.
  replication::planner_options planner;
  /// The plan's predicted availability is for a period in which each node fails with this
  /// probability (the paper's p).
  double failure_probability = 0.02;
  /// How often the coordinator compares the measured load with the load the running plan was
  /// made for (and, with checkpoints, re-plans and migrates); 0: the deployment's plan stays.
  std::chrono::milliseconds replan_interval{10000};
  /// A re-plan is due when the measured load moved by more than this share: the sum over the
  /// stage instances of |measured - planned| over the planned total.
  double replan_threshold = 0.25;
};

/// `checkpoint: {copies: 1, retain: 3}` in the cluster file (docs/deploy.md, "Checkpoints and
/// recovery"): with checkpoints, every piece is also kept by `copies` nodes other than the one
/// that produced it, each keeping the newest `retain` checkpoints, so losing any one host (the
/// coordinator's included) loses no checkpoint.
struct checkpoint_copies {
  std::uint32_t copies = 1;  ///< 0: only the coordinator's store; at most nodes - 1
  std::uint32_t retain = 3;  ///< >= 1
};

/// `broker: {node: n2, port: 1883}` in the cluster file (docs/deploy.md, "RIoTBench and Aion on
/// three nodes"): the node that runs the MQTT broker of jobs that use one.
struct pinned_broker {
  std::string node;  ///< empty: none pinned (the job starts its own, or is given --broker)
  int port = 1883;
};

struct cluster_config {
  std::vector<cluster_node> nodes;
  /// Copies of checkpoint pieces on the nodes (a one-node cluster defaults to 0 copies).
  checkpoint_copies checkpoint;
  /// The coordinator's key pair (its public key must be in every node's allow-list).
  key_pair coordinator;
  /// Plain-text ZeroMQ (no CURVE, no ZAP): only with an explicit opt-in; prints a warning.
  bool insecure = false;
  /// A node that sends nothing for this long is reported as failed.
  std::chrono::milliseconds heartbeat_timeout{1000};
  /// How often nodes send heartbeats.
  std::chrono::milliseconds heartbeat_interval{250};
  /// Largest frame a socket accepts (ZMQ_MAXMSGSIZE); larger ones are refused.
  std::int64_t max_message_bytes = 64 << 20;
  /// Operator name -> node id: every instance of the stage holding the operator runs there.
  std::map<std::string, std::string> pins;
  /// Operator name -> measured load of its stage in cores, summed over the stage's instances (a
  /// previous run's report: `tidemark run --cluster C --placement-load REPORT.json`,
  /// stage_load_from_report). Empty: place() packs instances by an estimate (instance_loads).
  std::map<std::string, double> operator_load;
  /// The node that starts mosquitto on its address (its endpoint's host) and `broker.port` when a
  /// job that uses a broker (the RIoTBench apps) is deployed, and stops it with the deployment.
  /// The coordinator deploys that node first, so the others' clients find the broker running.
  pinned_broker broker;
  /// How long to wait for nodes to answer hello and deploy.
  std::chrono::milliseconds connect_timeout{5000};
  /// `faults: allow`: inject_faults may send fault commands to the nodes (tidemark/runtime/faults.hpp).
  bool faults_allowed = false;
  /// Operator name -> replicas of each instance of its stage (cluster file `replication:
  /// {replicate: {window: 1}}`, docs/replication.md): active copies on other nodes, which take
  /// over without a recovery when the primary's node dies.
  std::map<std::string, std::uint32_t> replicate;
  /// Replicas planned on spare CPU instead (`replication: {spare: 50%}`); not with `replicate`.
  spare_replication planned;
  /// `on_loss: continue` (degraded mode, docs/replication.md): a lost node whose stage instances
  /// are not all covered by live copies stops only the queries that lost an instance (with
  /// everything downstream of it, unflushed); the others run to the end. False (`on_loss: stop`,
  /// the default): the job recovers from a checkpoint or fails. Not with checkpoints.
  bool continue_on_loss = false;

  /// Reads a cluster file (YAML, see docs/deploy.md); relative key paths are resolved against the
  /// file's folder. Throws std::runtime_error naming the file and the field.
  static cluster_config load(const std::string& path);
  /// Index of the node with this id, or nullopt.
  std::optional<std::uint32_t> find(const std::string& id) const;
  /// "HOST:PORT" of the pinned broker (the host of its node's endpoint); empty when none is.
  std::string broker_address() const;
};

/// Node index of every stage instance (stages in plan order, instances in order): instances of
/// stages whose operators are pinned go to the pinned node. The others are packed by their load
/// (instance_loads: measured with `cluster.operator_load`, estimated without), heaviest first
/// (equal loads in instance order), each to a node running the fewest instances of its stage, among
/// those the one whose share of its CPU (`cpu:`) is the least with it, pinned instances included;
/// ties go to the node running fewer instances, then to the first in the file. This is the greedy bin packing of the replication planner's place_primaries,
/// with nodes' capacities. Equal loads on equal nodes come out round robin in instance order.
/// Throws job_error for a pin naming an unknown operator or node, and for loads that name no
/// operator of the job (a report of another job).
std::vector<std::uint32_t> place(const logical_graph& g, const physical_plan& p,
                                 const cluster_config& cluster);

/// The measured load of a job's stages from a report `tidemark run --report` wrote (JSON text):
/// per stage, its instances' busy seconds summed over the run's seconds (cores), under the name
/// of the stage's first operator (what cluster_config::operator_load holds). Throws
/// std::runtime_error naming what is missing.
std::map<std::string, double> stage_load_from_report(const std::string& json);

/// The load of every stage instance (as place() returns them) in cores, from
/// `cluster.operator_load`: a stage's load shared equally by its instances, a stage the
/// measurement does not name counting as the mean instance load of those it names. Without a
/// measurement, the estimate: every operator costs the same, so an instance's load is the number
/// of operators of its stage (a chain fused into one stage weighs more than a lone operator; a
/// stage's parallelism says how many instances the user thinks its load needs), scaled so that
/// all instances together use half of the nodes' CPU.
/// Throws job_error for loads that name no operator of the job (a report of another job).
std::vector<double> instance_loads(const logical_graph& g, const physical_plan& p,
                                   const cluster_config& cluster);

/// The replicas the replication planner chose for a deployment (`cluster.planned`).
struct spare_plan {
  /// Per stage instance (as place() returns them), the nodes of its replicas.
  std::vector<std::vector<std::uint32_t>> replicas;
  double budget = 0;        ///< cores the planner could spend on replicas
  double replica_load = 0;  ///< cores its replicas use
  /// Fraction of the job's queries (sinks) predicted to keep running through a period in which
  /// each node fails with `failure_probability`, with the replicas and without.
  double availability = 0;
  double availability_without = 0;
};

/// Plans replicas for `p` placed at `placement` on `cluster` with `load` (per stage instance, in
/// cores) as `cluster.planned` asks: replication::model_from_plan, plan_replicas with the
/// budget `spare` gives (a share of the primaries' load, or cores), nodes' `cpu` as capacity,
/// and the predicted availability by Monte Carlo simulation (1000 runs). Stages holding a source
/// or a sink are never replicated. Given the `running` replicas, returns them instead while they
/// still fit the budget and the nodes' CPU for `load` and the new plan would not be more
/// available by more than a tenth of a percentage point, so that equally good plans do not make
/// a job move back and forth. Throws job_error when planning is off or the model is refused.
spare_plan plan_spare_replicas(const logical_graph& g, const physical_plan& p,
                               const std::vector<std::uint32_t>& placement,
                               const cluster_config& cluster, const std::vector<double>& load,
                               const std::vector<std::vector<std::uint32_t>>* running = nullptr);

/// Per stage instance (as place() returns them), the nodes of the replicas `cluster.replicate`
/// asks for: replica r of an instance whose primary runs on node n goes to node (n + r) mod the
/// number of nodes, so no two copies of an instance share a node. Throws job_error naming the
/// operator when it is unknown, when its stage holds a source or a sink (a source's copy would
/// read the input twice, a sink's would write the output twice), or when the cluster has too few
/// nodes for a copy per node.
std::vector<std::vector<std::uint32_t>> place_replicas(const logical_graph& g,
                                                       const physical_plan& p,
                                                       const std::vector<std::uint32_t>& placement,
                                                       const cluster_config& cluster);

/// Throws job_error when the coordinator would refuse to deploy `p` with `placement` (the node
/// index of every stage instance, as place() returns, and of their replicas, as place_replicas()
/// returns) on `cluster`: the placement does not fit the plan, or a channel between two nodes
/// carries a type without tidemark::codec (the message names the operator, its output port, the
/// type and both nodes). Contacts no node, so a test can check any placement of a job without a
/// cluster.
void check_placement(const logical_graph& g, const physical_plan& p,
                     const std::vector<std::uint32_t>& placement, const cluster_config& cluster,
                     const std::vector<std::vector<std::uint32_t>>& replicas = {});

struct node_options {
  std::string id;
  std::string listen;    ///< control endpoint to bind, e.g. tcp://0.0.0.0:7100 (data: port + 1)
  std::string data_dir;  ///< node-local state (created at start; for stores and checkpoints)
  std::string keys_dir;  ///< ID.key (own key pair) and *.pub (the allow-list)
  /// The coordinator's public key file (.pub or .key); empty: KEYS/coordinator.pub, else
  /// KEYS/coordinator.key. Control messages (hello, deploy, start, stop, checkpoints, faults) from
  /// any other key are refused and counted; status requests are open to the allow-list.
  std::string coordinator_key;
  bool insecure = false;
  std::int64_t max_message_bytes = 64 << 20;
  /// Refreshed with the counters of this node's stage instances every `live_period` while a job
  /// runs (for its /metrics); null: the node polls its instances only when the coordinator asks
  /// for live metrics.
  std::shared_ptr<live_view> live;
  std::chrono::milliseconds live_period{500};
  /// Accept injected faults from the coordinator's key (tidemark-node --allow-faults); refused
  /// otherwise.
  bool allow_faults = false;
};

/// The server behind `tidemark-node`: binds its control and data endpoints, accepts deployments
/// of registered jobs from the coordinator, runs them, and reports heartbeats and metrics.
class node_server {
 public:
  node_server(node_options opts, const job_registry& jobs);
  ~node_server();
  node_server(const node_server&) = delete;
  node_server& operator=(const node_server&) = delete;
  /// Serves until `stop` becomes true.
  void run(const std::atomic<bool>& stop);
  /// The node's counters as of its last pass through the I/O loop (at most ~50 ms old while it
  /// runs); safe from any thread.
  node_status status() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// Runs a registered job on the cluster: prepare (here), deploy the plan on the nodes, start,
/// watch heartbeats, collect metrics, report. Throws job_error when a node refuses, fails or
/// stops sending heartbeats (the message names the node and the operators it hosted).
job_result run_on_cluster(const job_spec& spec, job_options options, const cluster_config& cluster,
                          run_options opts = {});

/// Asks the node at `endpoint` for its counters with the coordinator's credentials of `cluster`;
/// nullopt when it does not answer within `timeout` (refused key, plain-text peer, down).
std::optional<node_status> query_status(const std::string& endpoint, const cluster_config& cluster,
                                        std::chrono::milliseconds timeout);

/// The checkpoint copies one node keeps (cluster file `checkpoint: {copies: N}`).
struct node_checkpoint_copies {
  std::string node;
  bool answered = false;  ///< false: down, or it refused the coordinator's key
  std::string error;      ///< it answered but could not read its store
  std::vector<persistence::held_checkpoint> checkpoints;  ///< oldest first; plan: its fingerprint
};

/// Asks every node of `cluster`, with the coordinator's credentials, which completed checkpoints
/// it keeps copies of, and of which pieces; waits at most `timeout` for the answers.
std::vector<node_checkpoint_copies> query_checkpoint_copies(const cluster_config& cluster,
                                                            std::chrono::milliseconds timeout);

/// The address of this host (numeric, without port) that traffic to the cluster's first node
/// leaves from: where a helper the nodes must reach (a broker) listens. Sends nothing; throws
/// std::runtime_error naming the node when there is no route to it.
std::string local_address_towards(const cluster_config& cluster);

/// The data endpoint of a node: its control endpoint's port + 1.
std::string data_endpoint(const std::string& control_endpoint);

}  // namespace tidemark
