// Registration of the RIoTBench applications as the jobs riot-etl, riot-stats, riot-train and
// riot-pred (`tidemark run riot-etl --dataset city --scale 30`).
#pragma once

#include <string>

#include "tidemark/riot/apps/apps.hpp"

namespace tidemark {
class job_options;
class job_registry;
}  // namespace tidemark

namespace tidemark::riot::apps {

/// Adds riot-etl, riot-stats, riot-train and riot-pred. Without --broker a run starts a private
/// mosquitto on loopback (prepare) and stops it afterwards; TRAIN's prepare archives the replayed
/// stream into the table it trains from; the report step writes <out>/report.json and prints a
/// summary.
void register_jobs(job_registry& registry);

/// The job options of `a`, parsed; throws job_error naming a bad value.
app_options options_of(app a, const job_options& options);

}  // namespace tidemark::riot::apps
