// The `tidemark` command-line tool: one binary whose subcommands come from small libraries.
#include <iostream>

#include <CLI/CLI.hpp>

#include "job_commands.hpp"
#include "jobs.hpp"
#include "replication_command.hpp"

int main(int argc, char** argv) {
  tidemark::job_registry registry;
  tidemark::register_all_jobs(registry);
  CLI::App app{"tidemark — event-time stream processing on actors"};
  app.require_subcommand(1);
  tidemark::add_job_commands(app, registry);
  tidemark::add_replication_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << "tidemark: " << e.what() << '\n';
    return 1;
  }
}
