// Every built-in job can be split across nodes: its plan with stage i on node i % 3, and its
// unfused plan with every operator instance alone on a node, pass the coordinator's placement check
// (every value that crosses a channel has a tidemark::codec). A new job whose types lack codecs
// fails here, naming the job, the operator and the type, instead of failing a user's deployment.
#define BOOST_TEST_MODULE every_job_crosses_hosts
#include <boost/test/unit_test.hpp>

#include <numeric>

#include "jobs.hpp"
#include "tidemark/core/plan.hpp"
#include "tidemark/core/synchronizer.hpp"
#include "tidemark/runtime/cluster.hpp"

using namespace tidemark;

namespace {

cluster_config cluster_of(std::size_t nodes) {
  cluster_config c;
  c.insecure = true;
  for (std::size_t i = 0; i < nodes; ++i)
    c.nodes.push_back(
        {"n" + std::to_string(i), "tcp://127.0.0.1:" + std::to_string(7100 + 2 * i), ""});
  return c;
}

std::size_t instances(const physical_plan& p) {
  return std::accumulate(p.stages.begin(), p.stages.end(), std::size_t{0},
                         [](std::size_t n, const stage& s) { return n + s.parallelism; });
}

/// Runs `check` on the plan `tidemark plan` prints for every registered job built with its
/// default options (validate, synchronize, compile with `fuse`); a refusal fails the test with the
/// job's name and the check's message.
template <class Check>
void for_every_job(bool fuse, Check check) {
  job_registry registry;
  register_all_jobs(registry);
  BOOST_REQUIRE(!registry.all().empty());
  for (const auto* spec : registry.all()) {
    try {
      auto j = spec->build(spec->make_options());
      auto problem = validate(j.graph());
      BOOST_REQUIRE_MESSAGE(!problem, "job '" + spec->name + "': " + problem.value_or(""));
      auto synced = synchronize(j.graph());
      if (!synced.timezones.empty())  // said, not skipped: its codecs are checked all the same
        BOOST_TEST_MESSAGE("job '" << spec->name
                                   << "' has timezones, so the coordinator still "
                                      "runs it embedded only; its codecs are checked anyway");
      auto plan = compile(synced.graph, {fuse});
      check(synced.graph, plan);
    } catch (const job_error& e) {
      BOOST_ERROR("job '" + spec->name + "': " + e.what());
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_stage_on_another_of_three_nodes) {
  const auto cluster = cluster_of(3);
  for_every_job(true, [&](const logical_graph& g, const physical_plan& p) {
    std::vector<std::uint32_t> placement;
    for (std::uint32_t s = 0; s < p.stages.size(); ++s)
      placement.insert(placement.end(), p.stages[s].parallelism, s % 3);
    check_placement(g, p, placement, cluster);
  });
}

// Fused stages keep some values in one process; unfused, with one node per operator instance, every
// value a job passes between operators crosses a node boundary.
BOOST_AUTO_TEST_CASE(every_operator_instance_on_its_own_node) {
  for_every_job(false, [&](const logical_graph& g, const physical_plan& p) {
    std::vector<std::uint32_t> placement(instances(p));
    std::iota(placement.begin(), placement.end(), 0u);
    BOOST_TEST(p.channel_count() > 0u);  // a source and a sink at least: something crosses
    check_placement(g, p, placement, cluster_of(placement.size()));
  });
}
