// `tidemark status --cluster C [--insecure] [--json]`: what every node of a cluster reports, and
// the plan of the job it runs, replicas and their lag included
// (docs/replication.md#visibility-tidemark-status).
#pragma once

#include <CLI/CLI.hpp>

namespace tidemark {

/// Adds the `status` subcommand to `app`.
void add_status_command(CLI::App& app);

}  // namespace tidemark
