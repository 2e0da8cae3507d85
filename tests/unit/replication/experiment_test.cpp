// The paper's experiment: the query generator (templates, operator reuse, load scaling) and the
// experiment loop (determinism across threads, common systems and crashes across strategies).
#define BOOST_TEST_MODULE replication_experiment
#include <boost/test/unit_test.hpp>

#include <algorithm>

#include "tidemark/replication/experiment.hpp"

using namespace tidemark::replication;
namespace tt = boost::test_tools;

BOOST_AUTO_TEST_CASE(generated_systems_have_the_requested_load_and_shared_operators) {
  workload_options w;
  w.hosts = 20;
  w.queries = 60;
  w.streams = 5;
  w.predicates = 2;
  w.load = 20;
  auto m = generate_workload(w);
  BOOST_TEST(!validate(m));
  BOOST_TEST(m.queries.size() == 60u);
  BOOST_TEST(total_load(m) == 20.0, tt::tolerance(1e-9));
  for (const auto& h : m.hosts) BOOST_TEST(h.cpu_capacity == 1.0, tt::tolerance(1e-12));
  // Each query ends in its own destination; with 5 streams, sources are shared.
  auto deg = query_degree(m);
  std::size_t sources = 0;
  for (op_index i = 0; i < m.operators.size(); ++i)
    if (m.operators[i].inputs.empty()) {
      ++sources;
      BOOST_TEST(m.operators[i].name.rfind("source", 0) == 0u);
    }
  BOOST_TEST(sources <= 5u);
  BOOST_TEST(*std::max_element(deg.begin(), deg.end()) > 1u);
  for (const auto& q : m.queries) BOOST_TEST(deg[q.operators.back()] == 1u);
  // Same seed, same system; another seed, another one.
  auto again = generate_workload(w);
  BOOST_TEST(again.operators.size() == m.operators.size());
  BOOST_TEST(again.primary == m.primary, tt::per_element());
  w.seed = 2;
  BOOST_TEST(generate_workload(w).primary != m.primary);
}

BOOST_AUTO_TEST_CASE(experiment_results_do_not_depend_on_threads) {
  experiment_options o;
  o.workload.hosts = 10;
  o.workload.queries = 20;
  o.workload.load = 10;
  o.spare_percent = {0, 50, 100};
  o.failure_probabilities = {0.1, 0.3};
  o.runs = 6;
  o.threads = 1;
  auto one = run_experiment(o);
  o.threads = 3;
  std::uint32_t calls = 0;
  auto three = run_experiment(o, [&](std::uint32_t done) { calls = std::max(calls, done); });
  BOOST_TEST(calls == 6u);
  for (std::size_t s = 0; s < o.series.size(); ++s)
    for (std::size_t l = 0; l < 3; ++l)
      BOOST_TEST(one.running[s][l] == three.running[s][l], tt::per_element());
  for (std::size_t s = 0; s < o.series.size(); ++s) {
    // Without spare every strategy sees the same unreplicated system and crashes.
    BOOST_TEST(one.running[s][0] == one.running[0][0], tt::per_element());
    BOOST_TEST(one.replicated_operators[s][0] == 0.0);
    // Crashes are nested across probabilities (a host down at 0.1 is down at 0.3).
    for (std::size_t l = 0; l < 3; ++l) BOOST_TEST(one.running[s][l][0] >= one.running[s][l][1]);
  }
  BOOST_TEST(one.queries == 20.0);
}
