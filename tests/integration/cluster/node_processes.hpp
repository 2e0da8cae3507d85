// Test fixture: keys for three nodes and a coordinator in a temporary folder, three
// tidemark-node processes on loopback ports of their own, and the matching cluster_config
// (tidemark::chaos::local_cluster, which tidemark chaos and the chaos fixture use too), with the
// example jobs registered.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "../../support/environment.hpp"
#include "tidemark/chaos/local_cluster.hpp"
#include "tidemark/examples/example_jobs.hpp"

namespace tidemark::test {

struct node_processes : chaos::local_cluster {
  job_registry registry;

  explicit node_processes(std::size_t nodes = 3,
                          std::function<std::vector<std::string>(std::size_t)> extra = {})
      : chaos::local_cluster(options(nodes, std::move(extra))) {
    examples::register_jobs(registry);
  }

  void kill_node(std::size_t i) { kill(i); }

 private:
  static chaos::local_cluster_options options(
      std::size_t nodes, std::function<std::vector<std::string>(std::size_t)> extra) {
    chaos::local_cluster_options o;
    o.node_binary = node_binary();
    o.nodes = nodes;
    o.extra_args = std::move(extra);
    return o;
  }
};

}  // namespace tidemark::test
