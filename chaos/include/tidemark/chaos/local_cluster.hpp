// Node processes on this host that a test or `tidemark chaos run --start-nodes` starts itself, so
// it can kill, pause and restart them: keys in a folder, loopback ports of their own, each node's
// data under the folder, and the matching cluster_config.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tidemark/runtime/cluster.hpp"

namespace tidemark::chaos {

struct local_cluster_options {
  /// The node binary: tidemark-node, or an application's own (tidemark::node_main).
  std::string node_binary;
  /// Nodes n1..nN when the cluster is generated.
  std::size_t nodes = 3;
  /// Keys, node data and the cluster file go here; empty: a fresh folder under the system temp
  /// folder, removed with everything in it when the cluster is destroyed.
  std::filesystem::path dir;
  /// Start nodes with --allow-faults and write `faults: allow` into the cluster file, so network
  /// and storage faults reach them.
  bool allow_faults = false;
  /// More command-line arguments for node i (e.g. --metrics-listen), also when it restarts.
  std::function<std::vector<std::string>(std::size_t)> extra_args;
  /// Nodes in network namespaces of this host (each with an address of its own): node i's
  /// address when the cluster is generated (empty: 127.0.0.1), and the words that start a program
  /// there, put before the node binary (e.g. {"ip", "netns", "exec", "ns1"}; empty: none).
  std::function<std::string(std::size_t)> host;
  std::function<std::vector<std::string>(std::size_t)> launcher;
  /// How long start() waits for a node to answer.
  std::chrono::milliseconds start_timeout{10000};
};

/// Local node processes. Every process it started is stopped (SIGTERM, then waited for) when it
/// is destroyed; a paused one is continued first. When this process dies without destroying it
/// (a crash, a test killed at its timeout), the nodes stop by themselves: each holds the read end
/// of a pipe whose only writer is this process (tidemark-node --lifeline), except one paused at
/// that moment, which stops when continued.
struct local_cluster {
  /// Where keys (`keys/`), node data (`<id>/`) and the cluster file live.
  std::filesystem::path dir;
  /// The cluster as the coordinator sees it: the nodes, the coordinator's key pair, timeouts.
  cluster_config cluster;

  /// Generates key pairs for a coordinator and nodes n1..nN in `dir`/keys, picks free loopback
  /// ports (two per node) and starts every node. Throws std::runtime_error when a node does not
  /// come up.
  explicit local_cluster(local_cluster_options opts);
  /// Starts the nodes of an existing cluster on this host: `keys_dir` holds each node's
  /// `<id>.key` and the allowed peers' `.pub` files (what tidemark-node --keys takes), node data
  /// goes to `data_dir`/<id>. Throws std::runtime_error naming a node whose endpoint is not on
  /// this host (loopback or localhost).
  local_cluster(cluster_config existing, std::string keys_dir, std::filesystem::path data_dir,
                local_cluster_options opts);
  ~local_cluster();
  local_cluster(const local_cluster&) = delete;
  local_cluster& operator=(const local_cluster&) = delete;

  std::size_t size() const noexcept { return cluster.nodes.size(); }
  /// Index of node `id`; throws std::runtime_error naming it when there is none.
  std::size_t index_of(const std::string& id) const;
  /// Starts node i (again) and waits until it answers a status query.
  void start(std::size_t i);
  /// SIGKILL, and waits for the process to end.
  void kill(std::size_t i);
  /// SIGTERM (an orderly stop), and waits for the process to end (SIGKILL after 10 s).
  void stop(std::size_t i);
  /// SIGSTOP / SIGCONT.
  void pause(std::size_t i);
  void resume(std::size_t i);
  /// True while node i's process was started and has not been killed or stopped.
  bool running(std::size_t i) const;
  bool paused(std::size_t i) const;
  /// Node i's process id; 0 while it is not running.
  pid_t pid(std::size_t i) const { return pids_.at(i); }
  /// Node i's counters; throws std::runtime_error when it does not answer within 2 s.
  node_status status(std::size_t i) const;
  /// Writes a cluster file for these nodes (keys by absolute path) that `tidemark run --cluster`
  /// and `tidemark chaos run --cluster` read.
  void write_cluster_file(const std::string& path) const;

 private:
  void init_processes();

  local_cluster_options opts_;
  std::string keys_dir_;
  std::filesystem::path data_dir_;
  bool owns_dir_ = false;
  std::vector<pid_t> pids_;
  std::vector<bool> paused_;
  int lifeline_[2] = {-1, -1};  // read end inherited by the nodes, write end kept here
};

/// The node binary beside the running program (`tidemark-node` next to `tidemark`), or
/// `name` as given when there is none.
std::string sibling_binary(const std::string& name);

}  // namespace tidemark::chaos
