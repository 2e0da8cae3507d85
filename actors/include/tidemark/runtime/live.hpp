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
  /// in plan order), empty for an embedded run.
  static live_plan of(const std::string& job, const logical_graph& g, const physical_plan& p,
                      const std::vector<std::string>& node_of = {});
};

/// What a job looks like at one moment.
struct live_snapshot {
  std::shared_ptr<const live_plan> plan;
  double seconds = 0;     ///< since the job started
  bool finished = false;  ///< every instance reported done (the counters are final)
  /// The latest counters of every stage instance that has answered, by stage then instance.
  std::vector<instance_metrics> instances;
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
