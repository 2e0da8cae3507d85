// `tidemark replication ...`: plan replicas for a job graph (JSON) or a running registered job,
// and run the heuristic replication paper's simulation from the command line.
#pragma once

namespace CLI {
class App;
}

namespace tidemark {

class job_registry;

/// Adds the `replication` subcommand with `plan` and `simulate` to the tool's app; `plan JOB`
/// runs jobs of `registry`, which must outlive `app`. The subcommands print to standard output
/// and throw CLI::RuntimeError (exit code 1) after printing a message on bad input.
void add_replication_commands(CLI::App& app, const job_registry& registry);

}  // namespace tidemark
