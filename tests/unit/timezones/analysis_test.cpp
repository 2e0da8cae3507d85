// Timezone analysis on the shapes of the patent's figures 4a-4d, loops through job::iterate,
// and the placement of synchronizer gates by synchronize().
#define BOOST_TEST_MODULE timezone_analysis
#include <boost/test/unit_test.hpp>

#include <algorithm>

#include "tidemark/core/job.hpp"
#include "tidemark/core/synchronizer.hpp"
#include "tidemark/core/timezones.hpp"

using namespace tidemark;

namespace {

/// A stand-in for a database joiner: an async operator that completes at once.
stream<int> db_join(const stream<int>& in, const std::string& name, std::uint32_t concurrency = 4) {
  return in.async_map<int>([](const int& x, async_result<int> r) { r.complete(x); }, concurrency,
                           name);
}

stream<int> prim(const stream<int>& in, const std::string& name) {
  return in.map([](int x) { return x; }, name);
}

std::vector<node_id> ids(const job& j, std::vector<std::string> names) {
  std::vector<node_id> result;
  for (const auto& name : names)
    for (const auto& n : j.graph().nodes())
      if (n.name == name) result.push_back(n.id);
  std::sort(result.begin(), result.end());
  return result;
}

node_id id(const job& j, const std::string& name) { return ids(j, {name}).at(0); }

}  // namespace

// Fig. 4a: everything downstream of the database joiner is its timezone; the joiner's output is
// the timezone's only input.
BOOST_AUTO_TEST_CASE(fig_4a_downstream_of_a_delayed_operator) {
  job j{"4a"};
  auto src = j.from_container(std::vector<int>{1}, "src");
  auto p = prim(prim(db_join(prim(src, "before"), "db"), "p1"), "p2");
  p.count("out");
  BOOST_REQUIRE(!validate(j.graph()));
  auto zones = find_timezones(j.graph());
  BOOST_REQUIRE(zones.size() == 1u);
  BOOST_TEST(zones[0].origin == id(j, "db"));
  BOOST_TEST(!zones[0].origin_inside);
  BOOST_TEST(zones[0].members == ids(j, {"p1", "p2", "out"}));
  BOOST_REQUIRE(zones[0].inputs.size() == 1u);
  BOOST_TEST((zones[0].inputs[0] == timezone_input{id(j, "db"), id(j, "p1"), 0, false}));
  BOOST_TEST(!zones[0].parent);
}

// Fig. 4b: a second input into the timezone (from primitive 490) is guarded by the same
// synchronizer; 480, 490 and 495 stay outside and run in parallel.
BOOST_AUTO_TEST_CASE(fig_4b_second_input_shares_the_synchronizer) {
  job j{"4b"};
  auto p480 = prim(j.from_container(std::vector<int>{1}, "src"), "p480");
  auto db = db_join(p480, "db");
  auto p490 = prim(p480, "p490");
  prim(p480, "p495").count("side");
  auto p425 = db.merge(p490).name("p425");
  prim(p425, "p425b").count("out");
  BOOST_REQUIRE(!validate(j.graph()));
  auto zones = find_timezones(j.graph());
  BOOST_REQUIRE(zones.size() == 1u);
  BOOST_TEST(zones[0].members == ids(j, {"p425", "p425b", "out"}));
  BOOST_REQUIRE(zones[0].inputs.size() == 2u);
  BOOST_TEST((zones[0].inputs[0] == timezone_input{id(j, "db"), id(j, "p425"), 0, false}));
  BOOST_TEST((zones[0].inputs[1] == timezone_input{id(j, "p490"), id(j, "p425"), 1, false}));

  // one synchronizer, one gate per input edge, fused into the producers' chains where possible
  auto synced = synchronize(j.graph());
  BOOST_REQUIRE(synced.synchronizers.size() == 1u);
  const auto& gates = synced.synchronizers[0].gates;
  BOOST_REQUIRE(gates.size() == 2u);
  const auto& g = synced.graph;
  BOOST_TEST(g.node(gates[0]).op == "synchronizer");
  BOOST_TEST(g.node(gates[0]).inputs[0].from == id(j, "db"));
  BOOST_TEST(g.node(gates[1]).inputs[0].from == id(j, "p490"));
  BOOST_TEST(g.node(id(j, "p425")).inputs[0].from == gates[0]);
  BOOST_TEST(g.node(id(j, "p425")).inputs[1].from == gates[1]);
  // a gate carries what it guards, so it can cross nodes with the guarded type's codec
  for (auto gate : gates) {
    const auto& guarded = g.node(g.node(gate).inputs[0].from).outputs[0];
    BOOST_TEST(guarded.codec != nullptr);
    BOOST_TEST(g.node(gate).outputs[0].codec == guarded.codec);
    BOOST_TEST(g.node(gate).outputs[0].value_type == guarded.value_type);
  }
  BOOST_TEST(!validate(g));
  auto text = to_text(synced, compile(g));
  BOOST_TEST(text.find("db (async_map, delayed, concurrency 4) => sync0<-db (synchronizer)") !=
             std::string::npos, text);
  BOOST_TEST(text.find("timezone 0 of 'db': p425 p425b out | synchronized inputs: db->p425#0 "
                       "p490->p425#1\n") != std::string::npos, text);
  BOOST_TEST(text.find("synchronizer of timezone 0 (slice 1): sync0<-db x1 sync0<-p490 x1\n") !=
             std::string::npos, text);
  auto dot = to_dot(synced, compile(g));
  BOOST_TEST(dot.find("[shape=octagon, xlabel=\"sync tz 0\"]") != std::string::npos, dot);
  BOOST_TEST(dot.find("xlabel=\"tz 0\"") != std::string::npos, dot);
}

