// Timezone analysis: downstream closures of delayed operators, their input edges and nesting.
#include "tidemark/core/timezones.hpp"

#include <algorithm>
#include <sstream>

namespace tidemark {

bool timezone::contains(node_id n) const {
  return std::binary_search(members.begin(), members.end(), n);
}

namespace {

/// Nodes reachable from `start`'s consumers (every edge, feedback included); `start` itself only
/// when a path leads back to it.
std::vector<bool> downstream(const logical_graph& g, node_id start) {
  std::vector<std::vector<node_id>> out(g.nodes().size());
  for (const auto& n : g.nodes())
    for (const auto& e : n.inputs) out[e.from].push_back(n.id);
  std::vector<bool> seen(g.nodes().size());
  std::vector<node_id> todo = out[start];
  while (!todo.empty()) {
    auto n = todo.back();
    todo.pop_back();
    if (seen[n]) continue;
    seen[n] = true;
    todo.insert(todo.end(), out[n].begin(), out[n].end());
  }
  return seen;
}

}  // namespace

std::vector<timezone> find_timezones(const logical_graph& g) {
  std::vector<timezone> zones;
  for (const auto& d : g.nodes()) {
    if (!d.delayed) continue;
    auto inside = downstream(g, d.id);
    timezone z;
    z.id = static_cast<std::uint32_t>(zones.size());
    z.origin = d.id;
    z.origin_inside = inside[d.id];
    for (const auto& n : g.nodes()) {
      if (!inside[n.id]) continue;
      z.members.push_back(n.id);
      for (std::uint32_t i = 0; i < n.inputs.size(); ++i) {
        const auto& e = n.inputs[i];
        if (!inside[e.from] || e.feedback) z.inputs.push_back({e.from, n.id, i, e.feedback});
      }
    }
    zones.push_back(std::move(z));
  }
  // The parent is the smallest other timezone holding the origin; equal sizes (two delayed
  // operators on one cycle) nest the later one in the earlier one.
  for (auto& z : zones) {
    const timezone* best = nullptr;
    for (const auto& o : zones) {
      if (o.id == z.id || !o.contains(z.origin)) continue;
      bool bigger = o.members.size() > z.members.size() ||
                    (o.members.size() == z.members.size() && o.id < z.id);
      if (bigger && (!best || o.members.size() < best->members.size())) best = &o;
    }
    if (best) z.parent = best->id;
  }
  return zones;
}

std::string describe(const logical_graph& g, const std::vector<timezone>& zones) {
  std::ostringstream out;
  for (const auto& z : zones) {
    out << "timezone " << z.id << " of '" << g.node(z.origin).name << "'"
        << (z.origin_inside ? " (on a cycle, inside)" : "") << ":";
    for (auto m : z.members) out << ' ' << g.node(m).name;
    out << " | synchronized inputs:";
    for (const auto& in : z.inputs)
      out << ' ' << g.node(in.from).name << "->" << g.node(in.to).name << '#' << in.input
          << (in.feedback ? "(feedback)" : "");
    if (z.parent) out << " | inside timezone " << *z.parent;
    out << '\n';
  }
  return out.str();
}

}  // namespace tidemark
