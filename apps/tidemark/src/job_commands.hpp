// `tidemark jobs`, `tidemark run JOB [options]` and `tidemark plan JOB [--dot] [options]`.
#pragma once

#include <CLI/CLI.hpp>

#include "tidemark/runtime/job_registry.hpp"

namespace tidemark {

/// Adds the job subcommands to `app`; they read jobs from `registry`, which must outlive `app`.
void add_job_commands(CLI::App& app, const job_registry& registry);

}  // namespace tidemark
