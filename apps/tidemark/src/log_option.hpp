// The --log-level option of the `tidemark` tool and `tidemark-node`. It takes effect while the
// command line is parsed, so before any subcommand or server runs.
#pragma once

#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>

#include "tidemark/core/log.hpp"

namespace tidemark {

/// Adds --log-level LEVEL to `app`; a level that is none of set_log_level's is a CLI11
/// validation error whose message names it and the accepted ones.
inline void add_log_level_option(CLI::App& app) {
  app.add_option_function<std::string>(
      "--log-level",
      [](const std::string& level) {
        try {
          set_log_level(level);
        } catch (const std::invalid_argument& e) {
          throw CLI::ValidationError("--log-level", e.what());
        }
      },
      "log (stderr) at this level and above: trace, debug, info, warn, error or off (default: "
      "$TIDEMARK_LOG_LEVEL, else info)");
}

}  // namespace tidemark