// Fig. 4c: a delayed operator on a loop joins its own timezone; the synchronizer guards the
// loop's outside input and its feedback edge.
BOOST_AUTO_TEST_CASE(fig_4c_delayed_operator_in_a_loop) {
  job j{"4c"};
  auto src = j.from_container(std::vector<int>{1}, "src");
  auto loop = j.iterate<int>("back");
  auto merged = src.merge(loop.feedback()).name("merge");
  auto db = db_join(merged, "db");
  auto p = prim(db, "p");
  loop.close(p.filter([](int x) { return x > 0; }, "again"));
  p.count("out");
  BOOST_REQUIRE(!validate(j.graph()));
  auto zones = find_timezones(j.graph());
  BOOST_REQUIRE(zones.size() == 1u);
  BOOST_TEST(zones[0].origin_inside);
  BOOST_TEST(zones[0].members == ids(j, {"back", "merge", "db", "p", "again", "out"}));
  BOOST_REQUIRE(zones[0].inputs.size() == 2u);
  BOOST_TEST((zones[0].inputs[0] == timezone_input{id(j, "again"), id(j, "back"), 0, true}));
  BOOST_TEST((zones[0].inputs[1] == timezone_input{id(j, "src"), id(j, "merge"), 0, false}));

  // the gate on the feedback edge carries the feedback mark, so the rewritten loop stays valid
  auto synced = synchronize(j.graph());
  const auto& g = synced.graph;
  auto back_gate = g.node(id(j, "back")).inputs[0].from;
  BOOST_TEST(g.node(back_gate).op == "synchronizer");
  BOOST_TEST(g.node(back_gate).inputs[0].feedback);
  BOOST_TEST(!g.node(id(j, "back")).inputs[0].feedback);
  BOOST_TEST(!validate(g));
}

// Fig. 4d: a database joiner inside another's timezone has a nested timezone; an edge entering
// both gets the outer gate first, then the inner one.
BOOST_AUTO_TEST_CASE(fig_4d_nested_timezones) {
  job j{"4d"};
  auto src = j.from_container(std::vector<int>{1}, "src");
  auto p = prim(db_join(src, "db1"), "p");
  auto db2 = db_join(p, "db2");
  auto q = db2.merge(prim(src, "direct")).name("q");
  q.count("out");
  p.count("p_out");
  BOOST_REQUIRE(!validate(j.graph()));
  auto zones = find_timezones(j.graph());
  BOOST_REQUIRE(zones.size() == 2u);
  BOOST_TEST(zones[0].members == ids(j, {"p", "db2", "q", "out", "p_out"}));
  BOOST_TEST(!zones[0].parent);
  BOOST_TEST(zones[1].members == ids(j, {"q", "out"}));
  BOOST_REQUIRE(zones[1].parent.has_value());
  BOOST_TEST(*zones[1].parent == 0u);
  BOOST_REQUIRE(zones[1].inputs.size() == 2u);
  BOOST_TEST((zones[1].inputs[0] == timezone_input{id(j, "db2"), id(j, "q"), 0, false}));
  BOOST_TEST((zones[1].inputs[1] == timezone_input{id(j, "direct"), id(j, "q"), 1, false}));

  auto synced = synchronize(j.graph());
  const auto& g = synced.graph;
  auto inner = g.node(id(j, "q")).inputs[1].from;
  auto outer = g.node(inner).inputs[0].from;
  BOOST_TEST(g.node(inner).name == "sync1<-direct");
  BOOST_TEST(g.node(outer).name == "sync0<-direct");
  BOOST_TEST(g.node(outer).inputs[0].from == id(j, "direct"));
  BOOST_TEST(!validate(g));
  // turned off, the graph stays as it was and the plan says so
  auto off = synchronize(j.graph(), {false});
  BOOST_TEST(off.graph.nodes().size() == j.graph().nodes().size());
  BOOST_TEST(to_text(off, compile(off.graph)).find("synchronizers: OFF") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(loops_need_a_feedback_edge) {
  job j{"loops"};
  auto src = j.from_container(std::vector<int>{1}, "src");
  auto loop = j.iterate<int>("back");
  src.merge(loop.feedback()).count("out");
  auto problem = validate(j.graph());
  BOOST_REQUIRE(problem);
  BOOST_TEST(*problem == "feedback 'back' is never closed: pass the loop's result to close()");

  logical_graph g;
  logical_node s;
  s.name = "s";
  s.kind = node_kind::source;
  g.add(s);
  logical_node a;
  a.name = "a";
  a.inputs = {{0}, {1}};
  g.add(a);
  logical_node out;
  out.name = "out";
  out.kind = node_kind::sink;
  out.inputs = {{1}};
  g.add(out);
  problem = validate(g);
  BOOST_REQUIRE(problem);
  BOOST_TEST(*problem == "the job has a cycle: 'a' -> 'a'; close loops with job::iterate (a "
                         "feedback edge)");
  g.node(1).inputs[1].feedback = true;
  BOOST_TEST(!validate(g));
  BOOST_TEST(find_timezones(g).empty());
}
