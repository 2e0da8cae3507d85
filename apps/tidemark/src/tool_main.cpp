// The `tidemark` command-line tool (tidemark::tool_main): subcommands from job_commands.cpp and
// replication_command.cpp over the registry the caller passes.
#include <iostream>

#include <CLI/CLI.hpp>

#include "job_commands.hpp"
#include "program_name.hpp"
#include "replication_command.hpp"
#include "tidemark/cli/main.hpp"

int tidemark::tool_main(int argc, char** argv, const tidemark::job_registry& registry) {
  CLI::App app{"tidemark — event-time stream processing on actors"};
  app.require_subcommand(1);
  tidemark::add_job_commands(app, registry);
  tidemark::add_replication_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << tidemark::program_name(argv) << ": " << e.what() << '\n';
    return 1;
  }
  return 0;
}
