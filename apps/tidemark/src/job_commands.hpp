// `tidemark jobs`, `tidemark run JOB [options]` and `tidemark plan JOB [--dot] [options]`, the
// job positional that `tidemark chaos run` shares, and the cluster file check of
// `tidemark status`.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "tidemark/runtime/cluster.hpp"
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

/// Throws unless `--insecure` (`insecure`) and the cluster file's `insecure: true` go together:
/// plain text needs both the nodes' consent and the user's.
void confirm_insecure(const cluster_config& cluster, bool insecure);

/// Adds the job subcommands to `app`; they read jobs from `registry`, which must outlive `app`.
void add_job_commands(CLI::App& app, const job_registry& registry);

}  // namespace tidemark
