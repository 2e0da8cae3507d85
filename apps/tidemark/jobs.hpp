// Every job the shipped `tidemark` tool and `tidemark-node` can run, registered by name.
#pragma once

#include "tidemark/runtime/job_registry.hpp"

namespace tidemark {

/// Registers the jobs of every application built into this binary.
void register_all_jobs(job_registry& registry);

}  // namespace tidemark
