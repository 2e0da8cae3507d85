// `tidemark chaos run JOB ...` and `tidemark chaos check DIR`: a job under a fault schedule,
// checked against a fault-free reference run (docs/fault-injection.md).
#pragma once

#include <CLI/CLI.hpp>

#include "tidemark/runtime/job_registry.hpp"

namespace tidemark {

/// Adds the `chaos` subcommand with `run` and `check`; they read jobs from `registry`, which must
/// outlive `app`. Both exit with code 3 when the checker found a violation or the run failed.
void add_chaos_commands(CLI::App& app, const job_registry& registry);

}  // namespace tidemark
