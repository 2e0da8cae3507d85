// Plan compilation (fusion, stage edges, channel counts) and graph validation, without actors.
#define BOOST_TEST_MODULE plan
#include <boost/test/unit_test.hpp>

#include "tidemark/core/job.hpp"
#include "tidemark/core/plan.hpp"

using namespace tidemark;

BOOST_AUTO_TEST_CASE(forward_chains_fuse_and_key_by_splits_stages) {
  job j{"plan"};
  auto s = j.from_container(std::vector<int>{1}, "src");
  auto m = s.map([](int x) { return x; }, "m").filter([](int) { return true; }, "f");
  m.key_by([](int x) { return x; }, "k").fold(0, [](int a, int) { return a; }, "agg").count("sink");
  BOOST_TEST(!validate(j.graph()));
  auto p = compile(j.graph());
  BOOST_REQUIRE(p.stages.size() == 2u);
  BOOST_TEST(p.stages[0].ops.size() == 4u);  // src => m => f => k
  BOOST_TEST(p.stages[1].ops.size() == 2u);  // agg => sink
  BOOST_REQUIRE(p.edges.size() == 1u);
  BOOST_TEST((p.edges[0].part == partitioning::key_hash));
  BOOST_TEST(to_text(j.graph(), p) ==
             "stage 0 x1: src (from_container) => m (map) => f (filter) => k (key_by)\n"
             "stage 1 x1: agg (fold) => sink (count)  <- stage 0 [key_hash]\n"
             "(=> fused into one actor per instance; <- channels between stages)\n");
  auto unfused = compile(j.graph(), {false});
  BOOST_TEST(unfused.stages.size() == 6u);
  BOOST_TEST(unfused.channel_count() == 5u);
}

