// The run report of a job: totals per operator, the summary table and the JSON report.
#include "tidemark/core/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

namespace tidemark {

std::vector<operator_metrics> job_result::per_operator() const {
  std::vector<operator_metrics> result;
  for (const auto& inst : instances)
    for (const auto& m : inst.operators) {
      auto it = std::find_if(result.begin(), result.end(), [&](auto& r) { return r.name == m.name; });
      if (it == result.end()) {
        result.push_back(m);
        result.back().instance = 1;  // counts instances in the totals
        continue;
      }
      ++it->instance;
      it->events_in += m.events_in;
      it->events_out += m.events_out;
      it->batches_in += m.batches_in;
      it->batches_out += m.batches_out;
      it->skipped += m.skipped;
      for (auto& [k, v] : m.extra) it->extra[k] += v;
    }
  return result;
}

std::string job_result::summary() const {
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof line, "job '%s' finished in %.3f s\n", job.c_str(), seconds);
  out << line;
  std::snprintf(line, sizeof line, "%-24s %4s %14s %14s %10s %8s\n", "operator", "inst", "events in",
                "events out", "batches", "skipped");
  out << line;
  for (const auto& m : per_operator()) {
    std::snprintf(line, sizeof line, "%-24s %4u %14llu %14llu %10llu %8llu\n", m.name.c_str(),
                  m.instance, static_cast<unsigned long long>(m.events_in),
                  static_cast<unsigned long long>(m.events_out),
                  static_cast<unsigned long long>(m.batches_out),
                  static_cast<unsigned long long>(m.skipped));
    out << line;
  }
  for (const auto& inst : instances) {
    std::snprintf(line, sizeof line, "stage %u.%u busy %.1f ms, at most %llu input batches queued\n",
                  inst.stage, inst.instance, inst.busy_ns / 1e6,
                  static_cast<unsigned long long>(inst.max_queued_batches));
    out << line;
  }
  if (restored_from) out << "resumed from checkpoint " << restored_from << '\n';
  if (recoveries) out << "recovered from " << recoveries << " lost node(s)\n";
  if (!restores.empty())
    out << "restored " << restores.size() << " replica cop" << (restores.size() == 1 ? "y" : "ies")
        << ", the slowest caught up "
        << std::lround(1000 * *std::max_element(restores.begin(), restores.end()))
        << " ms after it was lost\n";
  if (!checkpoints.empty()) {
    std::vector<double> durations;
    std::uint64_t bytes = 0;
    for (const auto& c : checkpoints) {
      durations.push_back(c.duration_ms);
      bytes = std::max(bytes, c.bytes);
    }
    std::sort(durations.begin(), durations.end());
    std::snprintf(line, sizeof line,
                  "%zu checkpoints (last %llu): median %.1f ms, longest %.1f ms, largest %llu bytes\n",
                  checkpoints.size(), static_cast<unsigned long long>(checkpoints.back().id),
                  durations[durations.size() / 2], durations.back(),
                  static_cast<unsigned long long>(bytes));
    out << line;
  }
  if (failed_checkpoints)
    out << failed_checkpoints << " checkpoint(s) failed; the first: " << checkpoint_failure << '\n';
  for (const auto& w : warnings) out << "warning: " << w << '\n';
  return out.str();
}

std::string job_result::to_json() const {
  nlohmann::json doc;
  doc["job"] = job;
  doc["seconds"] = seconds;
  doc["plan"] = plan;
  doc["peak_live_batches"] = peak_live_batches;
  auto& list = doc["instances"] = nlohmann::json::array();
  for (const auto& inst : instances) {
    nlohmann::json ops = nlohmann::json::array();
    for (const auto& m : inst.operators)
      ops.push_back({{"name", m.name},
                     {"op", m.op},
                     {"instance", m.instance},
                     {"events_in", m.events_in},
                     {"events_out", m.events_out},
                     {"batches_in", m.batches_in},
                     {"batches_out", m.batches_out},
                     {"skipped", m.skipped},
                     {"extra", m.extra}});
    list.push_back({{"stage", inst.stage},
                    {"instance", inst.instance},
                    {"busy_ms", inst.busy_ns / 1e6},
                    {"max_queued_batches", inst.max_queued_batches},
                    {"operators", std::move(ops)}});
  }
  doc["restored_from"] = restored_from;
  doc["recoveries"] = recoveries;
  doc["restore_seconds"] = restores;
  auto& cps = doc["checkpoints"] = nlohmann::json::array();
  for (const auto& c : checkpoints)
    cps.push_back({{"id", c.id},
                   {"duration_ms", c.duration_ms},
                   {"alignment_ms", c.alignment_ms},
                   {"bytes", c.bytes},
                   {"pieces", c.pieces}});
  doc["failed_checkpoints"] = failed_checkpoints;
  doc["checkpoint_failure"] = checkpoint_failure;
  doc["warnings"] = warnings;
  return doc.dump(2);
}

}  // namespace tidemark
