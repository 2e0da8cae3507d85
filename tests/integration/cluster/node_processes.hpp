// Test fixture: keys for three nodes and a coordinator in a temporary folder, three
// tidemark-node processes on loopback ports of their own, and the matching cluster_config.
#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "tidemark/examples/example_jobs.hpp"
#include "tidemark/runtime/cluster.hpp"

extern char** environ;

namespace tidemark::test {

struct node_processes {
  std::filesystem::path dir;
  cluster_config cluster;
  std::vector<pid_t> pids;
  job_registry registry;
  /// More command-line arguments for node i (e.g. --metrics-listen), also when it restarts.
  std::function<std::vector<std::string>(std::size_t)> extra_args;

  explicit node_processes(std::size_t nodes = 3,
                          std::function<std::vector<std::string>(std::size_t)> extra = {})
      : extra_args(std::move(extra)) {
    static int fixtures = 0;
    const int fixture = fixtures++;
    dir = std::filesystem::temp_directory_path() /
          ("tidemark-cluster-" + std::to_string(::getpid()) + "-" + std::to_string(fixture));
    std::filesystem::remove_all(dir);
    auto keys = (dir / "keys").string();
    cluster.coordinator = key_pair::generate();
    cluster.coordinator.save(keys, "coordinator");
    cluster.connect_timeout = std::chrono::milliseconds{3000};
    // ports of their own per process and fixture (a node uses two), so parallel runs do not
    // collide; all below Linux's ephemeral range (32768 and up), where a client connection of any
    // process may hold the port a node wants to bind
    const int base = 20000 + (::getpid() % 400) * 30 + (fixture % 5) * 6;
    for (std::size_t i = 0; i < nodes; ++i) {
      auto id = "n" + std::to_string(i + 1);
      auto keys_pair = key_pair::generate();
      keys_pair.save(keys, id);
      auto port = base + static_cast<int>(i) * 2;
      cluster.nodes.push_back({id, "tcp://127.0.0.1:" + std::to_string(port), keys_pair.public_key});
    }
    for (std::size_t i = 0; i < nodes; ++i) start(i);
    examples::register_jobs(registry);
  }

  void start(std::size_t i) {
    const auto& n = cluster.nodes[i];
    std::vector<std::string> args{TIDEMARK_NODE_BIN, "--id", n.id, "--listen", n.endpoint,
                                  "--data-dir", (dir / n.id).string(), "--keys",
                                  (dir / "keys").string()};
    if (extra_args)
      for (auto& a : extra_args(i)) args.push_back(a);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    if (posix_spawn(&pid, TIDEMARK_NODE_BIN, nullptr, nullptr, argv.data(), environ) != 0)
      throw std::runtime_error("cannot start " TIDEMARK_NODE_BIN);
    if (pids.size() <= i) pids.resize(i + 1);
    pids[i] = pid;
    // ready when it answers
    for (int tries = 0; tries < 100; ++tries)
      if (query_status(n.endpoint, cluster, std::chrono::milliseconds{100})) return;
    throw std::runtime_error("node " + n.id + " did not come up");
  }

  void kill_node(std::size_t i) {
    ::kill(pids[i], SIGKILL);
    ::waitpid(pids[i], nullptr, 0);
    pids[i] = 0;
  }

  node_status status(std::size_t i) {
    auto s = query_status(cluster.nodes[i].endpoint, cluster, std::chrono::milliseconds{2000});
    if (!s) throw std::runtime_error("node " + cluster.nodes[i].id + " does not answer");
    return *s;
  }

  ~node_processes() {
    for (auto pid : pids)
      if (pid > 0) {
        ::kill(pid, SIGTERM);
        ::waitpid(pid, nullptr, 0);
      }
    std::filesystem::remove_all(dir);
  }
};

}  // namespace tidemark::test
