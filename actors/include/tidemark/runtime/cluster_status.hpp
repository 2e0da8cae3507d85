// What `tidemark status --cluster C` shows: every node's transport counters and its view of the
// deployment it runs (the plan: where each copy of each stage instance runs, which copies were
// lost, dropped or restored, and how far each lags), merged into one picture of the cluster.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tidemark/runtime/cluster.hpp"
#include "tidemark/runtime/live.hpp"

namespace tidemark {

/// One copy of a stage instance (copy 0: the primary) as a node of the deployment sees it.
struct copy_status {
  enum class state {
    alive,     ///< runs where the deployment put it
    gone,      ///< its node is gone (the other copies went on)
    dropped,   ///< it fell more than run_options::replica_lag behind and was stopped
    restored,  ///< after a loss it runs again, on `node`, restored from a checkpoint
  };
  std::string node;  ///< id of the node it runs (or ran) on
  state now = state::alive;
  std::string was_on;  ///< `restored`: the node it ran on before; empty otherwise
  /// Batches sent to the copy over links from other nodes that it has not processed yet (their
  /// credit has not come back), summed over the nodes that send to it that way; at most the credit
  /// window per channel (docs/replication.md#visibility-tidemark-status). nullopt: no node
  /// measures it (its inputs come from its own node, or it does not run).
  std::optional<std::uint64_t> lag;

  bool operator==(const copy_status& o) const {
    return node == o.node && now == o.now && was_on == o.was_on && lag == o.lag;
  }
};

/// The text of a copy state: "alive", "gone", "dropped", "restored".
const char* to_string(copy_status::state s);

struct instance_status {
  std::uint32_t stage = 0;
  std::uint32_t instance = 0;
  std::string name;                 ///< the stage's first operator (as placement names it)
  std::vector<copy_status> copies;  ///< [0]: the primary, then the replicas in order
};

/// The deployment a node runs, as it knows it from the coordinator's Deploy, NodeLost, CopyLost
/// and RestoreCopy messages.
struct deployment_status {
  std::string job;
  std::uint32_t deployment = 0;    ///< the coordinator's number for it; a recovery counts up
  std::vector<std::string> nodes;  ///< node ids of the deployment
  std::vector<std::string> gone;   ///< those the coordinator declared lost
  std::vector<instance_status> instances;  ///< stages in plan order, instances in order
  /// Echoed from the Deploy: the replication planner's budget and the replicas' load (cores) and
  /// the predicted availability (fraction of queries); -1: unknown (no spare planning).
  double spare_budget = -1;
  double replica_load = -1;
  double predicted_availability = -1;

  /// Same plan: nodes, losses and every copy's node and state (lag aside).
  bool same_plan(const deployment_status& o) const;
};

/// One node's answer to a status request.
struct node_answer {
  std::string id;
  std::string endpoint;
  std::optional<node_status> counters;          ///< nullopt: no answer within the timeout
  std::optional<deployment_status> deployment;  ///< nullopt: it runs no job
};

struct cluster_status {
  std::vector<node_answer> nodes;  ///< in the cluster file's order
  /// The plan of the newest deployment any node runs (the highest deployment number), with the
  /// copies' lag summed over the nodes that run it; nullopt: no node that answered runs a job.
  std::optional<deployment_status> plan;
  /// Ids of the nodes running a job whose view differs from `plan` (an older deployment, or a
  /// loss they have not heard of yet).
  std::vector<std::string> disagreeing;
};

/// Asks every node of `cluster` for its status at once, with the coordinator's credentials, and
/// merges their views. A node that does not answer within `timeout` (down, refused key) is
/// reported without counters; never waits longer than `timeout` in all.
cluster_status query_cluster_status(const cluster_config& cluster,
                                    std::chrono::milliseconds timeout);

}  // namespace tidemark
