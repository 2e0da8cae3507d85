// The `tidemark` tool and the `tidemark-node` server as functions, so that an application ships its
// own tool and node binary with its own jobs: its main() fills a job_registry and calls one of them.
#pragma once

#include "tidemark/runtime/job_registry.hpp"

namespace tidemark {

/// The `tidemark` tool over `jobs`: `jobs`, `run`, `plan` and `keygen`, `chaos run|check`, and
/// `replication plan|simulate`. Parses the command line, runs the subcommand and returns the process exit code
/// (0 on success, 1 when the subcommand failed, CLI11's code for a usage error or --help). Errors
/// go to standard error prefixed with the program name; it does not throw.
int tool_main(int argc, char** argv, const job_registry& jobs);

/// `tidemark-node` over `jobs`: serves one host of a cluster, running whatever job of `jobs` the
/// coordinator deploys, until SIGINT or SIGTERM (it installs handlers for both). The coordinator's
/// tool must know the same jobs. Returns the process exit code like tool_main.
int node_main(int argc, char** argv, const job_registry& jobs);

}  // namespace tidemark
