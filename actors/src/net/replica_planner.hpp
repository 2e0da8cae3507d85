// Replicas on spare CPU (docs/replication.md, "Replicas on spare CPU"): which replicas each
// deployment of a cluster run gets, from the load measured while the job runs, and when the
// load has moved so far that another plan is due. The coordinator migrates to it through a
// checkpoint; this class only decides.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tidemark/runtime/cluster.hpp"

namespace tidemark::net {

class replica_planner {
 public:
  using clock = std::chrono::steady_clock;

  /// Plans for `p` (compiled from `g`) as `cluster.planned` asks; does nothing when it asks for
  /// no spare replicas.
  replica_planner(const logical_graph& g, const physical_plan& p, const cluster_config& cluster);

  bool enabled() const noexcept { return enabled_; }

  /// The replicas of a new deployment of `placement` on the nodes `on` (indices into it), planned
  /// for the load measured last (or estimated before any measurement: instance_loads), logged.
  /// Starts a new measurement: busy times start from zero in a new deployment.
  std::vector<std::vector<std::uint32_t>> deploy(const std::vector<std::uint32_t>& placement,
                                                 const cluster_config& on);

  /// What the running plan predicts (null before deploy() or when planning is off).
  const spare_plan* current() const noexcept { return current_ ? &*current_ : nullptr; }

  /// The busy time stage instance `k` (flat, as place() numbers them) reported so far in this
  /// deployment: its primary's counter.
  void busy(std::size_t k, std::int64_t busy_ns);

  /// Called on every turn of the coordinator's loop. Every `replan_interval`, measures each
  /// instance's load since the last measurement; when it moved by more than `replan_threshold`
  /// from the load the running plan was made for and the plan for the measured load differs
  /// from the running one, returns a description of the change (the caller migrates; the next
  /// deploy() uses that load). Otherwise nullopt.
  std::optional<std::string> poll(clock::time_point now);

 private:
  const logical_graph& g_;
  const physical_plan& p_;
  const cluster_config& cluster_;
  bool enabled_ = false;
  std::vector<std::uint32_t> placement_;
  cluster_config on_;
  std::optional<spare_plan> current_;
  std::vector<double> planned_for_;             // per instance, in cores
  std::optional<std::vector<double>> measured_;  // the latest measurement, in cores
  std::vector<std::int64_t> busy_, busy_before_;
  clock::time_point measured_at_{};
};

}  // namespace tidemark::net
