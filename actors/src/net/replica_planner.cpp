#include "replica_planner.hpp"

#include <cmath>

#include <spdlog/spdlog.h>

namespace tidemark::net {

namespace {

// "window[1] on n2 -> n3, n4; ..." for the replicated instances of `plan`.
std::string describe(const logical_graph& g, const physical_plan& p,
                     const std::vector<std::uint32_t>& placement,
                     const std::vector<std::vector<std::uint32_t>>& replicas,
                     const cluster_config& on) {
  std::string text;
  std::size_t k = 0;
  for (const auto& st : p.stages)
    for (std::uint32_t i = 0; i < st.parallelism; ++i, ++k) {
      if (replicas[k].empty()) continue;
      text += text.empty() ? "" : "; ";
      text += g.node(st.ops.front().node).name;
      if (st.parallelism > 1) text += "[" + std::to_string(i) + "]";
      text += " on " + on.nodes[placement[k]].id + " ->";
      for (std::size_t r = 0; r < replicas[k].size(); ++r)
        text += (r ? ", " : " ") + on.nodes[replicas[k][r]].id;
    }
  return text.empty() ? "no instance" : text;
}

}  // namespace

replica_planner::replica_planner(const logical_graph& g, const physical_plan& p,
                                 const cluster_config& cluster)
    : g_(g), p_(p), cluster_(cluster), enabled_(!cluster.planned.spare.empty()) {}

std::vector<std::vector<std::uint32_t>> replica_planner::deploy(
    const std::vector<std::uint32_t>& placement, const cluster_config& on) {
  if (!enabled_) return {};
  placement_ = placement;
  on_ = on;
  planned_for_ = measured_ ? *measured_ : instance_loads(g_, p_, on);
  current_ = plan_spare_replicas(g_, p_, placement, on, planned_for_);
  busy_.assign(placement.size(), 0);
  busy_before_ = busy_;
  measured_at_ = clock::now();
  spdlog::info("coordinator: replicas on spare CPU ({} load: budget {:.3f} cores, replicas use "
               "{:.3f}): {}; predicted availability {:.2f} % (without replicas {:.2f} %) when "
               "each node fails with probability {}",
               measured_ ? "measured" : "estimated", current_->budget, current_->replica_load,
               describe(g_, p_, placement, current_->replicas, on), 100 * current_->availability,
               100 * current_->availability_without, cluster_.planned.failure_probability);
  return current_->replicas;
}

void replica_planner::busy(std::size_t k, std::int64_t busy_ns) {
  if (k < busy_.size()) busy_[k] = std::max(busy_[k], busy_ns);
}

std::optional<std::string> replica_planner::poll(clock::time_point now) {
  const auto interval = cluster_.planned.replan_interval;
  if (!current_ || interval.count() <= 0 || now - measured_at_ < interval) return std::nullopt;
  const double seconds = std::chrono::duration<double>(now - measured_at_).count();
  std::vector<double> load(busy_.size());
  double moved = 0, planned = 0;
  for (std::size_t k = 0; k < load.size(); ++k) {
    load[k] = static_cast<double>(busy_[k] - busy_before_[k]) * 1e-9 / seconds;
    moved += std::abs(load[k] - planned_for_[k]);
    planned += planned_for_[k];
  }
  busy_before_ = busy_;
  measured_at_ = now;
  measured_ = load;
  if (planned > 0 && moved <= cluster_.planned.replan_threshold * planned) return std::nullopt;
  auto next = plan_spare_replicas(g_, p_, placement_, on_, load, &current_->replicas);
  const auto share = planned > 0 ? 100 * moved / planned : 100.0;
  if (next.replicas == current_->replicas) {
    spdlog::info("coordinator: the measured load moved by {:.0f} % from the plan's; the plan for "
                 "it is the same",
                 share);
    planned_for_ = load;
    return std::nullopt;
  }
  return "the measured load moved by " + std::to_string(static_cast<int>(std::lround(share))) +
         " % from the plan's; the plan for it: " +
         describe(g_, p_, placement_, next.replicas, on_);
}

}  // namespace tidemark::net
