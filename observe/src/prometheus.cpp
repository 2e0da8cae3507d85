// The Prometheus text exposition of a live view (see prometheus.hpp). Families are declared in the
// order they are printed; samples are collected per family, so every family appears once even
// though the snapshot is walked instance by instance.
#include "tidemark/observe/prometheus.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <utility>

#include "tidemark/core/operator.hpp"

namespace tidemark::observe {
namespace {

using labels = std::vector<std::pair<const char*, std::string>>;

enum class kind { counter, gauge };

struct family {
  const char* name;
  kind type;
  const char* help;
  std::string samples;
};

/// `\`, `"` and newline escaped, as label values need.
std::string escape_label(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

/// Integers as integers; other values in the shortest of 15 or 17 digits that reads back equal.
std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[40];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "%.15g", v);
  if (std::strtod(buf, nullptr) != v) std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

class exposition {
 public:
  /// Declares a family; families print in declaration order, those without samples not at all.
  void declare(const char* name, kind type, const char* help) {
    index_[name] = families_.size();
    families_.push_back({name, type, help, {}});
  }

  void sample(const char* name, const labels& ls, double value) {
    auto& f = families_.at(index_.at(name));
    f.samples += f.name;
    if (!ls.empty()) {
      f.samples += '{';
      for (std::size_t i = 0; i < ls.size(); ++i) {
        if (i) f.samples += ',';
        f.samples += ls[i].first;
        f.samples += "=\"";
        f.samples += escape_label(ls[i].second);
        f.samples += '"';
      }
      f.samples += '}';
    }
    f.samples += ' ';
    f.samples += format_value(value);
    f.samples += '\n';
  }

  std::string text() const {
    std::string out;
    for (const auto& f : families_) {
      if (f.samples.empty()) continue;
      // help texts are ours: no backslash or newline to escape
      out += std::string{"# HELP "} + f.name + ' ' + f.help + '\n';
      out +=
          std::string{"# TYPE "} + f.name + (f.type == kind::counter ? " counter\n" : " gauge\n");
      out += f.samples;
    }
    return out;
  }

