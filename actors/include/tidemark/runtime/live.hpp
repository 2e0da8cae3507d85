// A live view of a running job: the runtime refreshes it with every stage instance's counters
// while the job runs; observers (the progress line, /metrics, the dashboard) read it from any
// thread without touching the actors.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tidemark/core/graph.hpp"
#include "tidemark/core/metrics.hpp"
#include "tidemark/core/plan.hpp"

namespace tidemark {

/// The shape of a running job, fixed for the run: stages with their operators, where each instance
/// runs, and the channels between stages.
struct live_plan {
  struct stage {
    std::vector<std::string> operators;  ///< names, in the stage's order (the head first)
    std::vector<std::string> kinds;      ///< operator kinds ("source", "window", ...), same order
    std::uint32_t parallelism = 1;
    std::vector<std::string> nodes;  ///< per instance: the node it runs on ("local" embedded)
    /// Per instance: the nodes of its replicas as deployed (docs/replication.md); empty when none.
    std::vector<std::vector<std::string>> replicas;
  };
  struct edge {
    std::uint32_t from = 0;  ///< stage index
    std::uint32_t to = 0;
    std::string partitioning;  ///< "forward", "key", "broadcast", "rebalance"
  };
  std::string job;
  std::vector<stage> stages;
  std::vector<edge> edges;

  /// The plan of `p` compiled from `g`; `node_of` names the node of every stage instance (stages
  /// in plan order), empty for an embedded run, and `replicas_of` the nodes of its replicas.
  static live_plan of(const std::string& job, const logical_graph& g, const physical_plan& p,
                      const std::vector<std::string>& node_of = {},
                      const std::vector<std::vector<std::string>>& replicas_of = {});
};

/// Transport counters of one process of a cluster: what a node reports on request and in its
/// heartbeats, and (named "coordinator") what the coordinator received from the nodes.
struct node_status {
  std::string node;
  std::uint64_t frames_in = 0;      ///< frames accepted
  std::uint64_t bad_frames = 0;     ///< failed verification or decoding, dropped
  std::uint64_t refused_peers = 0;  ///< connections the ZAP handler refused
  /// data frames that arrived ahead of a missing one and waited for it (a reliable channel
  /// delivers them in order once the missing one is sent again)
  std::uint64_t lost_frames = 0;
  std::uint64_t data_bytes_in = 0;  ///< bytes of accepted frames on the data socket
  std::uint64_t batch_frames_in = 0;  ///< of those, frames carrying a batch
  std::uint64_t batch_bytes_in = 0;
  /// Frames above max_message_bytes: refused by verification, or connections ZeroMQ dropped on
  /// reading a frame above its limit (docs/deploy.md#roles-and-limits)
  std::uint64_t oversized_frames = 0;
  /// Control messages other than a status request from a key that is not the coordinator's
  std::uint64_t refused_control = 0;
  /// Data frames on a channel from a node that does not host the channel's sending end (or, for
  /// credit, its receiving end)
  std::uint64_t refused_data = 0;
  // Injected link faults (tidemark/runtime/faults.hpp) on frames this node sent, and what the
  // reliable channels did about them.
  std::uint64_t fault_dropped = 0;     ///< dropped on purpose (a drop, or a partition)
  std::uint64_t fault_duplicated = 0;  ///< sent twice on purpose
  std::uint64_t fault_reordered = 0;   ///< held back behind the next frame on purpose
  std::uint64_t retransmitted = 0;     ///< data frames sent again, not acknowledged in time
  std::uint64_t duplicates_discarded = 0;  ///< data frames received again, dropped
};

/// What a job looks like at one moment.
struct live_snapshot {
  std::shared_ptr<const live_plan> plan;
  double seconds = 0;     ///< since the job started
  bool finished = false;  ///< every instance reported done (the counters are final)
  /// The latest counters of every stage instance that has answered, by stage then instance.
  std::vector<instance_metrics> instances;
  /// A cluster run's view on the coordinator: the latest counters of every node (from its
  /// heartbeats) and the coordinator's own, by name. Empty for embedded runs and on nodes.
  std::vector<node_status> nodes;
};

/// Holds the latest snapshot of a job. The runtime publishes, observers read; both from any thread.
class live_view {
 public:
  void publish(live_snapshot s);
  /// The latest snapshot, or null before the job started.
  std::shared_ptr<const live_snapshot> latest() const;

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const live_snapshot> latest_;
};

}  // namespace tidemark
