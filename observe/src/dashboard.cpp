// The dashboard: /api/job renders a live snapshot as JSON with rates computed here from the
// previous snapshot (so every viewer sees the same numbers), / serves the page embedded at build
// time.
#include "tidemark/observe/dashboard.hpp"

#include <map>
#include <mutex>

#include <nlohmann/json.hpp>

#include "live_totals.hpp"

namespace tidemark::observe {

namespace detail {
/// The page, observe/src/dashboard.html, embedded by CMake (dashboard_page.cpp.in).
extern const char* const dashboard_page;
}  // namespace detail

namespace {

using nlohmann::json;

/// A watermark as JSON: event-time milliseconds, null before the first, "end" after the input.
json watermark_json(event_time wm) {
  if (wm == start_of_time) return nullptr;
  if (wm == end_of_time) return "end";
  return wm;
}

json optional_json(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

/// Per second between two counters, null when there is no interval.
json rate(std::uint64_t now, std::uint64_t before, double interval) {
  if (interval <= 0) return nullptr;
  return now > before ? static_cast<double>(now - before) / interval : 0.0;
}

json instance_json(const instance_metrics& m, const live_plan::stage& stage) {
  json ops = json::array();
  for (const auto& o : m.operators)
    ops.push_back({{"name", o.name},
                   {"events_in", o.events_in},
                   {"events_out", o.events_out},
                   {"extra", o.extra}});
  return {{"instance", m.instance},
          {"node", m.instance < stage.nodes.size() ? stage.nodes[m.instance] : "?"},
          {"queued_batches", m.queued_batches},
          {"blocked_batches", m.blocked_batches},
          {"watermark", watermark_json(detail::instance_watermark(m))},
          {"busy_ns", m.busy_ns},
          {"operators", std::move(ops)}};
}

}  // namespace

std::string job_json(const live_snapshot& now, const live_snapshot* before) {
  json out;
  const auto& plan = *now.plan;
  const double interval = before ? now.seconds - before->seconds : 0;
  out["started"] = true;
  out["job"] = plan.job;
  out["seconds"] = now.seconds;
  out["finished"] = now.finished;
  out["rate_interval_s"] = interval > 0 ? json(interval) : json(nullptr);

  const auto totals = detail::per_operator(now);
  // both snapshots come from one plan, so operators match by position (names may repeat: a
  // window and its count sink can both be called "average")
  std::vector<detail::operator_totals> earlier;
  if (before && before->plan) earlier = detail::per_operator(*before);
  if (earlier.size() != totals.size()) earlier.clear();
  std::map<std::uint32_t, std::int64_t> busy_before;
  if (before)
    for (const auto& m : before->instances) busy_before[m.stage] += m.busy_ns;

  const auto sources = detail::source_stages(plan);
  const auto sinks = detail::sink_stages(plan);
  json stages = json::array();
  for (std::uint32_t st = 0; st < plan.stages.size(); ++st) {
    const auto& stage = plan.stages[st];
    json s = {{"index", st},
              {"parallelism", stage.parallelism},
              {"nodes", stage.nodes},
              {"source", sources[st]},
              {"sink", sinks[st]}};
    std::uint64_t queued = 0;
    std::uint64_t blocked = 0;
    std::int64_t busy = 0;
    json instances = json::array();
    for (const auto& m : now.instances) {
      if (m.stage != st) continue;
      queued += m.queued_batches;
      blocked += m.blocked_batches;
      busy += m.busy_ns;
      instances.push_back(instance_json(m, stage));
    }
    std::vector<bool> only(plan.stages.size(), false);
    only[st] = true;
    s["queued_batches"] = queued;
    s["blocked_batches"] = blocked;
    s["backpressure"] = blocked > 0;
    s["watermark"] = watermark_json(detail::lowest_watermark(now, only));
    // share of the interval the stage's instances spent in operator code
    s["busy"] = interval > 0 ? json(static_cast<double>(busy - busy_before[st]) /
                                    (interval * 1e9 * stage.parallelism))
                             : json(nullptr);
    json ops = json::array();
    for (std::size_t k = 0; k < totals.size(); ++k) {
      const auto& t = totals[k];
      if (t.stage != st) continue;
      const auto* b = earlier.empty() ? nullptr : &earlier[k];
      ops.push_back({{"name", t.name},
                     {"kind", t.kind},
                     {"events_in", t.events_in},
                     {"events_out", t.events_out},
                     {"in_per_s", b ? rate(t.events_in, b->events_in, interval) : json(nullptr)},
                     {"out_per_s", b ? rate(t.events_out, b->events_out, interval) : json(nullptr)},
                     {"late_events", t.late_events},
                     {"state_memory_bytes", optional_json(t.state_memory_bytes)},
                     {"state_disk_bytes", optional_json(t.state_disk_bytes)}});
    }
    s["operators"] = std::move(ops);
    s["instances"] = std::move(instances);
    stages.push_back(std::move(s));
  }
  out["stages"] = std::move(stages);

  json edges = json::array();
  for (const auto& e : plan.edges)
    edges.push_back({{"from", e.from}, {"to", e.to}, {"partitioning", e.partitioning}});
  out["edges"] = std::move(edges);

  const auto events = detail::source_events(now);
  out["events"] = events;
  out["events_per_s"] = before && before->plan
                            ? rate(events, detail::source_events(*before), interval)
                            : json(nullptr);
  out["late_events"] = detail::late_events(now);
  out["watermark"] = watermark_json(detail::lowest_watermark(now, sinks));
  // the replicas as deployed: per replicated stage instance, its primary's node and theirs
  json replicas = json::array();
  for (std::uint32_t st = 0; st < plan.stages.size(); ++st) {
    const auto& stage = plan.stages[st];
    for (std::uint32_t i = 0; i < stage.replicas.size() && i < stage.nodes.size(); ++i)
      if (!stage.replicas[i].empty())
        replicas.push_back({{"stage", st},
                            {"operator", stage.operators.front()},
                            {"instance", i},
                            {"node", stage.nodes[i]},
                            {"replicas", stage.replicas[i]}});
  }
  out["replicas"] = std::move(replicas);
  // a place for what the runtime does not report yet; the page shows it once it is filled
  out["checkpoints"] = nullptr;
  return out.dump();
}

void add_dashboard(http_server& server, std::shared_ptr<const live_view> view) {
  struct rates_state {
    std::mutex mutex;
    std::shared_ptr<const live_snapshot> last;
    std::shared_ptr<const live_snapshot> before;
  };
  auto state = std::make_shared<rates_state>();
  server.route("/api/job", [view, state] {
    auto latest = view->latest();
    if (!latest || !latest->plan) return http_reply{R"({"started":false})", "application/json"};
    std::shared_ptr<const live_snapshot> before;
    {
      std::lock_guard<std::mutex> guard{state->mutex};
      if (latest != state->last) {
        state->before = std::move(state->last);
        state->last = latest;
      }
      before = state->before;
    }
    return http_reply{job_json(*latest, before.get()), "application/json"};
  });
  server.route("/", [] { return http_reply{detail::dashboard_page, "text/html; charset=utf-8"}; });
}

}  // namespace tidemark::observe
