// Selection as passes over groups of operators (single operators, or the operators of a query),
// each group raised to a target level when the extra load fits what is left of the budget and,
// with a packer, its replicas fit on hosts.
#include "tidemark/replication/selection.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tidemark/replication/importance.hpp"

namespace tidemark::replication {

const char* to_string(selection_strategy s) noexcept {
  switch (s) {
    case selection_strategy::breadth_first:
      return "breadth-first";
    case selection_strategy::direct_levels:
      return "direct";
    case selection_strategy::knapsack:
      return "knapsack";
  }
  return "?";
}

std::optional<selection_strategy> parse_selection(std::string_view s) {
  for (auto x : {selection_strategy::breadth_first, selection_strategy::direct_levels,
                 selection_strategy::knapsack})
    if (s == to_string(x)) return x;
  return std::nullopt;
}

namespace {

// Budget comparisons tolerate rounding so that a budget equal to a sum of loads fits it.
constexpr double slack = 1e-9;

struct group {
  std::vector<op_index> ops;
  double importance = 0;
};

class selector {
 public:
  selector(const replication_model& m, const selection_options& opts)
      : m_(m), opts_(opts), level_(m.operators.size()), budget_(opts.budget) {
    if (!opts.current.empty()) level_ = opts.current;
  }

  // The level direct_levels gives a group of this importance.
  std::uint32_t target(double importance) const {
    auto t = static_cast<std::uint32_t>(std::ceil(importance * opts_.max_level - slack));
    return std::clamp<std::uint32_t>(t, 1, opts_.max_level);
  }

  // Extra load to bring every operator of `g` to `level`.
  double extra(const group& g, std::uint32_t level) const {
    double sum = 0;
    for (auto i : g.ops)
      if (m_.operators[i].replicable && level_[i] < level)
        sum += (level - level_[i]) * m_.operators[i].load;
    return sum;
  }

  // One pass over `groups`: raises each, in order, to `pass_level` (0: its target) when the
  // whole group fits.
  // Knapsack orders by importance per unit of extra load, as it stands when the pass starts.
  void pass(const std::vector<group>& groups, std::uint32_t pass_level) {
    std::vector<double> score(groups.size());
    for (std::size_t k = 0; k < groups.size(); ++k) {
      score[k] = groups[k].importance;
      if (opts_.strategy == selection_strategy::knapsack) {
        double w = extra(groups[k], pass_level);
        score[k] = w > 0 ? score[k] / w : std::numeric_limits<double>::infinity();
      }
    }
    for (auto k : by_decreasing(score, opts_.seed)) {
      const auto& g = groups[k];
      auto level = pass_level ? pass_level : target(g.importance);
      double w = extra(g, level);
      if (w > budget_ + slack) continue;
      if (opts_.packer) {
        std::vector<op_index> replicas;
        for (auto i : g.ops)
          for (auto l = level_[i]; l < level && m_.operators[i].replicable; ++l)
            replicas.push_back(i);
        if (!opts_.packer->place(replicas)) continue;
      }
      budget_ -= w;
      for (auto i : g.ops)
        if (m_.operators[i].replicable) level_[i] = std::max(level_[i], level);
    }
  }

  std::vector<std::uint32_t> run(const std::vector<double>& op_importance) {
    std::vector<group> singles;
    for (op_index i = 0; i < m_.operators.size(); ++i)
      if (m_.operators[i].replicable) singles.push_back({{i}, op_importance[i]});
    std::vector<group> queries;
    if (opts_.query_level) {
      auto q_imp = query_importance(m_, op_importance);
      for (std::size_t q = 0; q < m_.queries.size(); ++q)
        queries.push_back({m_.queries[q].operators, q_imp[q]});
    }
    if (opts_.strategy == selection_strategy::direct_levels) {
      pass(queries, 0);
      pass(singles, 0);
    } else {
      for (std::uint32_t level = 1; level <= opts_.max_level; ++level) {
        pass(queries, level);
        pass(singles, level);
      }
    }
    return std::move(level_);
  }

 private:
  const replication_model& m_;
  const selection_options& opts_;
  std::vector<std::uint32_t> level_;
  double budget_;
};

}  // namespace

std::vector<std::uint32_t> select_replicas(const replication_model& m,
                                           const std::vector<double>& op_importance,
                                           const selection_options& opts) {
  auto n = m.operators.size();
  if (op_importance.size() != n || (!opts.current.empty() && opts.current.size() != n))
    throw model_error(
        "select_replicas: importance and current levels need one value per "
        "operator (" +
        std::to_string(n) + ")");
  return selector{m, opts}.run(op_importance);
}

}  // namespace tidemark::replication
