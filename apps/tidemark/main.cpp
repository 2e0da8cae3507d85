// The `tidemark` command-line tool: one binary whose subcommands come from small libraries.
#include <iostream>

#include <CLI/CLI.hpp>

#include "replication_command.hpp"

int main(int argc, char** argv) {
  CLI::App app{"tidemark — event-time stream processing on actors"};
  app.require_subcommand(1);
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
