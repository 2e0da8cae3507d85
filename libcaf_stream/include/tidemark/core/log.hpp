// The log of every Tidemark program: diagnostics (warnings, node and coordinator lifecycle, errors)
// go to standard error with a timestamp, a level and the program's name; results stay on standard
// output. Library code logs through spdlog's default logger; this header is what programs need.
#pragma once

#include <string_view>

namespace tidemark {

/// Shows log messages at `level` and above from now on, process-wide. `level` is one of trace,
/// debug, info, warn, error, off. Before any call the level is the one named by the
/// TIDEMARK_LOG_LEVEL environment variable, or info when it is unset or not a level (the log then
/// says so). Throws std::invalid_argument naming `level` and the accepted ones otherwise.
void set_log_level(std::string_view level);

}  // namespace tidemark
