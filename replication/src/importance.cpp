// The importance heuristics and the seeded ordering shared by selection and placement.
#include "tidemark/replication/importance.hpp"

#include <algorithm>
#include <numeric>

#include "random.hpp"

namespace tidemark::replication {

const char* to_string(heuristic h) noexcept {
  switch (h) {
    case heuristic::random: return "random";
    case heuristic::low_utilization: return "low-utilization";
    case heuristic::query_out_degree: return "out-degree";
    case heuristic::product: return "product";
  }
  return "?";
}

std::optional<heuristic> parse_heuristic(std::string_view s) {
  for (auto h : {heuristic::random, heuristic::low_utilization, heuristic::query_out_degree,
                 heuristic::product})
    if (s == to_string(h)) return h;
  return std::nullopt;
}

namespace {

std::vector<double> out_degree(const replication_model& m) {
  auto deg = query_degree(m);
  std::vector<double> result(deg.size());
  for (std::size_t i = 0; i < deg.size(); ++i)
    result[i] = static_cast<double>(deg[i]) / static_cast<double>(m.queries.size());
  return result;
}

std::vector<double> low_utilization(const replication_model& m) {
  double max_load = 0;
  for (const auto& op : m.operators) max_load = std::max(max_load, op.load);
  std::vector<double> result(m.operators.size(), 1.0);
  if (max_load > 0)
    for (std::size_t i = 0; i < result.size(); ++i)
      result[i] = 1.0 - m.operators[i].load / max_load;
  return result;
}

}  // namespace

std::vector<double> operator_importance(const replication_model& m, heuristic h,
                                        std::uint64_t seed) {
  switch (h) {
    case heuristic::random: {
      std::vector<double> result(m.operators.size());
      for (std::size_t i = 0; i < result.size(); ++i)
        result[i] = detail::unit_interval(detail::mix(seed, i));
      return result;
    }
    case heuristic::low_utilization: return low_utilization(m);
    case heuristic::query_out_degree: return out_degree(m);
    case heuristic::product: {
      auto result = out_degree(m);
      auto lu = low_utilization(m);
      for (std::size_t i = 0; i < result.size(); ++i) result[i] *= lu[i];
      return result;
    }
  }
  return {};
}

std::vector<double> query_importance(const replication_model& m,
                                     const std::vector<double>& op_importance) {
  std::vector<double> result;
  result.reserve(m.queries.size());
  for (const auto& q : m.queries) {
    double sum = 0;
    for (auto i : q.operators) sum += op_importance[i];
    result.push_back(sum / static_cast<double>(q.operators.size()));
  }
  double top = result.empty() ? 0 : *std::max_element(result.begin(), result.end());
  if (top > 0)
    for (auto& x : result) x /= top;
  return result;
}

std::vector<std::uint32_t> by_decreasing(const std::vector<double>& scores, std::uint64_t seed) {
  std::vector<std::uint32_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::vector<std::uint64_t> tie(scores.size());
  for (std::size_t i = 0; i < tie.size(); ++i) tie[i] = detail::mix(seed ^ 0x7469656bULL, i);
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    if (scores[a] != scores[b]) return scores[a] > scores[b];
    return tie[a] < tie[b];
  });
  return order;
}

}  // namespace tidemark::replication
