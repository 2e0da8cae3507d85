// The chaos fixture: a local cluster plus run_chaos with the schedule given as text.
#include "tidemark/chaos/fixture.hpp"

#include <cstdlib>

namespace tidemark::chaos {

namespace {

local_cluster_options fixture_cluster(std::size_t nodes, std::string node_binary) {
  local_cluster_options o;
  if (node_binary.empty()) {
    const char* env = std::getenv("TIDEMARK_NODE_BIN");  // NOLINT(concurrency-mt-unsafe): at start
    node_binary = env && *env ? env : sibling_binary("tidemark-node");
  }
  o.node_binary = std::move(node_binary);
  o.nodes = nodes;
  o.allow_faults = true;
  return o;
}

}  // namespace

cluster_fixture::cluster_fixture(std::size_t nodes, std::string node_binary)
    : cluster_(fixture_cluster(nodes, std::move(node_binary))) {}

report cluster_fixture::run(const job_spec& spec, const job_options& options,
                            const std::string& schedule_yaml, const run_settings& settings) {
  ++runs_;
  chaos_options o;
  o.out = settings.out.empty() ? cluster_.dir / ("run-" + std::to_string(runs_)) : settings.out;
  o.seed = settings.seed;
  o.duration = settings.duration;
  o.checkpoint_interval = settings.checkpoint_interval;
  o.run = settings.run;
  o.processes = &cluster_;
  o.inject = default_injector();
  o.progress = settings.progress;
  auto cluster = cluster_.cluster;
  cluster.pins = settings.pins;
  std::vector<std::string> ids;
  for (const auto& n : cluster.nodes) ids.push_back(n.id);
  const auto faults = expand(parse_schedule(schedule_yaml, "the test's schedule"), settings.seed,
                             settings.duration, ids);
  return run_chaos(spec, options, cluster, faults, o);
}

}  // namespace tidemark::chaos
