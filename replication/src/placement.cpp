// Replica-aware bin packing with capacity, network, anti-affinity and colour constraints and a
// neighbour-factor host order.
#include "tidemark/replication/placement.hpp"

#include <algorithm>

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

// Capacity comparisons tolerate rounding so that a load equal to the free capacity fits.
constexpr double slack = 1e-9;

}  // namespace

replica_packer::replica_packer(const replication_model& m, const placement_options& opts,
                               const std::vector<std::vector<host_index>>& existing)
  : m_(m),
    opts_(opts),
    cpu_free_(m.hosts.size()),
    net_free_(m.hosts.size()),
    instances_(m.operators.size()),
    neighbours_(m.operators.size()),
    member_of_(m.operators.size()),
    colour_count_(m.hosts.size()),
    score_(m.hosts.size()) {
  if (!existing.empty() && existing.size() != m.operators.size())
    throw model_error("replica_packer: existing replicas need one entry per operator (" +
                      std::to_string(m.operators.size()) + ")");
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
  for (op_index i = 0; i < existing.size(); ++i)
    for (auto h : existing[i]) take(i, h);
}

bool replica_packer::place(const std::vector<op_index>& ops) {
  for (std::size_t k = 0; k < ops.size(); ++k) {
    auto i = ops[k];
    std::fill(score_.begin(), score_.end(), 0);
    for (auto n : neighbours_[i])
      for (auto h : instances_[n]) ++score_[h];
    bool found = false;
    host_index best = 0;
    for (host_index h = 0; h < m_.hosts.size(); ++h) {
      if (found && score_[h] <= score_[best]) continue;
      if (fits(i, h)) {
        best = h;
        found = true;
      }
    }
    if (!found) {
      for (auto j = k; j-- > 0;) give_back(ops[j]);
      rejected_ += ops.size();
      return false;
    }
    take(i, best);
  }
  return true;
}

std::vector<std::vector<host_index>> replica_packer::replicas() const {
  std::vector<std::vector<host_index>> result(instances_.size());
  for (std::size_t i = 0; i < instances_.size(); ++i)
    result[i].assign(instances_[i].begin() + 1, instances_[i].end());
  return result;
}

void replica_packer::take(op_index i, host_index h) {
  const auto& op = m_.operators[i];
  cpu_free_[h] -= op.load;
  net_free_[h] -= op.net();
  instances_[i].push_back(h);
  for (auto q : member_of_[i]) ++colour_count_[h][q];
}

// Undoes the last take() of operator i.
void replica_packer::give_back(op_index i) {
  const auto& op = m_.operators[i];
  auto h = instances_[i].back();
  instances_[i].pop_back();
  cpu_free_[h] += op.load;
  net_free_[h] += op.net();
  for (auto q : member_of_[i]) --colour_count_[h][q];
}

bool replica_packer::fits(op_index i, host_index h) const {
  const auto& op = m_.operators[i];
  if (cpu_free_[h] + slack < op.load || net_free_[h] + slack < op.net()) return false;
  const auto& used = instances_[i];
  if (std::find(used.begin(), used.end(), h) != used.end()) return false;
  for (auto q : member_of_[i]) {
    auto it = colour_count_[h].find(q);
    if (it != colour_count_[h].end() && it->second >= opts_.colour_limit) return false;
  }
  return true;
}

std::vector<std::vector<host_index>> place_replicas(
  const replication_model& m, const std::vector<std::uint32_t>& levels,
  const std::vector<double>& op_importance, const placement_options& opts,
  const std::vector<std::vector<host_index>>& existing) {
  if (levels.size() != m.operators.size() || op_importance.size() != m.operators.size())
    throw model_error("place_replicas: levels and importance need one value per operator (" +
                      std::to_string(m.operators.size()) + ")");
  replica_packer packer{m, opts, existing};
  for (auto i : by_decreasing(op_importance, opts.seed))
    for (std::uint32_t k = 0; k < levels[i]; ++k)
      if (!packer.place({i})) break;
  return packer.replicas();
}

}  // namespace tidemark::replication