 private:
  std::vector<family> families_;
  std::map<std::string, std::size_t> index_;
};

/// An operator-specific value (operator_logic::add_metrics) with a family of its own. Values in
/// milliseconds are scaled to seconds.
struct extra_family {
  const char* name;
  kind type;
  double scale;
  const char* help;
};

const std::map<std::string, extra_family>& extra_families() {
  static const std::map<std::string, extra_family> known{
      {"watermark_lag",
       {"tidemark_operator_watermark_holdback_seconds", kind::gauge, 1e-3,
        "How far the operator's watermark trails the newest event time it saw (event time)."}},
      {"late_events_accepted",
       {"tidemark_operator_late_events_accepted_total", kind::counter, 1,
        "Late events a window operator still added to their window (within the allowed "
        "lateness)."}},
      {"late_events_dropped",
       {"tidemark_operator_late_events_dropped_total", kind::counter, 1,
        "Late events beyond the allowed lateness (sent to the late output or dropped)."}},
      {"window_results",
       {"tidemark_operator_window_results_total", kind::counter, 1,
        "Window results emitted, revisions included."}},
      {"window_state_bytes",
       {"tidemark_operator_window_state_bytes", kind::gauge, 1,
        "Memory of the window operator's in-memory window tables."}},
      {"state_memory_bytes",
       {"tidemark_operator_tier_memory_bytes", kind::gauge, 1,
        "Tiered window state: bytes of events held in memory."}},
      {"state_memory_events",
       {"tidemark_operator_tier_memory_events", kind::gauge, 1,
        "Tiered window state: events held in memory."}},
      {"state_disk_bytes",
       {"tidemark_operator_tier_disk_bytes", kind::gauge, 1,
        "Tiered window state: bytes of durable blocks on disk."}},
      {"state_disk_events",
       {"tidemark_operator_tier_disk_events", kind::gauge, 1,
        "Tiered window state: events in durable blocks on disk."}},
      {"state_write_blocks",
       {"tidemark_operator_tier_written_blocks_total", kind::counter, 1,
        "Tiered window state: blocks written for overflow and late events."}},
      {"state_destage_blocks",
       {"tidemark_operator_tier_destaged_blocks_total", kind::counter, 1,
        "Tiered window state: blocks written when windows were destaged."}},
      {"state_stages",
       {"tidemark_operator_tier_stagings_total", kind::counter, 1,
        "Tiered window state: windows staged back from disk (pre-staged or on demand)."}},
      {"state_prestage_hits",
       {"tidemark_operator_tier_prestage_hits_total", kind::counter, 1,
        "Tiered window state: re-executions that found their window staged."}},
      {"state_prestage_misses",
       {"tidemark_operator_tier_prestage_misses_total", kind::counter, 1,
        "Tiered window state: re-executions that waited for their window's staging."}},
      {"state_io_wait_ms",
       {"tidemark_operator_tier_io_wait_seconds_total", kind::counter, 1e-3,
        "Tiered window state: time re-executions waited for disk reads."}},
      {"state_blocks_lost",
       {"tidemark_operator_tier_lost_blocks_total", kind::counter, 1,
        "Tiered window state: blocks that could not be read back."}},
      {"state_blocks_corrupt",
       {"tidemark_operator_tier_corrupt_blocks_total", kind::counter, 1,
        "Tiered window state: blocks that failed their checksum."}},
      {"state_write_errors",
       {"tidemark_operator_tier_write_errors_total", kind::counter, 1,
        "Tiered window state: block writes that failed."}},
      {"state_snapshot_block_reads",
       {"tidemark_operator_tier_snapshot_block_reads_total", kind::counter, 1,
        "Tiered window state: blocks checkpoints read back from disk."}},
      {"async_completed",
       {"tidemark_operator_async_completed_total", kind::counter, 1,
        "Asynchronous calls completed by the operator."}},
  };
  return known;
}

/// Event time in ms as seconds: nullopt before the first watermark, +Inf at the end of time.
std::optional<double> watermark_seconds(double ms) {
  if (ms <= static_cast<double>(start_of_time)) return std::nullopt;
  if (ms >= static_cast<double>(end_of_time)) return INFINITY;
  return ms / 1000;
}

/// Watermarks are event time, which need not be wall-clock time (synthetic or replayed streams
/// start anywhere). Only a watermark between a week before and an hour after `now` is taken for
/// wall-clock time; the lag of any other would mean nothing.
bool plausible_wall_clock(double wm_seconds, double now_seconds) {
  return wm_seconds >= now_seconds - 7 * 24 * 3600 && wm_seconds <= now_seconds + 3600;
}

void declare_families(exposition& e) {
  e.declare("tidemark_job_elapsed_seconds", kind::gauge, "Seconds since the job started.");
  e.declare("tidemark_job_finished", kind::gauge,
            "1 when every stage instance reported done (the counters are final), else 0.");
  e.declare("tidemark_operator_events_in_total", kind::counter,
            "Events an operator instance received.");
  e.declare("tidemark_operator_events_out_total", kind::counter,
            "Events an operator instance emitted, on all its outputs.");
  e.declare("tidemark_operator_batches_in_total", kind::counter,
            "Batches an operator instance received.");
  e.declare("tidemark_operator_batches_out_total", kind::counter,
            "Batches an operator instance emitted.");
  e.declare("tidemark_operator_skipped_events_total", kind::counter,
            "Events dropped under error_policy::skip because the user function failed on them.");
  e.declare("tidemark_operator_watermark_seconds", kind::gauge,
            "The operator's own watermark (event time in seconds; +Inf once its input ended).");
  for (const auto& [key, f] : extra_families()) e.declare(f.name, f.type, f.help);
  e.declare("tidemark_operator_metric", kind::gauge,
            "Operator-specific values without a family of their own (operator_logic::add_metrics), "
            "by name; the name says the unit.");
  e.declare("tidemark_stage_busy_seconds_total", kind::counter,
            "Time a stage instance spent running operator code.");
  e.declare("tidemark_stage_queued_batches", kind::gauge,
            "Input batches waiting in a stage instance's inbox.");
  e.declare("tidemark_stage_max_queued_batches", kind::gauge,
            "Most input batches that waited in a stage instance's inbox at once so far.");
  e.declare("tidemark_stage_blocked_batches", kind::gauge,
            "Sealed output batches waiting for credit (above 0: a receiver holds the stage back).");
  e.declare(
      "tidemark_stage_watermark_seconds", kind::gauge,
      "Highest watermark a stage instance passed on (event time in seconds; +Inf at the end).");
  e.declare("tidemark_stage_watermark_lag_seconds", kind::gauge,
            "Wall-clock time minus the stage's watermark, only when the watermark is within a week "
            "before the wall clock (otherwise event time is not wall-clock time).");
  // Checkpoint figures (count, duration, size, last completed) get tidemark_checkpoint_* families
  // here once checkpoints exist; the live snapshot will carry them.
  e.declare("tidemark_node_frames_in_total", kind::counter,
            "Frames a cluster process accepted (node: control and data; coordinator: control).");
  e.declare("tidemark_node_bad_frames_total", kind::counter,
            "Frames dropped because they failed verification or decoding.");
  e.declare("tidemark_node_refused_peers_total", kind::counter,
            "Connections the node's ZAP handler refused (unknown CURVE key).");
  e.declare("tidemark_node_lost_frames_total", kind::counter,
            "Incoming data frames that arrived ahead of a missing one and waited for it.");
  e.declare("tidemark_node_oversized_frames_total", kind::counter,
            "Frames above the node's size limit (refused, or the connection ZeroMQ dropped).");
  e.declare("tidemark_node_refused_control_total", kind::counter,
            "Control messages refused because they did not come from the coordinator's key.");
  e.declare("tidemark_node_refused_data_total", kind::counter,
            "Data frames refused because they came from a node that does not own the channel.");
  e.declare("tidemark_node_fault_dropped_frames_total", kind::counter,
            "Frames the node dropped on purpose: injected drops and partitions.");
  e.declare("tidemark_node_fault_duplicated_frames_total", kind::counter,
            "Frames the node sent twice on purpose (injected faults).");
  e.declare("tidemark_node_fault_reordered_frames_total", kind::counter,
            "Frames the node held back behind the next one on purpose (injected faults).");
  e.declare("tidemark_node_retransmitted_frames_total", kind::counter,
            "Data frames the node sent again because they were not acknowledged in time.");
  e.declare("tidemark_node_duplicate_frames_total", kind::counter,
            "Data frames the node received again and dropped.");
  e.declare("tidemark_node_data_in_bytes_total", kind::counter,
            "Bytes of frames the node accepted on its data socket.");
  e.declare("tidemark_node_batch_frames_in_total", kind::counter,
            "Accepted data frames that carried a batch.");
  e.declare("tidemark_node_batch_in_bytes_total", kind::counter,
            "Bytes of accepted data frames that carried a batch.");
}

void render_job(exposition& e, const live_snapshot& s, double now_seconds) {
  const auto& plan = *s.plan;
  e.sample("tidemark_job_elapsed_seconds", {{"job", plan.job}}, s.seconds);
  e.sample("tidemark_job_finished", {{"job", plan.job}}, s.finished ? 1 : 0);
  for (const auto& inst : s.instances) {
    if (inst.stage >= plan.stages.size()) continue;  // not of this plan: nothing to name it by
    const auto& stage = plan.stages[inst.stage];
    const auto node = inst.instance < stage.nodes.size() ? stage.nodes[inst.instance] : "local";
    const auto stage_id = std::to_string(inst.stage);
    const auto instance_id = std::to_string(inst.instance);
    for (const auto& op : inst.operators) {
      labels ls{{"job", plan.job},
                {"stage", stage_id},
                {"operator", op.name},
                {"instance", instance_id},
                {"node", node}};
      e.sample("tidemark_operator_events_in_total", ls, static_cast<double>(op.events_in));
      e.sample("tidemark_operator_events_out_total", ls, static_cast<double>(op.events_out));
      e.sample("tidemark_operator_batches_in_total", ls, static_cast<double>(op.batches_in));
      e.sample("tidemark_operator_batches_out_total", ls, static_cast<double>(op.batches_out));
      e.sample("tidemark_operator_skipped_events_total", ls, static_cast<double>(op.skipped));
      for (const auto& [key, value] : op.extra) {
        if (key == "watermark") {
          if (auto wm = watermark_seconds(value))
            e.sample("tidemark_operator_watermark_seconds", ls, *wm);
        } else if (auto known = extra_families().find(key); known != extra_families().end()) {
          e.sample(known->second.name, ls, value * known->second.scale);
        } else {
          auto named = ls;
          named.emplace_back("name", key);
          e.sample("tidemark_operator_metric", named, value);
        }
      }
    }
    // a stage is named by its first operator, which reads its inputs
    labels ls{{"job", plan.job},
              {"stage", stage_id},
              {"operator", stage.operators.empty() ? std::string{} : stage.operators.front()},
              {"instance", instance_id},
              {"node", node}};
    e.sample("tidemark_stage_busy_seconds_total", ls, static_cast<double>(inst.busy_ns) / 1e9);
    e.sample("tidemark_stage_queued_batches", ls, static_cast<double>(inst.queued_batches));
    e.sample("tidemark_stage_max_queued_batches", ls, static_cast<double>(inst.max_queued_batches));
    e.sample("tidemark_stage_blocked_batches", ls, static_cast<double>(inst.blocked_batches));
    auto wm = watermark_seconds(static_cast<double>(inst.watermark));
    if (!wm) continue;
    e.sample("tidemark_stage_watermark_seconds", ls, *wm);
    if (plausible_wall_clock(*wm, now_seconds))
      e.sample("tidemark_stage_watermark_lag_seconds", ls, now_seconds - *wm);
  }
}

void render_node(exposition& e, const node_status& n) {
  labels ls{{"node", n.node}};
  e.sample("tidemark_node_frames_in_total", ls, static_cast<double>(n.frames_in));
  e.sample("tidemark_node_bad_frames_total", ls, static_cast<double>(n.bad_frames));
  e.sample("tidemark_node_refused_peers_total", ls, static_cast<double>(n.refused_peers));
  e.sample("tidemark_node_lost_frames_total", ls, static_cast<double>(n.lost_frames));
  e.sample("tidemark_node_oversized_frames_total", ls, static_cast<double>(n.oversized_frames));
  e.sample("tidemark_node_refused_control_total", ls, static_cast<double>(n.refused_control));
  e.sample("tidemark_node_refused_data_total", ls, static_cast<double>(n.refused_data));
  e.sample("tidemark_node_fault_dropped_frames_total", ls, static_cast<double>(n.fault_dropped));
  e.sample("tidemark_node_fault_duplicated_frames_total", ls,
           static_cast<double>(n.fault_duplicated));
  e.sample("tidemark_node_fault_reordered_frames_total", ls,
           static_cast<double>(n.fault_reordered));
  e.sample("tidemark_node_retransmitted_frames_total", ls, static_cast<double>(n.retransmitted));
  e.sample("tidemark_node_duplicate_frames_total", ls,
           static_cast<double>(n.duplicates_discarded));
  e.sample("tidemark_node_data_in_bytes_total", ls, static_cast<double>(n.data_bytes_in));
  e.sample("tidemark_node_batch_frames_in_total", ls, static_cast<double>(n.batch_frames_in));
  e.sample("tidemark_node_batch_in_bytes_total", ls, static_cast<double>(n.batch_bytes_in));
}

}  // namespace

std::string render_prometheus(const live_snapshot* job, const std::vector<node_status>& nodes,
                              std::chrono::system_clock::time_point now) {
  exposition e;
  declare_families(e);
  const double now_seconds = std::chrono::duration<double>(now.time_since_epoch()).count();
  if (job && job->plan) {
    render_job(e, *job, now_seconds);
    for (const auto& n : job->nodes) render_node(e, n);
  }
  for (const auto& n : nodes) render_node(e, n);
  return e.text();
}

void add_metrics_route(http_server& server, std::shared_ptr<const live_view> view,
                       std::function<std::vector<node_status>()> nodes) {
  server.route("/metrics", [view = std::move(view), nodes = std::move(nodes)] {
    auto snapshot = view ? view->latest() : nullptr;
    auto text = render_prometheus(snapshot.get(), nodes ? nodes() : std::vector<node_status>{},
                                  std::chrono::system_clock::now());
    return http_reply{std::move(text), prometheus_content_type};
  });
}

std::unique_ptr<http_server> serve_metrics(const std::string& listen,
                                           std::shared_ptr<const live_view> view,
                                           std::function<std::vector<node_status>()> nodes) {
  auto server = std::make_unique<http_server>(listen);
  add_metrics_route(*server, std::move(view), std::move(nodes));
  server->start();
  return server;
}

}  // namespace tidemark::observe
