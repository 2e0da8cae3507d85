// Totals over live snapshots shared by the dashboard and the progress line.
#include "live_totals.hpp"

#include <algorithm>

namespace tidemark::observe::detail {

namespace {

double extra_or(const operator_metrics& m, const char* key, double fallback) {
  auto at = m.extra.find(key);
  return at == m.extra.end() ? fallback : at->second;
}

void add(std::optional<double>& total, const operator_metrics& m, const char* key) {
  auto at = m.extra.find(key);
  if (at != m.extra.end()) total = total.value_or(0) + at->second;
}

std::vector<bool> stages_without(const live_plan& p, bool inbound) {
  std::vector<bool> out(p.stages.size(), true);
  for (const auto& e : p.edges) {
    auto s = inbound ? e.to : e.from;
    if (s < out.size()) out[s] = false;
  }
  return out;
}

}  // namespace

std::vector<operator_totals> per_operator(const live_snapshot& s) {
  std::vector<operator_totals> out;
  if (!s.plan) return out;
  std::vector<std::size_t> first_of_stage;
  for (std::uint32_t st = 0; st < s.plan->stages.size(); ++st) {
    const auto& stage = s.plan->stages[st];
    first_of_stage.push_back(out.size());
    for (std::size_t k = 0; k < stage.operators.size(); ++k) {
      auto& t = out.emplace_back();
      t.stage = st;
      t.name = stage.operators[k];
      t.kind = stage.kinds[k];
    }
  }
  for (const auto& inst : s.instances) {
    if (inst.stage >= first_of_stage.size()) continue;
    const auto count = s.plan->stages[inst.stage].operators.size();
    // an instance reports its operators in the stage's order
    for (std::size_t k = 0; k < std::min(count, inst.operators.size()); ++k) {
      const auto& m = inst.operators[k];
      auto& t = out[first_of_stage[inst.stage] + k];
      t.events_in += m.events_in;
      t.events_out += m.events_out;
      t.late_events += static_cast<std::uint64_t>(extra_or(m, "late_events_accepted", 0) +
                                                  extra_or(m, "late_events_dropped", 0));
      add(t.state_memory_bytes, m, "window_state_bytes");
      add(t.state_disk_bytes, m, "state_disk_bytes");
    }
  }
  return out;
}

std::vector<bool> source_stages(const live_plan& p) {
  return stages_without(p, true);
}
std::vector<bool> sink_stages(const live_plan& p) {
  return stages_without(p, false);
}

std::uint64_t source_events(const live_snapshot& s) {
  if (!s.plan) return 0;
  const auto sources = source_stages(*s.plan);
  std::uint64_t n = 0;
  for (const auto& inst : s.instances)
    if (inst.stage < sources.size() && sources[inst.stage] && !inst.operators.empty())
      n += inst.operators.front().events_out;
  return n;
}

std::uint64_t late_events(const live_snapshot& s) {
  std::uint64_t n = 0;
  for (const auto& t : per_operator(s)) n += t.late_events;
  return n;
}

event_time instance_watermark(const instance_metrics& m) {
  if (m.watermark != start_of_time) return m.watermark;
  for (auto op = m.operators.rbegin(); op != m.operators.rend(); ++op) {
    auto at = op->extra.find("watermark");
    if (at == op->extra.end()) continue;
    // extra counters are doubles: the ends of time round to +-2^63, outside int64 at the top
    if (at->second >= static_cast<double>(end_of_time)) return end_of_time;
    if (at->second <= static_cast<double>(start_of_time)) return start_of_time;
    return static_cast<event_time>(at->second);
  }
  return start_of_time;
}

event_time lowest_watermark(const live_snapshot& s, const std::vector<bool>& stages) {
  auto lowest = end_of_time;
  std::vector<std::uint32_t> answered(stages.size(), 0);
  for (const auto& inst : s.instances) {
    if (inst.stage >= stages.size() || !stages[inst.stage]) continue;
    lowest = std::min(lowest, instance_watermark(inst));
    ++answered[inst.stage];
  }
  // an instance that has not answered yet holds the watermark back
  for (std::size_t st = 0; st < stages.size(); ++st)
    if (stages[st] && s.plan && answered[st] < s.plan->stages[st].parallelism) return start_of_time;
  return lowest;
}

}  // namespace tidemark::observe::detail
