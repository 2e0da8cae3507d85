// `tidemark status --cluster C [--insecure] [--json]`: what every node of a cluster reports, and
// the plan of the job it runs, replicas and their lag included
// (docs/replication.md#visibility-tidemark-status).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "tidemark/runtime/cluster_status.hpp"

namespace tidemark {

/// The status as text for a terminal, and as JSON (`--json`).
std::string status_text(const cluster_status& s);
std::string status_json(const cluster_status& s);

/// Adds the `status` subcommand to `app`.
void add_status_command(CLI::App& app);

}  // namespace tidemark
