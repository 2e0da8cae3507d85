// The `tidemark` command-line tool (tidemark::tool_main): subcommands from job_commands.cpp,
// replication_command.cpp, chaos_command.cpp and status_command.cpp over the registry the caller
// passes.
#include <CLI/CLI.hpp>

#include <spdlog/spdlog.h>

#include "chaos_command.hpp"
#include "job_commands.hpp"
#include "log_option.hpp"
#include "replication_command.hpp"
#include "status_command.hpp"
#include "tidemark/cli/main.hpp"
#include "tidemark/runtime/heap.hpp"

int tidemark::tool_main(int argc, char** argv, const tidemark::job_registry& registry) {
  tidemark::tune_thread_cache(argv);
  tidemark::tune_heap();  // before a job opens its stores, whose threads allocate
  CLI::App app{"tidemark — event-time stream processing on actors"};
  app.require_subcommand(1);
  tidemark::add_log_level_option(app);
  tidemark::add_job_commands(app, registry);
  tidemark::add_replication_commands(app, registry);
  tidemark::add_chaos_commands(app, registry);
  tidemark::add_status_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
  return 0;
}
