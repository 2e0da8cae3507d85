// Replica-aware bin packing with capacity, network, anti-affinity and colour constraints and a
// neighbour-factor host order.
#include "tidemark/replication/placement.hpp"

#include <algorithm>
#include <unordered_map>

#include "tidemark/replication/importance.hpp"

namespace tidemark::replication {

const char* to_string(placement_strategy p) noexcept {
  switch (p) {
    case placement_strategy::bin_packing: return "bin-packing";
    case placement_strategy::colour_constrained: return "colour";
  }
  return "?";
}

std::optional<placement_strategy> parse_placement(std::string_view s) {
  for (auto x : {placement_strategy::bin_packing, placement_strategy::colour_constrained})
    if (s == to_string(x)) return x;
  return std::nullopt;
}

namespace {

constexpr double slack = 1e-9;

class packer {
 public:
  packer(const replication_model& m, const placement_options& opts)
    : m_(m),
      opts_(opts),
      cpu_free_(m.hosts.size()),
      net_free_(m.hosts.size()),
      instances_(m.operators.size()),
      neighbours_(m.operators.size()),
      member_of_(m.operators.size()),
      colour_count_(m.hosts.size()),
      score_(m.hosts.size()) {
    for (host_index h = 0; h < m.hosts.size(); ++h) {
      cpu_free_[h] = m.hosts[h].cpu_capacity;
      net_free_[h] = m.hosts[h].net_capacity;
    }
    auto readers = consumers(m.operators);
    for (op_index i = 0; i < m.operators.size(); ++i) {
      auto h = m.primary[i];
      cpu_free_[h] -= m.operators[i].load;
      net_free_[h] -= m.operators[i].net();
      instances_[i].push_back(h);
      for (const auto& e : m.operators[i].inputs) neighbours_[i].push_back(e.from);
      for (auto r : readers[i]) neighbours_[i].push_back(r);
    }
    if (opts.strategy == placement_strategy::colour_constrained)
      for (std::uint32_t q = 0; q < m.queries.size(); ++q)
        for (auto i : m.queries[q].operators) member_of_[i].push_back(q);
  }

  // Places one replica of `i`; returns false when no host can take it.
  bool place(op_index i) {
    const auto& op = m_.operators[i];
    std::fill(score_.begin(), score_.end(), 0);
    for (auto n : neighbours_[i])
      for (auto h : instances_[n]) ++score_[h];
    bool found = false;
    host_index best = 0;
    for (host_index h = 0; h < m_.hosts.size(); ++h) {
      if (found && score_[h] <= score_[best]) continue;
      if (fits(i, op, h)) {
        best = h;
        found = true;
      }
    }
    if (!found) return false;
    cpu_free_[best] -= op.load;
    net_free_[best] -= op.net();
    instances_[i].push_back(best);
    for (auto q : member_of_[i]) ++colour_count_[best][q];
    return true;
  }

  std::vector<std::vector<host_index>> result() {
    std::vector<std::vector<host_index>> replicas(instances_.size());
    for (std::size_t i = 0; i < instances_.size(); ++i)
      replicas[i].assign(instances_[i].begin() + 1, instances_[i].end());
    return replicas;
  }

 private:
  bool fits(op_index i, const operator_info& op, host_index h) const {
    if (cpu_free_[h] + slack < op.load || net_free_[h] + slack < op.net()) return false;
    const auto& used = instances_[i];
    if (std::find(used.begin(), used.end(), h) != used.end()) return false;
    for (auto q : member_of_[i]) {
      auto it = colour_count_[h].find(q);
      if (it != colour_count_[h].end() && it->second >= opts_.colour_limit) return false;
    }
    return true;
  }

  const replication_model& m_;
  const placement_options& opts_;
  std::vector<double> cpu_free_;
  std::vector<double> net_free_;
  std::vector<std::vector<host_index>> instances_;  // primary first, then placed replicas
  std::vector<std::vector<op_index>> neighbours_;
  std::vector<std::vector<std::uint32_t>> member_of_;  // queries; only for colour constraints
  std::vector<std::unordered_map<std::uint32_t, std::uint32_t>> colour_count_;  // per host
  std::vector<std::uint32_t> score_;
};

}  // namespace

std::vector<std::vector<host_index>> place_replicas(const replication_model& m,
                                                    const std::vector<std::uint32_t>& levels,
                                                    const std::vector<double>& op_importance,
                                                    const placement_options& opts) {
  if (levels.size() != m.operators.size() || op_importance.size() != m.operators.size())
    throw model_error("place_replicas: levels and importance need one value per operator");
  packer p{m, opts};
  for (auto i : by_decreasing(op_importance, opts.seed))
    for (std::uint32_t k = 0; k < levels[i]; ++k)
      if (!p.place(i)) break;
  return p.result();
}

}  // namespace tidemark::replication
