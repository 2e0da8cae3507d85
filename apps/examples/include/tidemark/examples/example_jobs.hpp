// Small registered example jobs: what `tidemark run` runs when no application is installed, and
// what distributed tests use to compare cluster runs with embedded ones.
#pragma once

#include "tidemark/runtime/job_registry.hpp"

namespace tidemark::examples {

/// Registers `example-window-count` (a keyed tumbling-window count over a seeded generator),
/// `example-late-windows` (late re-firings, tiered state, a WiredTiger table sink) and
/// `example-queries` (many queries sharing operators).
void register_jobs(job_registry& registry);
/// Registers `example-late-windows` only.
void register_late_windows(job_registry& registry);
/// Registers `example-queries` only.
void register_queries(job_registry& registry);

}  // namespace tidemark::examples
