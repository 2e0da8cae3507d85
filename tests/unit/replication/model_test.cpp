// The replication model: the Borealis load model, queries from sinks, validation, primary
// placement, and building the model from a logical graph or its JSON form.
#define BOOST_TEST_MODULE replication_model
#include <boost/test/unit_test.hpp>

#include "model_builder.hpp"
#include "tidemark/replication/graph_adapter.hpp"
#include "tidemark/replication/planner.hpp"
#include "tidemark/core/metrics.hpp"
#include "tidemark/core/plan.hpp"

using namespace tidemark::replication;
namespace tt = boost::test_tools;

namespace {

// The paper's example query S1 -> F1 -> A1 -> D1 with source rate r1 = 100 events/s.
replication_model paper_example() {
  replication_model m;
  m.hosts = {{"h0", 1.0, 1e9}};
  auto add = [&](std::string name, double cost, double sel, std::vector<op_index> in) {
    operator_info o;
    o.name = std::move(name);
    o.cost = cost;
    o.selectivity = sel;
    o.bytes_in = 10;
    o.bytes_out = 4;
    for (auto i : in) o.inputs.push_back({i, 1.0});
    m.operators.push_back(o);
    m.primary.push_back(0);
  };
  add("S1", 0.001, 1.0, {});
  m.operators[0].source_rate = 100;
  add("F1", 0.002, 0.5, {0});
  add("A1", 0.01, 0.1, {1});
  add("D1", 0.001, 1.0, {2});
  m.queries = queries_from_sinks(m.operators);
  return m;
}

}  // namespace

