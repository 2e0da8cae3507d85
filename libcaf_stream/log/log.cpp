// Configures spdlog's default logger once, before main: standard error, UTC time, level, program
// name. Built as its own archive that every program links whole (see ../CMakeLists.txt), because
// nothing calls into this file before the first library message, which must already be on stderr.
#include "tidemark/core/log.hpp"

#include <errno.h>  // program_invocation_short_name (glibc)

#include <array>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace tidemark {
namespace {

constexpr std::array<std::pair<std::string_view, spdlog::level::level_enum>, 6> levels{{
    {"trace", spdlog::level::trace},
    {"debug", spdlog::level::debug},
    {"info", spdlog::level::info},
    {"warn", spdlog::level::warn},
    {"error", spdlog::level::err},
    {"off", spdlog::level::off},
}};

const spdlog::level::level_enum* find_level(std::string_view name) {
  for (const auto& [n, l] : levels)
    if (n == name) return &l;
  return nullptr;
}

std::string accepted_levels() {
  std::string out;
  for (const auto& [n, l] : levels) out += (out.empty() ? "" : ", ") + std::string{n};
  return out;
}

// Replaces spdlog's own default logger, which writes to stdout, where program output goes.
const bool configured = [] {
  auto logger = spdlog::stderr_color_mt(program_invocation_short_name);
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %^%l%$ %n: %v", spdlog::pattern_time_type::utc);
  spdlog::set_default_logger(logger);
  // Read once before main, when no other thread can change the environment yet.
  const char* env = std::getenv("TIDEMARK_LOG_LEVEL");  // NOLINT(concurrency-mt-unsafe)
  std::string_view wanted = env ? env : "";
  const auto* level = find_level(wanted);
  spdlog::set_level(level ? *level : spdlog::level::info);
  if (!level && !wanted.empty())
    spdlog::warn("TIDEMARK_LOG_LEVEL='{}' is not one of {}: logging at info", wanted,
                 accepted_levels());
  return true;
}();

}  // namespace

void set_log_level(std::string_view level) {
  const auto* l = find_level(level);
  if (!l)
    throw std::invalid_argument("log level '" + std::string{level} + "' is not one of " +
                                accepted_levels());
  spdlog::set_level(*l);
}

}  // namespace tidemark
