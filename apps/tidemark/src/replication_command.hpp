// `tidemark replication ...`: plan replicas for a job graph (JSON) and run the heuristic
// replication paper's simulation from the command line.
#pragma once

namespace CLI {
class App;
}

namespace tidemark {

/// Adds the `replication` subcommand with `plan` and `simulate` to the tool's app. The
/// subcommands print to standard output and throw CLI::RuntimeError (exit code 1) after
/// printing a message on bad input.
void add_replication_commands(CLI::App& app);

}  // namespace tidemark
