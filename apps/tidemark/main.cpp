// The `tidemark` command-line tool: one binary whose subcommands come from small libraries.
#include <CLI/CLI.hpp>

#include <spdlog/spdlog.h>

#include "job_commands.hpp"
#include "jobs.hpp"
#include "log_option.hpp"
#include "replication_command.hpp"

int main(int argc, char** argv) {
  tidemark::job_registry registry;
  tidemark::register_all_jobs(registry);
  CLI::App app{"tidemark — event-time stream processing on actors"};
  app.require_subcommand(1);
  tidemark::add_log_level_option(app);
  tidemark::add_job_commands(app, registry);
  tidemark::add_replication_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
}
