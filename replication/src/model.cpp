// Validation, the load model and primary placement of the replication model.
#include "tidemark/replication/model.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tidemark::replication {

namespace {

bool non_negative(double x) { return std::isfinite(x) && x >= 0; }

std::string op_name(const replication_model& m, op_index i) {
  return "operator '" + m.operators[i].name + "'";
}

}  // namespace

std::optional<std::string> validate(const replication_model& m) {
  if (m.hosts.empty()) return "the model has no hosts: add at least one";
  for (const auto& h : m.hosts) {
    if (!non_negative(h.cpu_capacity))
      return "host '" + h.name + "' has CPU capacity " + std::to_string(h.cpu_capacity) +
             ": use a finite number >= 0";
    if (!(h.net_capacity >= 0))
      return "host '" + h.name + "' has negative network capacity";
  }
  if (m.primary.size() != m.operators.size())
    return "the placement names " + std::to_string(m.primary.size()) + " hosts for " +
           std::to_string(m.operators.size()) + " operators: place every operator once";
  for (op_index i = 0; i < m.operators.size(); ++i) {
    const auto& op = m.operators[i];
    for (const auto& e : op.inputs) {
      if (e.from >= i)
        return op_name(m, i) + " reads from operator #" + std::to_string(e.from) +
               ", which does not come before it: list operators in data-flow order";
      if (!non_negative(e.share) || e.share > 1)
        return op_name(m, i) + " has an input share outside [0, 1]";
    }
    if (!non_negative(op.source_rate) || !non_negative(op.cost) ||
        !non_negative(op.selectivity) || !non_negative(op.bytes_in) ||
        !non_negative(op.bytes_out))
      return op_name(m, i) +
             " has a negative or non-finite rate, cost, selectivity or tuple size";
    if ((op.measured_load && !non_negative(*op.measured_load)) ||
        (op.measured_input_rate && !non_negative(*op.measured_input_rate)))
      return op_name(m, i) + " has a negative or non-finite measurement";
    if (m.primary[i] >= m.hosts.size())
      return op_name(m, i) + " is placed on host #" + std::to_string(m.primary[i]) +
             ", but there are only " + std::to_string(m.hosts.size()) + " hosts";
  }
  if (!m.replicas.empty()) {
    if (m.replicas.size() != m.operators.size())
      return "the running replicas are listed for " + std::to_string(m.replicas.size()) +
             " operators, but there are " + std::to_string(m.operators.size());
    for (op_index i = 0; i < m.operators.size(); ++i)
      for (auto h : m.replicas[i])
        if (h >= m.hosts.size() || h == m.primary[i])
          return op_name(m, i) + " has a replica on host #" + std::to_string(h) +
                 ", which does not exist or holds its primary";
  }
  if (m.queries.empty()) return "the model has no queries: every job needs a sink";
  for (const auto& q : m.queries) {
    if (q.operators.empty()) return "query '" + q.name + "' has no operators";
    if (!std::is_sorted(q.operators.begin(), q.operators.end()) ||
        std::adjacent_find(q.operators.begin(), q.operators.end()) != q.operators.end())
      return "query '" + q.name + "' lists its operators out of order or twice";
    if (q.operators.back() >= m.operators.size())
      return "query '" + q.name + "' names operator #" + std::to_string(q.operators.back()) +
             ", but there are only " + std::to_string(m.operators.size()) + " operators";
  }
  return std::nullopt;
}

void apply_load_model(replication_model& m) {
  for (auto& op : m.operators) {
    double rate = op.source_rate;
    if (!op.inputs.empty()) {
      rate = 0;
      for (const auto& e : op.inputs) rate += m.operators[e.from].output_rate * e.share;
    }
    op.input_rate = op.measured_input_rate.value_or(rate);
    op.output_rate = op.input_rate * op.selectivity;
    op.load = op.measured_load.value_or(op.cost * op.input_rate);
    op.net_in = op.input_rate * op.bytes_in;
    op.net_out = op.output_rate * op.bytes_out;
  }
}

std::vector<std::vector<op_index>> consumers(const std::vector<operator_info>& ops) {
  std::vector<std::vector<op_index>> result(ops.size());
  for (op_index i = 0; i < ops.size(); ++i)
    for (const auto& e : ops[i].inputs)
      if (result[e.from].empty() || result[e.from].back() != i) result[e.from].push_back(i);
  return result;
}

query upstream_query(const std::vector<operator_info>& ops, const std::vector<op_index>& sinks,
                     std::string name) {
  // Inputs always come first, so one backward sweep marks everything upstream.
  std::vector<char> upstream(ops.size());
  op_index last = 0;
  for (auto s : sinks) {
    upstream.at(s) = 1;
    last = std::max(last, s);
  }
  query q{std::move(name), {}};
  for (op_index i = sinks.empty() ? 0 : last + 1; i-- > 0;) {
    if (!upstream[i]) continue;
    q.operators.push_back(i);
    for (const auto& e : ops[i].inputs) upstream[e.from] = 1;
  }
  std::reverse(q.operators.begin(), q.operators.end());
  return q;
}

std::vector<query> queries_from_sinks(const std::vector<operator_info>& ops) {
  auto readers = consumers(ops);
  std::vector<query> result;
  for (op_index i = 0; i < ops.size(); ++i)
    if (readers[i].empty()) result.push_back(upstream_query(ops, {i}, ops[i].name));
  return result;
}

std::vector<std::uint32_t> query_degree(const replication_model& m) {
  std::vector<std::uint32_t> deg(m.operators.size());
  for (const auto& q : m.queries)
    for (auto i : q.operators) ++deg[i];
  return deg;
}

void place_primaries(replication_model& m) {
  std::vector<op_index> order(m.operators.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](op_index a, op_index b) {
    return m.operators[a].load > m.operators[b].load;
  });
  std::vector<double> used(m.hosts.size());
  m.primary.assign(m.operators.size(), 0);
  auto relative = [&](host_index h) {
    double cap = m.hosts[h].cpu_capacity;
    return cap > 0 ? used[h] / cap : std::numeric_limits<double>::infinity();
  };
  for (auto i : order) {
    host_index best = 0;
    for (host_index h = 1; h < m.hosts.size(); ++h)
      if (relative(h) < relative(best)) best = h;
    m.primary[i] = best;
    used[best] += m.operators[i].load;
  }
}

double total_load(const replication_model& m) {
  double sum = 0;
  for (const auto& op : m.operators) sum += op.load;
  return sum;
}

}  // namespace tidemark::replication
