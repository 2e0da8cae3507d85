// The live dashboard of a running job: a JSON view of the physical plan with counters and rates
// (GET /api/job) and one self-contained page that draws it and refreshes every second (GET /).
#pragma once

#include <memory>
#include <string>

#include "tidemark/observe/http_server.hpp"
#include "tidemark/runtime/live.hpp"

namespace tidemark::observe {

/// The JSON document of /api/job for `now` (docs/guide.md, "Observing a running job", lists the
/// fields): the plan's stages and edges; per stage its instances' queues, backpressure,
/// watermark and busy share; per operator its counters summed over the instances, late events,
/// state bytes, and events per second in and out since `before` (null without an earlier
/// snapshot); `replicas` lists the replicated stage instances with their primary's node and the
/// replicas' nodes (empty when none); `checkpoints` is null: not reported yet. `now.plan` must
/// be set (a published snapshot always has it).
std::string job_json(const live_snapshot& now, const live_snapshot* before);

/// Adds `GET /` (the page, which needs no network beyond this server) and `GET /api/job`
/// (job_json of the latest snapshot of `view`, with rates since the previous snapshot a request
/// saw; `{"started": false}` before the job starts) to `server`. Call before server.start().
void add_dashboard(http_server& server, std::shared_ptr<const live_view> view);

}  // namespace tidemark::observe
