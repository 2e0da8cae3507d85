// /metrics: what an observer sees of a running job (its live view) and of a cluster process's
// transport, in the Prometheus text exposition format 0.0.4. docs/observability.md lists the
// families, their labels and units.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tidemark/observe/http_server.hpp"
#include "tidemark/runtime/live.hpp"

namespace tidemark::observe {

/// The content type of the text exposition format.
inline constexpr const char* prometheus_content_type = "text/plain; version=0.0.4; charset=utf-8";

/// The exposition of `job` (null before a job started: then only the node families) and of the
/// transport counters `nodes` (a node passes its own; the coordinator's come in `job->nodes`).
/// Every family with samples appears once, with `# HELP` and `# TYPE`; counters end in `_total`;
/// times are in seconds; label values are escaped. The watermark lag is measured against `now`.
std::string render_prometheus(const live_snapshot* job, const std::vector<node_status>& nodes,
                              std::chrono::system_clock::time_point now);

/// Adds GET /metrics to `server`: the latest snapshot of `view` and, when given, what `nodes`
/// returns at the time of the scrape (called on a server thread: it must be thread-safe).
void add_metrics_route(http_server& server, std::shared_ptr<const live_view> view,
                       std::function<std::vector<node_status>()> nodes = {});

/// A started server on `listen` ("HOST:PORT", see http_server) that serves /metrics as
/// add_metrics_route does. Throws std::runtime_error naming the address when it cannot listen.
std::unique_ptr<http_server> serve_metrics(const std::string& listen,
                                           std::shared_ptr<const live_view> view,
                                           std::function<std::vector<node_status>()> nodes = {});

}  // namespace tidemark::observe
