// The replication model measured on a running job: rates, selectivities and loads over the
// interval between two live snapshots, one query per sink, primaries where the instances ran.
#define BOOST_TEST_MODULE replication_live_model
#include <boost/test/unit_test.hpp>

#include <algorithm>

#include "tidemark/core/metrics.hpp"
#include "tidemark/replication/graph_adapter.hpp"

using namespace tidemark::replication;
namespace tt = boost::test_tools;

namespace {

// src -> map (2 instances, rebalance) -> out, and src -> alert: two queries sharing src.
tidemark::logical_graph two_queries() {
  using tidemark::node_kind;
  using tidemark::partitioning;
  tidemark::logical_graph g;
  auto src = g.add({0, "src", "gen", node_kind::source, 1, {}, {}, {}, {}});
  auto map = g.add(
      {0, "map", "map", node_kind::transform, 2, {}, {{src, partitioning::rebalance}}, {}, {}});
  g.add({0, "out", "collect", node_kind::sink, 1, {}, {{map, partitioning::rebalance}}, {}, {}});
  g.add({0, "alert", "collect", node_kind::sink, 1, {}, {{src, partitioning::forward}}, {}, {}});
  return g;
}

tidemark::instance_metrics stage(std::uint32_t stage, std::uint32_t instance, std::string op,
                                 std::uint64_t in, std::uint64_t out, double busy_s) {
  tidemark::instance_metrics m;
  m.stage = stage;
  m.instance = instance;
  m.busy_ns = static_cast<std::int64_t>(busy_s * 1e9);
  m.operators.push_back({std::move(op), "", instance, in, out, 0, 0, 0, {}});
  return m;
}

// Snapshots 2 s apart; alert had not reported in the first, so it counts from zero.
live_measurement measured() {
  live_measurement m;
  m.before = {stage(0, 0, "src", 0, 1000, 0.1), stage(1, 0, "map", 500, 250, 0.2),
              stage(1, 1, "map", 500, 250, 0.2), stage(2, 0, "out", 400, 0, 0.05)};
  m.after = {stage(0, 0, "src", 0, 5000, 0.5), stage(1, 0, "map", 2500, 1250, 1.0),
             stage(1, 1, "map", 2500, 750, 0.6), stage(2, 0, "out", 1900, 0, 0.25),
             stage(3, 0, "alert", 3000, 0, 0.3)};
  m.seconds = 2;
  m.node_of = {{"a"}, {"a", "b"}, {"b"}, {"c"}};
  return m;
}

op_index index_of(const replication_model& m, const std::string& name) {
  for (op_index i = 0; i < m.operators.size(); ++i)
    if (m.operators[i].name == name) return i;
  BOOST_FAIL("no operator " + name);
  return 0;
}

std::vector<std::string> names(const replication_model& m, std::vector<op_index> ops) {
  std::vector<std::string> result;
  for (auto i : ops) result.push_back(m.operators[i].name);
  std::sort(result.begin(), result.end());
  return result;
}

}  // namespace

BOOST_AUTO_TEST_CASE(rates_selectivities_and_loads_come_from_the_interval) {
  auto live = model_from_live(two_queries(), measured(), {{"a", 4.0}, {"b", 4.0}, {"c", 4.0}});
  const auto& m = live.model;
  BOOST_REQUIRE_EQUAL(m.operators.size(), 5u);
  const auto& src = m.operators[index_of(m, "src")];
  // src: 4000 events out and 0.4 s busy in 2 s
  BOOST_TEST(src.source_rate == 2000.0, tt::tolerance(1e-9));
  BOOST_TEST(src.load == 0.2, tt::tolerance(1e-9));
  // map: 4000 in, 1500 out, 1.2 s busy over both instances, split evenly
  for (const auto* name : {"map[0]", "map[1]"}) {
    const auto& map = m.operators[index_of(m, name)];
    BOOST_TEST(map.input_rate == 1000.0, tt::tolerance(1e-9));
    BOOST_TEST(map.selectivity == 0.375, tt::tolerance(1e-9));
    BOOST_TEST(map.load == 0.3, tt::tolerance(1e-9));
  }
  // out: 1500 in, 0.2 s busy; alert from zero: 3000 in, 0.3 s busy
  BOOST_TEST(m.operators[index_of(m, "out")].input_rate == 750.0, tt::tolerance(1e-9));
  BOOST_TEST(m.operators[index_of(m, "out")].load == 0.1, tt::tolerance(1e-9));
  BOOST_TEST(m.operators[index_of(m, "alert")].input_rate == 1500.0, tt::tolerance(1e-9));
  BOOST_TEST(m.operators[index_of(m, "alert")].load == 0.15, tt::tolerance(1e-9));
  // one query per sink; src serves both
  BOOST_REQUIRE_EQUAL(m.queries.size(), 2u);
  for (const auto& q : m.queries) {
    auto expected = q.name == "out"
                        ? std::vector<std::string>{"map[0]", "map[1]", "out", "src"}
                        : std::vector<std::string>{"alert", "src"};
    BOOST_TEST(names(m, q.operators) == expected, tt::per_element());
  }
}

BOOST_AUTO_TEST_CASE(primaries_stay_on_the_nodes_that_ran_them) {
  auto live = model_from_live(two_queries(), measured(), {{"a", 4.0}, {"b", 4.0}, {"c", 4.0}});
  BOOST_TEST(live.measured_placement);
  const auto& m = live.model;
  for (auto [name, host] : std::vector<std::pair<std::string, std::string>>{
           {"src", "a"}, {"map[0]", "a"}, {"map[1]", "b"}, {"out", "b"}, {"alert", "c"}}) {
    auto i = index_of(m, name);
    BOOST_TEST(m.hosts[m.primary[i]].name == host, name);
    BOOST_TEST(live.measured_on[i] == host, name);
  }
}

BOOST_AUTO_TEST_CASE(nodes_that_are_not_hosts_leave_placement_to_the_planner) {
  // an embedded run measures everything on "local"; plan on two other hosts
  auto m = measured();
  m.node_of = {{"local"}, {"local", "local"}, {"local"}, {"local"}};
  auto live = model_from_live(two_queries(), m, {{"h0", 1.0}, {"h1", 1.0}});
  BOOST_TEST(!live.measured_placement);
  BOOST_TEST(live.measured_on == std::vector<std::string>(5, "local"), tt::per_element());
  double on_h0 = 0;
  for (op_index i = 0; i < live.model.operators.size(); ++i)
    if (live.model.primary[i] == 0) on_h0 += live.model.operators[i].load;
  // place_primaries spreads 1.05 of load: neither host holds all of it
  BOOST_TEST(on_h0 > 0.0);
  BOOST_TEST(on_h0 < 1.05);
}

BOOST_AUTO_TEST_CASE(an_empty_interval_or_an_unknown_operator_is_an_error) {
  auto m = measured();
  m.seconds = 0;
  BOOST_CHECK_THROW(model_from_live(two_queries(), m, {{"a"}}), model_error);
  m = measured();
  m.after.push_back(stage(4, 0, "nope", 1, 1, 0.1));
  BOOST_CHECK_EXCEPTION(model_from_live(two_queries(), m, {{"a"}}), model_error,
                        [](const model_error& e) {
                          return std::string{e.what()}.find("'nope'") != std::string::npos;
                        });
}