BOOST_AUTO_TEST_CASE(load_model_follows_source_rates_and_selectivities) {
  auto m = paper_example();
  apply_load_model(m);
  // load(S1) = r1 c(S1), load(F1) = r1 c(F1), r2 = sel(F1) r1, r3 = sel(A1) r2.
  BOOST_TEST(m.operators[0].load == 0.1, tt::tolerance(1e-12));
  BOOST_TEST(m.operators[1].load == 0.2, tt::tolerance(1e-12));
  BOOST_TEST(m.operators[2].input_rate == 50.0, tt::tolerance(1e-12));
  BOOST_TEST(m.operators[2].load == 0.5, tt::tolerance(1e-12));
  BOOST_TEST(m.operators[3].input_rate == 5.0, tt::tolerance(1e-12));
  BOOST_TEST(m.operators[3].load == 0.005, tt::tolerance(1e-12));
  // netin = input rate * input tuple size, netout = output rate * output tuple size.
  BOOST_TEST(m.operators[1].net_in == 1000.0, tt::tolerance(1e-12));
  BOOST_TEST(m.operators[1].net_out == 200.0, tt::tolerance(1e-12));
  BOOST_TEST(total_load(m) == 0.805, tt::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(measurements_replace_the_estimate_and_flow_downstream) {
  auto m = paper_example();
  m.operators[1].measured_input_rate = 300.0;  // F1 sees more than the model predicts
  m.operators[2].measured_load = 0.25;
  apply_load_model(m);
  BOOST_TEST(m.operators[1].load == 0.6, tt::tolerance(1e-12));
  BOOST_TEST(m.operators[2].input_rate == 150.0, tt::tolerance(1e-12));
  BOOST_TEST(m.operators[2].load == 0.25, tt::tolerance(1e-12));
  BOOST_TEST(m.operators[3].input_rate == 15.0, tt::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(binary_operators_add_their_input_rates) {
  replication_model m;
  m.hosts = {{"h0"}};
  m.operators.resize(3);
  m.operators[0].source_rate = 10;
  m.operators[1].source_rate = 30;
  m.operators[1].selectivity = 0.5;
  m.operators[2].inputs = {{0, 1.0}, {1, 0.5}};
  m.operators[2].cost = 0.01;
  apply_load_model(m);
  BOOST_TEST(m.operators[2].input_rate == 10 + 15 * 0.5, tt::tolerance(1e-12));
  BOOST_TEST(m.operators[2].load == 0.175, tt::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(each_sink_defines_a_query_and_shared_operators_count_for_each) {
  test::model_builder b;
  b.host("h0");
  auto s = b.op("S", 0.1, 0);
  auto f = b.op("F", 0.1, 0, {s});
  b.op("D1", 0.1, 0, {f});
  auto a = b.op("A", 0.1, 0, {f});
  b.op("D2", 0.1, 0, {a});
  auto m = b.build();
  BOOST_REQUIRE_EQUAL(m.queries.size(), 2u);
  BOOST_TEST(m.queries[0].name == "D1");
  BOOST_TEST(m.queries[0].operators == (std::vector<op_index>{0, 1, 2}), tt::per_element());
  BOOST_TEST(m.queries[1].operators == (std::vector<op_index>{0, 1, 3, 4}), tt::per_element());
  BOOST_TEST(query_degree(m) == (std::vector<std::uint32_t>{2, 2, 1, 1, 1}), tt::per_element());
}

BOOST_AUTO_TEST_CASE(validate_names_the_operator_at_fault) {
  test::model_builder b;
  b.host("h0");
  b.op("S", 0.1, 0);
  b.op("D", 0.1, 0, {0});
  auto m = b.build();
  BOOST_TEST(!validate(m));
  auto bad = m;
  bad.operators[0].inputs = {{1, 1.0}};
  BOOST_TEST(*validate(bad) ==
             "operator 'S' reads from operator #1, which does not come before it: list "
             "operators in data-flow order");
  bad = m;
  bad.primary[1] = 5;
  BOOST_TEST(*validate(bad) == "operator 'D' is placed on host #5, but there are only 1 hosts");
  bad = m;
  bad.operators[1].cost = -1;
  BOOST_TEST(validate(bad)->find("operator 'D' has a negative") == 0u);
  bad = m;
  bad.queries.clear();
  BOOST_TEST(*validate(bad) == "the model has no queries: every job needs a sink");
}

BOOST_AUTO_TEST_CASE(primaries_go_heaviest_first_to_the_least_used_host) {
  test::model_builder b;
  b.host("h0").host("h1");
  b.op("a", 0.5, 0);
  b.op("b", 0.4, 0);
  b.op("c", 0.3, 0);
  b.op("d", 0.2, 0);
  auto m = b.build();
  place_primaries(m);
  // 0.5 -> h0, 0.4 -> h1, 0.3 -> h1 (0.4 < 0.5), 0.2 -> h0 (0.5 < 0.7).
  BOOST_TEST(m.primary == (std::vector<host_index>{0, 1, 1, 0}), tt::per_element());
}

BOOST_AUTO_TEST_CASE(graph_instances_get_their_share_of_each_stream) {
  tidemark::logical_graph g;
  auto src = g.add({0, "src", "gen", tidemark::node_kind::source, 2, {}, {}, {}, {}});
  auto map = g.add({0,
                    "map",
                    "map",
                    tidemark::node_kind::transform,
                    2,
                    {},
                    {{src, tidemark::partitioning::forward}},
                    {},
                    {}});
  auto agg = g.add({0,
                    "agg",
                    "reduce",
                    tidemark::node_kind::transform,
                    4,
                    {},
                    {{map, tidemark::partitioning::key_hash}},
                    {},
                    {}});
  g.add({0,
         "out",
         "collect",
         tidemark::node_kind::sink,
         1,
         {},
         {{agg, tidemark::partitioning::forward}},
         {},
         {}});
  std::map<std::string, operator_annotation> ann;
  ann["src"].source_rate = 1000;
  ann["map"].cost = 1e-4;
  ann["map"].selectivity = 0.5;
  ann["agg"].cost = 1e-3;
  ann["agg"].hosts = {};
  auto m = model_from_graph(g, ann, {{"a"}, {"b"}, {"c"}});
  BOOST_REQUIRE_EQUAL(m.operators.size(), 9u);
  BOOST_TEST(m.operators[2].name == "map[0]");
  // Forward between equal parallelisms pairs instances; key_hash splits each map's output
  // over the four agg instances.
  BOOST_REQUIRE_EQUAL(m.operators[2].inputs.size(), 1u);
  BOOST_TEST(m.operators[2].inputs[0].from == 0u);
  BOOST_TEST(m.operators[2].input_rate == 500.0, tt::tolerance(1e-12));
  BOOST_TEST(m.operators[2].load == 0.05, tt::tolerance(1e-12));
  BOOST_REQUIRE_EQUAL(m.operators[4].inputs.size(), 2u);
  BOOST_TEST(m.operators[4].input_rate == 125.0, tt::tolerance(1e-12));
  BOOST_TEST(m.operators[4].load == 0.125, tt::tolerance(1e-12));
  // One query for the one sink node, with every instance upstream of it.
  BOOST_REQUIRE_EQUAL(m.queries.size(), 1u);
  BOOST_TEST(m.queries[0].name == "out");
  BOOST_TEST(m.queries[0].operators.size() == 9u);
}

BOOST_AUTO_TEST_CASE(a_compiled_plan_is_modelled_per_stage_instance_and_sources_and_sinks_stay_single) {
  // src (2) -> forward -> map (2) fuse into one stage holding the source; agg (4) reads it by key;
  // the sink (1) reads agg's four instances, so it is a stage of its own
  tidemark::logical_graph g;
  auto src = g.add({0, "src", "gen", tidemark::node_kind::source, 2, {}, {}, {}, {}});
  auto map = g.add({0, "map", "map", tidemark::node_kind::transform, 2, {},
                    {{src, tidemark::partitioning::forward}}, {}, {}});
  auto agg = g.add({0, "agg", "reduce", tidemark::node_kind::transform, 4, {},
                    {{map, tidemark::partitioning::key_hash}}, {}, {}});
  g.add({0, "out", "collect", tidemark::node_kind::sink, 1, {},
         {{agg, tidemark::partitioning::forward}}, {}, {}});
  const auto plan = tidemark::compile(g);
  BOOST_REQUIRE_EQUAL(plan.stages.size(), 3u);
  const std::vector<double> load{0.1, 0.1, 0.2, 0.2, 0.2, 0.2, 0.05};
  auto m = model_from_plan(g, plan, load, {{"a", 10}, {"b", 10}, {"c", 10}}, {0, 1, 2, 0, 1, 2, 0});
  BOOST_REQUIRE_EQUAL(m.operators.size(), 7u);
  BOOST_TEST(m.operators[0].name == "src[0]");
  BOOST_TEST(m.operators[2].name == "agg[0]");
  BOOST_TEST(m.operators[6].name == "out");
  const std::vector<bool> replicable{false, false, true, true, true, true, false};
  for (std::size_t i = 0; i < 7; ++i) {
    BOOST_TEST(m.operators[i].replicable == replicable[i]);
    BOOST_TEST(m.operators[i].load == load[i], tt::tolerance(1e-12));
  }
  // each agg instance reads both source instances, a quarter of each; the sink all of agg
  BOOST_REQUIRE_EQUAL(m.operators[3].inputs.size(), 2u);
  BOOST_TEST(m.operators[3].inputs[1].from == 1u);
  BOOST_TEST(m.operators[3].inputs[1].share == 0.25, tt::tolerance(1e-12));
  BOOST_REQUIRE_EQUAL(m.operators[6].inputs.size(), 4u);
  BOOST_TEST(m.operators[6].inputs[0].share == 1.0, tt::tolerance(1e-12));
  BOOST_REQUIRE_EQUAL(m.queries.size(), 1u);
  BOOST_TEST(m.queries[0].operators.size() == 7u);
  // with room for everything, no strategy copies a source or a sink, and bin packing copies every
  // agg instance (the colour constraint allows one replica of the one query per host: three)
  for (auto o : all_strategies(1)) {
    o.spare = 100.0;
    const auto p = plan_replicas(m, o);
    for (std::size_t i = 0; i < 7; ++i)
      if (!replicable[i] || o.placement == placement_strategy::bin_packing)
        BOOST_TEST(p.replicas[i].size() == (replicable[i] ? 1u : 0u));
  }
  BOOST_CHECK_THROW(model_from_plan(g, plan, {0.1}, {{"a"}}, {0}), model_error);
}

BOOST_AUTO_TEST_CASE(graph_adapter_rejects_what_it_cannot_model) {
  tidemark::logical_graph g;
  auto src = g.add({0, "src", "gen", tidemark::node_kind::source, 1, {}, {}, {}, {}});
  g.add({0,
         "out",
         "collect",
         tidemark::node_kind::sink,
         1,
         {},
         {{src, tidemark::partitioning::forward}},
         {},
         {}});
  std::map<std::string, operator_annotation> ann;
  ann["nope"].cost = 1;
  BOOST_CHECK_EXCEPTION(model_from_graph(g, ann, {{"a"}}), model_error, [](const auto& e) {
    return std::string{e.what()} == "annotation for unknown operator 'nope'";
  });
  ann.clear();
  ann["src"].hosts = {"zz"};
  ann["out"].hosts = {"a"};
  BOOST_CHECK_EXCEPTION(model_from_graph(g, ann, {{"a"}}), model_error, [](const auto& e) {
    return std::string{e.what()} == "operator 'src' is placed on unknown host 'zz'";
  });
  ann.erase("out");
  ann["src"].hosts = {"a"};
  BOOST_CHECK_THROW(model_from_graph(g, ann, {{"a"}}), model_error);
}

BOOST_AUTO_TEST_CASE(json_graph_format_round_trip) {
  auto m = model_from_json(R"({
    "hosts": [{"name": "a", "cpu": 2}, {"name": "b", "network": 1e6}],
    "operators": [
      {"name": "ticks", "rate": 100, "cost": 0.001, "hosts": ["a"]},
      {"name": "sap", "inputs": ["ticks"], "cost": 0.002, "selectivity": 0.5, "hosts": ["b"]},
      {"name": "avg", "inputs": [{"from": "sap", "partitioning": "key_hash"}],
       "load": 0.3, "hosts": ["b"]},
      {"name": "out", "inputs": ["avg"], "kind": "sink", "hosts": ["a"]}
    ]})",
                           "g.json");
  BOOST_TEST(m.hosts[0].cpu_capacity == 2.0);
  BOOST_TEST(m.hosts[1].net_capacity == 1e6);
  BOOST_TEST(m.operators[1].load == 0.2, tt::tolerance(1e-12));
  BOOST_TEST(m.operators[2].load == 0.3, tt::tolerance(1e-12));
  BOOST_TEST(m.primary == (std::vector<host_index>{0, 1, 1, 0}), tt::per_element());
  BOOST_REQUIRE_EQUAL(m.queries.size(), 1u);
}

BOOST_AUTO_TEST_CASE(json_errors_name_the_file_and_the_operator) {
  auto message = [](const std::string& text) {
    try {
      model_from_json(text, "g.json");
    } catch (const model_error& e) {
      return std::string{e.what()};
    }
    return std::string{"no error"};
  };
  BOOST_TEST(message("{").find("g.json: not valid JSON") == 0u);
  BOOST_TEST(message(R"({"hosts": {"count": 2}, "operators": [{"name": "s", "cots": 1}]})") ==
             "g.json: operator #0 ('s') has unknown field 'cots'");
  BOOST_TEST(message(R"({"hosts": {"count": 2}, "operators": [{"name": "s", "cost": "x"}]})") ==
             "g.json: operator #0 ('s') field 'cost' must be a number");
  BOOST_TEST(message(R"({"hosts": {"count": 2},
                         "operators": [{"name": "s"}, {"name": "d", "inputs": ["x"]}]})") ==
             "g.json: operator 'd' reads from unknown operator 'x'");
  BOOST_TEST(message(R"({"hosts": {"count": 0}, "operators": [{"name": "s"}]})") ==
             "g.json: 'hosts' needs 'count', a whole number >= 1");
  BOOST_TEST(message(R"({"hosts": {"count": 1}, "operators": [{"name": "s", "rate": -1}]})") ==
             "g.json: operator #0 ('s') field 'rate' must be >= 0");
}

BOOST_AUTO_TEST_CASE(measured_run_metrics_become_annotations) {
  tidemark::job_result run;
  run.seconds = 2;
  tidemark::instance_metrics fused;  // src -> map in one actor, busy 0.6 s
  fused.busy_ns = 600'000'000;
  fused.operators.push_back({"src", "gen", 0, 0, 1000, 0, 0, 0, {}});
  fused.operators.push_back({"map", "map", 0, 1000, 500, 0, 0, 0, {}});
  tidemark::instance_metrics sink;
  sink.busy_ns = 100'000'000;
  sink.operators.push_back({"out", "collect", 0, 500, 0, 0, 0, 0, {}});
  run.instances = {fused, sink};
  auto ann = measured_annotations(run);
  BOOST_TEST(ann["src"].source_rate == 500.0);
  BOOST_TEST(!ann["src"].measured_input_rate);
  BOOST_TEST(*ann["src"].measured_load == 0.15, tt::tolerance(1e-12));  // half of 0.6 s over 2 s
  BOOST_TEST(*ann["map"].measured_input_rate == 500.0);
  BOOST_TEST(ann["map"].selectivity == 0.5);
  BOOST_TEST(*ann["map"].measured_load == 0.15, tt::tolerance(1e-12));
  BOOST_TEST(*ann["out"].measured_input_rate == 250.0);
  BOOST_TEST(*ann["out"].measured_load == 0.05, tt::tolerance(1e-12));

  tidemark::logical_graph g;
  auto src = g.add({0, "src", "gen", tidemark::node_kind::source, 1, {}, {}, {}, {}});
  auto map = g.add({0,
                    "map",
                    "map",
                    tidemark::node_kind::transform,
                    1,
                    {},
                    {{src, tidemark::partitioning::forward}},
                    {},
                    {}});
  g.add({0,
         "out",
         "collect",
         tidemark::node_kind::sink,
         1,
         {},
         {{map, tidemark::partitioning::forward}},
         {},
         {}});
  auto m = model_from_graph(g, ann, {{"a", 4.0}, {"b", 4.0}});
  BOOST_TEST(m.operators[1].load == 0.15, tt::tolerance(1e-12));
  BOOST_TEST(m.operators[2].input_rate == 250.0);
}
