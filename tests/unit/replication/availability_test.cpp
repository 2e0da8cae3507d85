// Availability: the Monte Carlo simulator against closed-form availability of tiny systems, and
// the optimizer on a system whose best plans are known.
#define BOOST_TEST_MODULE replication_availability
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "model_builder.hpp"
#include "tidemark/replication/availability.hpp"

using namespace tidemark::replication;
namespace tt = boost::test_tools;

namespace {

constexpr double p = 0.1;

// S -> D with S on h0 and D on h1, plus two idle hosts for replicas.
replication_model chain(double s_load = 0.1, double d_load = 0.3) {
  test::model_builder b;
  b.host("h0").host("h1").host("h2").host("h3");
  auto s = b.op("S", s_load, 0);
  b.op("D", d_load, 1, {s});
  return b.build();
}

// S on h0 feeding D1 on h1 and D2 on h2: one query that needs all three.
replication_model fan_out() {
  test::model_builder b;
  b.host("h0").host("h1").host("h2");
  auto s = b.op("S", 0.1, 0);
  b.op("D1", 0.1, 1, {s});
  b.op("D2", 0.1, 2, {s});
  return b.build();
}

replica_plan with_replicas(std::vector<std::vector<host_index>> r) {
  replica_plan plan;
  plan.replicas = std::move(r);
  return plan;
}

// The estimate is within four standard errors of the exact value, and the standard error
// matches that of a Bernoulli mean (each run's fraction is 0 or 1 for one query).
void check(const availability_estimate& a, double exact, std::uint32_t runs) {
  BOOST_TEST(std::abs(a.running - exact) <= 4 * a.standard_error);
  BOOST_TEST(a.standard_error == std::sqrt(exact * (1 - exact) / runs), tt::tolerance(0.05));
}

}  // namespace

BOOST_AUTO_TEST_CASE(running_fraction_counts_queries_with_a_live_instance_of_every_operator) {
  auto m = fan_out();
  auto inst = instance_hosts(m, with_replicas({{1}, {}, {}}));
  BOOST_TEST(running_fraction(m, inst, {0, 0, 0}) == 1.0);
  BOOST_TEST(running_fraction(m, inst, {1, 0, 0}) == 1.0);  // S's replica on h1 takes over
  BOOST_TEST(running_fraction(m, inst, {0, 1, 0}) == 0.5);  // D1 is gone
  BOOST_TEST(running_fraction(m, inst, {1, 1, 0}) == 0.0);  // S is gone entirely
}

BOOST_AUTO_TEST_CASE(unreplicated_chain_survives_with_both_hosts) {
  auto m = chain();
  simulation_options o{p, 200000, 42};
  check(simulate_availability(m, with_replicas({{}, {}}), o), (1 - p) * (1 - p), o.runs);
}

BOOST_AUTO_TEST_CASE(a_replica_fails_only_with_its_primary) {
  auto m = chain();
  simulation_options o{p, 200000, 43};
  check(simulate_availability(m, with_replicas({{2}, {}}), o), (1 - p * p) * (1 - p), o.runs);
  check(simulate_availability(m, with_replicas({{2}, {3}}), o), (1 - p * p) * (1 - p * p), o.runs);
  // Two replicas of S: S is lost only when all three hosts fail.
  check(simulate_availability(m, with_replicas({{2, 3}, {}}), o), (1 - p * p * p) * (1 - p),
        o.runs);
}

BOOST_AUTO_TEST_CASE(operators_sharing_a_host_fail_together) {
  test::model_builder b;
  b.host("h0").host("h1");
  auto s = b.op("S", 0.1, 0);
  b.op("D", 0.1, 0, {s});
  auto m = b.build();
  simulation_options o{p, 200000, 44};
  check(simulate_availability(m, with_replicas({{}, {}}), o), 1 - p, o.runs);
  // Replicas of both on h1: the query runs unless both hosts fail.
  check(simulate_availability(m, with_replicas({{1}, {1}}), o), 1 - p * p, o.runs);
}

BOOST_AUTO_TEST_CASE(all_running_is_the_probability_that_no_query_broke) {
  auto m = fan_out();
  auto a = simulate_availability(m, with_replicas({{}, {}, {}}), {p, 200000, 45});
  BOOST_TEST(a.running == (1 - p) * (1 - p), tt::tolerance(0.005));
  BOOST_TEST(a.all_running == std::pow(1 - p, 3), tt::tolerance(0.005));
}

BOOST_AUTO_TEST_CASE(simulation_is_deterministic_and_exact_at_the_extremes) {
  auto m = chain();
  auto plan = with_replicas({{2}, {}});
  auto a = simulate_availability(m, plan, {0.3, 1000, 9});
  auto b = simulate_availability(m, plan, {0.3, 1000, 9});
  BOOST_TEST(a.running == b.running);
  BOOST_TEST(simulate_availability(m, plan, {0.0, 100, 9}).running == 1.0);
  BOOST_TEST(simulate_availability(m, plan, {1.0, 100, 9}).running == 0.0);
  BOOST_CHECK_THROW(simulate_availability(m, plan, {1.5, 100, 9}), model_error);
}

// Without replicas the chain runs with 0.81. The neighbour factor puts S's replica beside D's
// primary on h1 (and D's beside S's on h0), so one replica makes the query depend on one host
// only: 0.9 (on an idle host it would be 0.891). With both, the query breaks only when h0 and h1
// both fail: 0.99 (spread over h2 and h3 it would be 0.9801). Replicating S costs 0.1, D 0.3.
BOOST_AUTO_TEST_CASE(minimize_cost_finds_the_cheapest_plan_for_a_target) {
  auto m = chain();
  simulation_options sim{p, 20000, 5};
  auto candidates = all_strategies(1);
  auto r = minimize_cost(m, 0.85, candidates, sim);
  BOOST_TEST(r.feasible);
  BOOST_TEST(r.plan.replica_load == 0.1, tt::tolerance(1e-9));
  BOOST_TEST(r.plan.replicas[0].size() == 1u);
  r = minimize_cost(m, 0.95, candidates, sim);
  BOOST_TEST(r.feasible);
  BOOST_TEST(r.plan.replica_load == 0.4, tt::tolerance(1e-9));
  r = minimize_cost(m, 0.999, candidates, sim);
  BOOST_TEST(!r.feasible);
  BOOST_TEST(r.plan.replicas[0] == (std::vector<host_index>{1}), tt::per_element());
  BOOST_TEST(r.plan.replicas[1] == (std::vector<host_index>{0}), tt::per_element());
  BOOST_TEST(r.availability.running == 1 - p * p, tt::tolerance(0.002));
}

BOOST_AUTO_TEST_CASE(maximize_availability_stays_within_the_cost_limit) {
  auto m = chain();
  simulation_options sim{p, 100000, 5};
  auto candidates = all_strategies(1);
  auto r = maximize_availability(m, 0.05, candidates, sim);
  BOOST_TEST(r.plan.replica_count() == 0u);
  r = maximize_availability(m, 0.35, candidates, sim);
  BOOST_TEST(r.plan.replica_count() == 1u);  // S or D alone; both would cost 0.4
  BOOST_TEST(r.plan.replica_load <= 0.35);
  check(r.availability, 1 - p, sim.runs);
  r = maximize_availability(m, 0.4, candidates, sim);
  BOOST_TEST(r.plan.replica_count() == 2u);
  check(r.availability, 1 - p * p, sim.runs);
}
