// Hand-made live snapshots of a small job for the observers' tests: a source stage (readings ->
// stamp) keyed into a window stage of two instances (window -> counts).
#pragma once

#include <memory>

#include "tidemark/runtime/live.hpp"

namespace tidemark::test {

inline std::shared_ptr<const live_plan> window_job_plan() {
  auto p = std::make_shared<live_plan>();
  p->job = "window-job";
  p->stages.push_back({{"readings", "stamp"}, {"source", "assign_timestamps"}, 1, {"local"}});
  p->stages.push_back({{"window", "counts"}, {"window", "count"}, 2, {"local", "node-b"}});
  p->edges.push_back({0, 1, "key"});
  return p;
}

inline operator_metrics op(const std::string& name, std::uint64_t in, std::uint64_t out,
                           std::map<std::string, double> extra = {}) {
  operator_metrics m;
  m.name = name;
  m.events_in = in;
  m.events_out = out;
  m.extra = std::move(extra);
  return m;
}

inline instance_metrics instance(std::uint32_t stage, std::uint32_t index,
                                 std::vector<operator_metrics> ops, event_time watermark) {
  instance_metrics m;
  m.stage = stage;
  m.instance = index;
  m.operators = std::move(ops);
  m.watermark = watermark;
  return m;
}

}  // namespace tidemark::test
