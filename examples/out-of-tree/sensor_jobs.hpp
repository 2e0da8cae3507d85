// The jobs of this application, registered by name so that its tool and its node binary can
// build and run them from a name and options.
#pragma once

#include "tidemark/runtime/job_registry.hpp"

namespace sensors {

/// Registers `sensor-window-count`: readings of `--keys` sensors, one per millisecond of event
/// time, counted per sensor in tumbling windows of `--window-ms`.
void register_jobs(tidemark::job_registry& jobs);

}  // namespace sensors
