// The `tidemark` tool as a child process, for the tests that kill, resume or fill the disk under a
// real run: start it with its output into a log, wait for it, read the log; or run a command to
// its end and take what it printed.
// Include after <boost/test/unit_test.hpp>; the test is declared with `RUNS tidemark`.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "environment.hpp"

extern char** environ;

namespace tidemark::test {

/// Starts `tidemark ARGS...` with stdout to `out` (overwritten) and stderr appended to `log`.
inline pid_t spawn_tool(std::vector<std::string> args, const std::string& out,
                        const std::string& log) {
  const auto tool = tool_binary();
  args.insert(args.begin(), tool);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&files, 2, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, tool.c_str(), &files, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  BOOST_REQUIRE_MESSAGE(rc == 0, "cannot start " + tool);
  return pid;
}

/// Starts `tidemark TOOL_ARGS... JOB JOB_ARGS...` with stdout to /dev/null and stderr appended to
/// `log`.
inline pid_t start_tool(const std::vector<std::string>& tool_args, const std::string& job,
                        const std::vector<std::string>& job_args, const std::string& log) {
  auto args = tool_args;
  args.push_back(job);
  args.insert(args.end(), job_args.begin(), job_args.end());
  return spawn_tool(std::move(args), "/dev/null", log);
}

/// Waits for `pid`; true when it exited with status 0.
inline bool succeeded(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in{path};
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Runs `tidemark ARGS...` to its end (stderr appended to `log`); fails the test unless it exits
/// with status 0. Returns what it printed on stdout.
inline std::string tool_output(const std::vector<std::string>& args, const std::string& log) {
  const auto out = log + ".stdout";
  BOOST_REQUIRE_MESSAGE(succeeded(spawn_tool(args, out, log)),
                        "tidemark failed: " + read_file(log));
  return read_file(out);
}

}  // namespace tidemark::test
