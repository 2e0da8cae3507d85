// Storage faults injected on purpose (tidemark chaos, tests): slow and failing writes of every
// store in this process. Off unless something sets them; a node sets them when the coordinator
// sends faults and the cluster allows them.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace tidemark::persistence {

struct storage_faults {
  /// Slow disk: every write to a store waits this long first.
  std::chrono::milliseconds write_delay{0};
  /// Probability in [0, 1] that a write fails as if the disk returned EIO.
  double fail_writes = 0;
  /// Seed of the draws behind fail_writes, so a schedule replays the same failures.
  std::uint64_t seed = 0;
  /// The disk that is slow or failing: only stores whose WiredTiger home starts with this path
  /// (e.g. a job's checkpoint directory) see the faults; empty: every store of the process.
  std::string dir;

  bool any() const noexcept { return write_delay.count() > 0 || fail_writes > 0; }
};

/// Replaces the storage faults of this process; storage_faults{} heals them. Thread-safe.
void set_storage_faults(const storage_faults& f);
/// The storage faults in force now.
storage_faults current_storage_faults();

}  // namespace tidemark::persistence
