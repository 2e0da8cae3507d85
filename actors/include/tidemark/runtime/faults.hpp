// Faults injected on purpose into a running cluster (tidemark chaos, the chaos test fixture):
// what one node does to the frames it sends and receives and to its storage. A node applies a
// fault command only when it comes from the coordinator's key and the cluster allows faults.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "tidemark/persistence/faults.hpp"
#include "tidemark/runtime/cluster.hpp"

namespace tidemark {

/// What happens to the frames a node sends on one link.
struct link_faults {
  double drop = 0;       ///< probability in [0, 1] that a frame is dropped
  double duplicate = 0;  ///< probability that a frame is sent twice
  double reorder = 0;    ///< probability that a frame is held back and sent after the next one
  std::chrono::milliseconds delay{0};   ///< added to every frame
  std::chrono::milliseconds jitter{0};  ///< a uniform extra delay in [0, jitter]

  bool any() const noexcept {
    return drop > 0 || duplicate > 0 || reorder > 0 || delay.count() > 0 || jitter.count() > 0;
  }
};

/// The faults of one node. A command replaces the node's previous one; fault_command{} heals all.
struct fault_command {
  /// Faults on frames this node sends to a peer: a node id, or "*" for every peer node.
  std::map<std::string, link_faults> links;
  /// Partition: node ids ("coordinator" for the coordinator) this node neither sends to nor
  /// accepts frames from.
  std::set<std::string> unreachable;
  persistence::storage_faults storage;
  /// Seed of the node's draws (drop, duplicate, reorder, jitter), so a schedule replays.
  std::uint64_t seed = 0;
};

/// Sends `cmd` to the node `node` of `cluster` with the coordinator's key and waits for its
/// answer. Throws std::runtime_error naming the node when the cluster file does not say
/// `faults: allow`, when the node refuses (it does not allow faults) or does not answer.
void inject_faults(const cluster_config& cluster, const std::string& node,
                   const fault_command& cmd,
                   std::chrono::milliseconds timeout = std::chrono::milliseconds{2000});

}  // namespace tidemark
