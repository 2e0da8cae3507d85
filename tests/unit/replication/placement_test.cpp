// Replica placement: anti-affinity, CPU and network capacity, neighbour preference and colour
// constraints, checked on hand-made graphs and as properties over generated ones.
#define BOOST_TEST_MODULE replication_placement
#include <boost/test/unit_test.hpp>

#include "model_builder.hpp"
#include "tidemark/replication/planner.hpp"

using namespace tidemark::replication;
namespace tt = boost::test_tools;
using hosts = std::vector<host_index>;

namespace {

std::vector<std::vector<host_index>> place(const replication_model& m,
                                           std::vector<std::uint32_t> lv,
                                           placement_strategy s = placement_strategy::bin_packing) {
  std::vector<double> imp(m.operators.size());
  for (std::size_t i = 0; i < imp.size(); ++i) imp[i] = 1.0 - 0.01 * static_cast<double>(i);
  return place_replicas(m, lv, imp, {s, 1, 1});
}

// One query S -> F -> D on four hosts h0..h3, with S on h0 and F, D on the hosts given.
replication_model s_f_d(host_index f_host, host_index d_host) {
  test::model_builder b;
  b.host("h0").host("h1").host("h2").host("h3");
  auto s = b.op("S", 0.1, 0);
  auto f = b.op("F", 0.1, f_host, {s});
  b.op("D", 0.1, d_host, {f});
  return b.build();
}

}  // namespace

BOOST_AUTO_TEST_CASE(never_two_instances_of_an_operator_on_one_host) {
  test::model_builder b;
  b.host("h0").host("h1").host("h2");
  b.op("S", 0.1, 1);
  auto m = b.build();
  BOOST_TEST(place(m, {2})[0] == (hosts{0, 2}), tt::per_element());
  // A third replica has nowhere to go: only three hosts and the primary holds one.
  BOOST_TEST(place(m, {3})[0] == (hosts{0, 2}), tt::per_element());
  planner_options o;
  o.max_level = 3;
  o.importance = heuristic::low_utilization;
  auto plan = plan_replicas(m, o);
  BOOST_TEST(plan.replica_count() == 2u);
  BOOST_TEST(plan.unplaced == 1u);
}

BOOST_AUTO_TEST_CASE(cpu_capacity_left_after_the_primaries_bounds_replicas) {
  test::model_builder b;
  b.host("h0", 1.0).host("h1", 1.0).host("h2", 1.0);
  b.op("big", 0.7, 1);
  b.op("x", 0.4, 0);
  b.op("y", 0.2, 2);
  auto m = b.build();
  // h0 has 0.6 left, h1 0.3, h2 0.8: big's replica fits only h2 (leaving 0.1); x's (0.4) then
  // fits nowhere and stays unplaced; y's goes to the first host with room, h0.
  auto r = place(m, {1, 1, 1});
  BOOST_TEST(r[0] == (hosts{2}), tt::per_element());
  BOOST_TEST(r[1].empty());
  BOOST_TEST(r[2] == (hosts{0}), tt::per_element());
}

BOOST_AUTO_TEST_CASE(network_capacity_is_respected) {
  test::model_builder b;
  b.host("h0", 1.0, 1e9).host("h1", 1.0, 500).host("h2", 1.0, 1e9);
  b.op("S", 0.1, 0, {}, 300);  // rate 1, 300 bytes in and out: 600 bytes/s
  auto m = b.build();
  BOOST_TEST(m.operators[0].net() == 600.0);
  BOOST_TEST(place(m, {1})[0] == (hosts{2}), tt::per_element());
}

BOOST_AUTO_TEST_CASE(replicas_go_where_their_neighbours_are) {
  auto m = s_f_d(3, 2);
  // D's only neighbour F runs on h3, so D's replica goes there rather than to the first host.
  BOOST_TEST(place(m, {0, 0, 1})[2] == (hosts{3}), tt::per_element());
  // F's neighbours are on h0 and h2, equally many: the lower index wins. D then follows F's
  // primary (h3) and its replica (h0) equally and takes h0.
  auto r = place(m, {0, 1, 1});
  BOOST_TEST(r[1] == (hosts{0}), tt::per_element());
  BOOST_TEST(r[2] == (hosts{0}), tt::per_element());
}