BOOST_AUTO_TEST_CASE(parallelism_change_and_fan_out_break_fusion) {
  job j{"fan"};
  auto s = j.from_container(std::vector<int>{1}, "src");
  auto m = s.map([](int x) { return x; }, "m").parallelism(3);
  m.count("a");
  m.rebalance().filter([](int) { return true; }, "b").parallelism(2).count("c");
  auto p = compile(j.graph());
  BOOST_TEST(p.stages.size() == 4u);  // src | m | a | b => c: m has two consumers
  BOOST_TEST(p.stages[2].parallelism == 3u);  // a sink takes the parallelism of its input
  BOOST_TEST(p.stages[3].ops.size() == 2u);
  // src(1) -> m(3): forward with different parallelism is all-to-all: 3 channels;
  // m(3) -> a(3): pointwise, 3; m(3) -> b(2): rebalance, 6
  BOOST_TEST(p.channel_count() == 12u);
  auto dot = to_dot(j.graph(), p);
  BOOST_TEST(dot.find("label=\"rebalance\"") != std::string::npos);
  BOOST_TEST(dot.find("subgraph cluster_3") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(validation_names_the_operator) {
  logical_graph g;
  logical_node src;
  src.name = "src";
  src.kind = node_kind::source;
  g.add(src);
  logical_node loop;
  loop.name = "loop";
  loop.inputs = {{0, partitioning::forward}, {1, partitioning::forward}};
  g.add(loop);
  logical_node sink;
  sink.name = "out";
  sink.kind = node_kind::sink;
  sink.inputs = {{1, partitioning::forward}};
  g.add(sink);
  BOOST_TEST(*validate(g) ==
             "the job has a cycle: 'loop' -> 'loop'; close loops with job::iterate (a feedback edge)");
  g.node(1).inputs.pop_back();
  BOOST_TEST(!validate(g));
  g.node(1).parallelism = 0;
  BOOST_TEST(*validate(g) == "operator 'loop' has parallelism 0: use 1 or more");
  g.node(1).parallelism = 1;
  g.node(2).inputs[0].from = 7;
  BOOST_TEST(*validate(g) == "operator 'out' reads from unknown operator id 7");
  g.node(2).inputs[0].from = 1;
  g.node(2).inputs[0].port = 1;  // 'loop' has only its main output
  BOOST_TEST(*validate(g) == "operator 'out' reads output port 1 of 'loop', which has 1 port(s)");
}

BOOST_AUTO_TEST_CASE(key_by_runs_in_its_input_instances) {
  job j{"keyed"};
  auto m = j.from_container(std::vector<int>{1}, "src").map([](int x) { return x; }, "m").parallelism(3);
  m.key_by([](int x) { return x; }, "k").fold(0, [](int a, int) { return a; }, "agg").count("sink");
  auto p = compile(j.graph());
  BOOST_REQUIRE(p.stages.size() == 3u);       // src | m => k | agg => sink
  BOOST_TEST(p.stages[1].ops.size() == 2u);  // the hashing is fused with its input
  BOOST_TEST(p.stages[1].parallelism == 3u);
}

namespace {

/// src => w, where w has a main output and a side output "late"; readers are added by the tests.
logical_graph window_with_late_output() {
  logical_graph g;
  logical_node src;
  src.name = "src";
  src.op = "source";
  src.kind = node_kind::source;
  g.add(src);
  logical_node w;
  w.name = "w";
  w.op = "window";
  w.inputs = {{0, partitioning::forward}};
  w.outputs.push_back({"late", nullptr, "int"});
  g.add(w);
  return g;
}

node_id add_sink(logical_graph& g, const std::string& name, node_id from, std::uint32_t port,
                 partitioning part = partitioning::forward) {
  logical_node n;
  n.name = name;
  n.op = "sink";
  n.kind = node_kind::sink;
  n.inputs = {{from, part, false, port}};
  return g.add(n);
}

}  // namespace

BOOST_AUTO_TEST_CASE(each_port_with_one_forward_reader_fuses_into_a_tree) {
  auto g = window_with_late_output();
  add_sink(g, "results", 1, 0);
  add_sink(g, "lates", 1, 1);
  BOOST_REQUIRE(!validate(g));
  auto p = compile(g);
  BOOST_REQUIRE(p.stages.size() == 1u);
  const auto& ops = p.stages[0].ops;
  BOOST_REQUIRE(ops.size() == 4u);
  BOOST_TEST(ops[1].node == 1u);
  BOOST_TEST((ops[2].node == 2u && ops[2].from == 1u && ops[2].port == 0u));
  BOOST_TEST((ops[3].node == 3u && ops[3].from == 1u && ops[3].port == 1u));
  BOOST_TEST(p.edges.empty());
  BOOST_TEST(to_text(g, p) ==
             "stage 0 x1: src (source) => w (window) => results (sink), w:late => lates (sink)\n"
             "(=> fused into one actor per instance; <- channels between stages)\n");
  BOOST_TEST(to_dot(g, p).find("n1 -> n3 [style=bold, label=\"late\"]") != std::string::npos);

  auto unfused = compile(g, {false});
  BOOST_REQUIRE(unfused.stages.size() == 4u);
  BOOST_REQUIRE(unfused.edges.size() == 3u);
  const auto& late = unfused.edges[2];
  BOOST_TEST((late.from == 1u && late.from_op == 0u && late.port == 1u && late.to == 3u));
  BOOST_TEST(to_text(g, unfused).find("stage 3 x1: lates (sink)  <- stage 1 w:late [forward]") !=
             std::string::npos);
  BOOST_TEST(to_dot(g, unfused).find("n1 -> n3 [label=\"forward, late\"]") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_port_with_two_readers_or_a_partitioned_reader_leaves_the_stage) {
  auto g = window_with_late_output();
  add_sink(g, "results", 1, 0);
  add_sink(g, "late_a", 1, 1);
  add_sink(g, "late_b", 1, 1);
  add_sink(g, "late_keyed", 1, 1, partitioning::key_hash);
  auto p = compile(g);
  // the main output keeps its single reader fused; the late port has three readers
  BOOST_REQUIRE(p.stages.size() == 4u);
  BOOST_TEST(p.stages[0].ops.size() == 3u);  // src => w => results
  BOOST_REQUIRE(p.edges.size() == 3u);
  for (const auto& e : p.edges) {
    BOOST_TEST(e.from == 0u);
    BOOST_TEST(e.from_op == 1u);  // the window, not the stage's last operator
    BOOST_TEST(e.port == 1u);
  }
  BOOST_TEST((p.edges[2].part == partitioning::key_hash));
}

// A loop: the feedback edge runs from the stage that closes the loop back to the feedback node's
// stage (which comes earlier in the plan), and loops_of names the stages on the cycle.
BOOST_AUTO_TEST_CASE(a_loop_compiles_with_its_feedback_edge_and_its_stages) {
  job j{"loop"};
  auto loop = j.iterate<int>("back");
  auto inc = j.from_container(std::vector<int>{1}, "src")
                 .merge(loop.feedback())
                 .name("merge")
                 .map([](int x) { return x + 1; }, "inc");
  loop.close(inc.filter([](int x) { return x < 3; }, "again"));
  inc.count("out");
  auto p = compile(j.graph());
  auto stage_of = [&](const std::string& name) {
    for (std::uint32_t s = 0; s < p.stages.size(); ++s)
      for (const auto& op : p.stages[s].ops)
        if (j.graph().node(op.node).name == name) return static_cast<std::int32_t>(s);
    return -1;
  };
  std::vector<stage_edge> feedback;
  for (const auto& e : p.edges)
    if (e.feedback) feedback.push_back(e);
  BOOST_REQUIRE(feedback.size() == 1u);
  BOOST_TEST(static_cast<std::int32_t>(feedback[0].from) == stage_of("again"));
  BOOST_TEST(static_cast<std::int32_t>(feedback[0].to) == stage_of("back"));
  BOOST_TEST(feedback[0].from > feedback[0].to);
  const auto loops = loops_of(p);
  const auto cycle = loops[stage_of("back")];
  BOOST_TEST(cycle >= 0);
  BOOST_TEST(loops[stage_of("merge")] == cycle);
  BOOST_TEST(loops[stage_of("again")] == cycle);
  BOOST_TEST(loops[stage_of("src")] == -1);
  BOOST_TEST(loops[stage_of("out")] == -1);
  BOOST_TEST(to_text(j.graph(), p).find("[forward, feedback]") != std::string::npos);
}
