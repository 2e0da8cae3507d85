// --log-level (and TIDEMARK_LOG_LEVEL as its default) on the `tidemark` tool and `tidemark-node`,
// checked on their stderr: the info messages of a one-node cluster run (node lifecycle,
// coordinator deployment) show at info and not at warn, warnings show at both, and a bad level
// stops the program before it does anything, with a message naming the level.
#define BOOST_TEST_MODULE log_option
#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../../support/environment.hpp"
#include "../../support/temp_dir.hpp"

extern char** environ;

namespace {

std::string read(const std::string& path) {
  std::ifstream in{path};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// One program started with stdout and stderr in files of `dir`, and TIDEMARK_LOG_LEVEL set to
// `env_level` (or unset when empty, whatever the test's own environment says).
class process {
 public:
  process(const tidemark::test::temp_dir& dir, const std::string& name,
          std::vector<std::string> args, const std::string& env_level = "")
      : out_(dir / (name + ".out")), err_(dir / (name + ".err")) {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e)
      if (std::strncmp(*e, "TIDEMARK_LOG_LEVEL=", 19) != 0) env.emplace_back(*e);
    if (!env_level.empty()) env.push_back("TIDEMARK_LOG_LEVEL=" + env_level);
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, out_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&files, STDERR_FILENO, err_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    auto argv = pointers(args);
    auto envp = pointers(env);
    int failed = posix_spawn(&pid_, argv[0], &files, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&files);
    BOOST_REQUIRE_MESSAGE(failed == 0, "cannot start " << args[0]);
  }
  ~process() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  process(const process&) = delete;
  process& operator=(const process&) = delete;

  /// Waits (up to 20 s) until the program exits; returns its exit code.
  int wait() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      BOOST_REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline,
                            "timed out waiting for exit; stderr:\n"
                                << err());
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    pid_ = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  /// Asks the program to stop (SIGTERM) and waits for it.
  int stop() {
    ::kill(pid_, SIGTERM);
    return wait();
  }
  /// Waits (up to 10 s) until its stderr contains `part`.
  void await_stderr(const std::string& part) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!contains(err(), part)) {
      BOOST_REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline,
                            "timed out waiting for '" << part << "' on stderr:\n"
                                                      << err());
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  std::string out() const { return read(out_); }
  std::string err() const { return read(err_); }

 private:
  static std::vector<char*> pointers(std::vector<std::string>& strings) {
    std::vector<char*> p;
    for (auto& s : strings) p.push_back(s.data());
    p.push_back(nullptr);
    return p;
  }

  std::string out_;
  std::string err_;
  pid_t pid_ = 0;
};

// Whether nothing listens on loopback `port` (a bind succeeds).
bool port_free(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return free;
}

// Two free consecutive ports (a node's control and data) below Linux's ephemeral range
// (32768-60999), where another process's outgoing connection can take any port at any time: a
// fixed port there once failed the node's bind with "Address already in use".
int free_port_pair() {
  static int next = 23000 + (::getpid() % 500) * 16;
  auto advance = [] { return 23000 + (next - 23000 + 2) % 9000; };
  for (int tries = 0; tries < 1000; ++tries, next = advance())
    if (port_free(next) && port_free(next + 1)) return std::exchange(next, advance());
  BOOST_FAIL("no two free consecutive loopback ports in 23000-31999");
  return 0;
}

struct run_logs {
  std::string node;
  std::string tool;
  std::string tool_out;
};