BOOST_AUTO_TEST_CASE(colour_constraints_spread_the_replicas_of_a_query) {
  auto m = s_f_d(0, 0);
  // Plain bin packing follows the neighbours onto one host; colours allow one replica of the
  // query per host.
  auto packed = place(m, {1, 1, 1});
  BOOST_TEST(packed[0] == (hosts{1}), tt::per_element());
  BOOST_TEST(packed[1] == (hosts{1}), tt::per_element());
  BOOST_TEST(packed[2] == (hosts{1}), tt::per_element());
  auto spread = place(m, {1, 1, 1}, placement_strategy::colour_constrained);
  BOOST_TEST(spread[0] == (hosts{1}), tt::per_element());
  BOOST_TEST(spread[1] == (hosts{2}), tt::per_element());
  BOOST_TEST(spread[2] == (hosts{3}), tt::per_element());
}

BOOST_AUTO_TEST_CASE(constraints_hold_for_every_strategy_on_generated_models) {
  test::model_builder b;
  for (int h = 0; h < 12; ++h) b.host("h" + std::to_string(h), 1.0, 2000);
  for (int i = 0; i < 90; ++i) {
    std::vector<op_index> in;
    if (i % 5) in.push_back(static_cast<op_index>(i - 1));
    if (i % 5 == 3) in.push_back(static_cast<op_index>(i - 3));
    b.op("o" + std::to_string(i), 0.02 + 0.01 * ((i * 7) % 9), 0, in, 10.0 * (i % 4));
  }
  auto m = b.build();
  place_primaries(m);
  for (auto opts : all_strategies(2)) {
    opts.spare = 6.0;
    auto plan = plan_replicas(m, opts);
    std::vector<double> cpu(m.hosts.size());
    std::vector<double> net(m.hosts.size());
    for (op_index i = 0; i < m.operators.size(); ++i) {
      cpu[m.primary[i]] += m.operators[i].load;
      net[m.primary[i]] += m.operators[i].net();
      std::vector<host_index> used{m.primary[i]};
      for (auto h : plan.replicas[i]) {
        BOOST_TEST((std::find(used.begin(), used.end(), h) == used.end()));
        used.push_back(h);
        cpu[h] += m.operators[i].load;
        net[h] += m.operators[i].net();
      }
      BOOST_TEST(plan.replicas[i].size() <= opts.max_level);
    }
    for (host_index h = 0; h < m.hosts.size(); ++h) {
      BOOST_TEST(cpu[h] <= m.hosts[h].cpu_capacity + 1e-9);
      BOOST_TEST(net[h] <= m.hosts[h].net_capacity + 1e-9);
    }
    BOOST_TEST(plan.replica_load <= 6.0 + 1e-9);
    if (opts.placement == placement_strategy::colour_constrained)
      for (const auto& q : m.queries)
        for (host_index h = 0; h < m.hosts.size(); ++h) {
          std::size_t n = 0;
          for (auto i : q.operators)
            n += std::count(plan.replicas[i].begin(), plan.replicas[i].end(), h);
          BOOST_TEST(n <= 1u);
        }
  }
}

BOOST_AUTO_TEST_CASE(running_replicas_stay_and_count_against_capacity) {
  test::model_builder b;
  b.host("h0", 1.0).host("h1", 1.0).host("h2", 1.0);
  b.op("S", 0.5, 0);
  b.op("T", 0.4, 1);
  auto m = b.build();
  m.replicas = {{2}, {}};  // S's replica already runs on h2 and leaves it 0.5
  BOOST_TEST(spare_capacity(m) == 0.5 + 0.6 + 0.5, tt::tolerance(1e-12));
  planner_options o;
  o.max_level = 2;
  auto plan = plan_replicas(m, o);
  // T (the lighter, so more important) goes first at each level: h0, then h2; S's second
  // replica then fits only h1.
  BOOST_TEST(plan.replicas[0] == (hosts{2, 1}), tt::per_element());
  BOOST_TEST(plan.replicas[1] == (hosts{0, 2}), tt::per_element());
  BOOST_TEST(plan.replica_load == 1.8, tt::tolerance(1e-12));
  m.replicas = {{0}, {}};
  BOOST_TEST(*validate(m) ==
             "operator 'S' has a replica on host #0, which does not exist or "
             "holds its primary");
}
