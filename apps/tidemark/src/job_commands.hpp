// `tidemark jobs`, `tidemark run JOB [options]` and `tidemark plan JOB [--dot] [options]`, and the
// job positional that `tidemark chaos run` shares.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "tidemark/runtime/job_registry.hpp"

namespace tidemark {

/// A registered job's name and the arguments after it, which belong to the job.
struct job_invocation {
  std::string name;
  std::vector<std::string> args;
};

/// Adds the job name as the required positional of `cmd` and leaves everything after it to the
/// job (`cmd.remaining()`, for parse_job_arguments).
void add_job_positional(CLI::App& cmd, job_invocation& inv);

/// Adds the job subcommands to `app`; they read jobs from `registry`, which must outlive `app`.
void add_job_commands(CLI::App& app, const job_registry& registry);

}  // namespace tidemark