// A plain-text one-node cluster on a port of its own: tidemark-node with `node_args` (after the
// program, before --id) and `node_env`, then `tidemark <tool_args> run --cluster ...` with
// `tool_env`; both logs once the node stopped.
run_logs cluster_run(const std::string& tag, std::vector<std::string> node_args,
                     const std::string& node_env, std::vector<std::string> tool_args,
                     const std::string& tool_env) {
  const int port = free_port_pair();
  tidemark::test::temp_dir dir{"log-option-" + tag};
  const auto endpoint = "tcp://127.0.0.1:" + std::to_string(port);
  const auto cluster_file = dir / "cluster.yaml";
  std::ofstream(cluster_file) << "insecure: true\nnodes:\n  - {id: n1, endpoint: \"" << endpoint
                              << "\"}\n";
  node_args.insert(node_args.begin(), tidemark::test::node_binary());
  for (const auto& a : {"--id", "n1", "--listen", endpoint.c_str(), "--insecure", "--data-dir"})
    node_args.emplace_back(a);
  node_args.push_back(dir / "n1");
  process node{dir, "node", node_args, node_env};
  // A warning at every level tested: the node is past its start-up checks and binding now, and
  // the coordinator's connection waits for the bind.
  node.await_stderr("runs with --insecure");
  tool_args.insert(tool_args.begin(), tidemark::test::tool_binary());
  for (const auto& a : {"run", "--insecure", "--cluster", cluster_file.c_str(),
                        "example-window-count", "--events", "1000", "--parallelism", "1"})
    tool_args.emplace_back(a);
  process tool{dir, "tool", tool_args, tool_env};
  const int status = tool.wait();
  BOOST_REQUIRE_MESSAGE(status == 0, "the cluster run failed with "
                                         << (status > 128 ? "signal " : "exit code ")
                                         << (status > 128 ? status - 128 : status)
                                         << "; its stdout:\n"
                                         << tool.out() << "its stderr:\n"
                                         << tool.err() << "the node's stderr:\n"
                                         << node.err());
  BOOST_TEST(node.stop() == 0);
  return {node.err(), tool.err(), tool.out()};
}

const std::string insecure_warning = "runs with --insecure";
const std::string node_info[] = {"node 'n1' listening on tcp://127.0.0.1:",
                                 "node 'n1': deployed job "
                                 "'example-window-count'",
                                 "node 'n1' stopped"};
const std::string coordinator_info = "coordinator: deployed job 'example-window-count' on n1";

}  // namespace

BOOST_AUTO_TEST_CASE(info_shows_lifecycle_messages_that_warn_hides) {
  auto info = cluster_run("info", {"--log-level", "info"}, "", {"--log-level", "info"}, "");
  auto warn = cluster_run("warn", {"--log-level", "warn"}, "", {"--log-level", "warn"}, "");
  for (const auto& line : node_info) {
    BOOST_TEST(contains(info.node, line), line << " in:\n" << info.node);
    BOOST_TEST(!contains(warn.node, line), line << " in:\n" << warn.node);
  }
  BOOST_TEST(contains(info.tool, coordinator_info), info.tool);
  BOOST_TEST(!contains(warn.tool, coordinator_info), warn.tool);
  for (const auto* r : {&info, &warn}) {
    BOOST_TEST(contains(r->node, "warning tidemark-node: node 'n1' " + insecure_warning), r->node);
    BOOST_TEST(contains(r->tool, "warning tidemark: the coordinator " + insecure_warning), r->tool);
    // logs never reach stdout, where the job's summary goes
    BOOST_TEST(contains(r->tool_out, "job 'example-window-count' finished in"), r->tool_out);
    BOOST_TEST(!contains(r->tool_out, insecure_warning), r->tool_out);
  }
}

BOOST_AUTO_TEST_CASE(the_environment_sets_the_default_and_the_option_overrides_it) {
  auto r = cluster_run("env", {}, "warn", {"--log-level", "info"}, "warn");
  for (const auto& line : node_info)
    BOOST_TEST(!contains(r.node, line), line << " in:\n" << r.node);
  BOOST_TEST(contains(r.node, insecure_warning), r.node);
  BOOST_TEST(contains(r.tool, coordinator_info), r.tool);
}

BOOST_AUTO_TEST_CASE(a_bad_level_stops_the_program_with_a_message_naming_it) {
  tidemark::test::temp_dir dir{"log-option-bad"};
  const std::string message =
      "--log-level: log level 'loud' is not one of trace, debug, info, "
      "warn, error, off";
  process tool{dir, "tool", {tidemark::test::tool_binary(), "--log-level", "loud", "jobs"}};
  BOOST_TEST(tool.wait() != 0);
  BOOST_TEST(contains(tool.err(), message), tool.err());
  BOOST_TEST(!contains(tool.out(), "example-window-count"), tool.out());  // `jobs` did not run
  process node{dir,
               "node",
               {tidemark::test::node_binary(), "--log-level", "loud", "--id", "n1", "--listen",
                "tcp://127.0.0.1:1", "--data-dir", dir / "n1", "--insecure"}};
  BOOST_TEST(node.wait() != 0);
  BOOST_TEST(contains(node.err(), message), node.err());
  BOOST_TEST(!contains(node.err(), insecure_warning), node.err());  // the node never started
}
