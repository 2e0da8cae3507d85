// cluster_status: `tidemark status --cluster C` (issue 16, "Visibility") on four tidemark-node
// processes. While a job with a replicated window runs, the status (the library's
// query_cluster_status and the real `tidemark status --json`) names every copy where the
// coordinator's placement put it, computed here with place and place_replicas; after SIGKILL on
// the primaries' node it shows that node gone and the primaries restored on another node; a
// cluster without a job says "no job", and a dead node is "no answer", not a hang.
#define BOOST_TEST_MODULE cluster_status
#include <boost/test/unit_test.hpp>

#include <future>
#include <thread>

#include <nlohmann/json.hpp>

#include "../../support/tool_process.hpp"
#include "../../support/wait_until.hpp"
#include "node_processes.hpp"
#include "tidemark/core/synchronizer.hpp"
#include "tidemark/runtime/cluster_status.hpp"

using namespace tidemark;
using namespace std::chrono_literals;

namespace {

/// Where every copy of every stage instance runs: [flat instance][copy] = node id.
using layout = std::vector<std::vector<std::string>>;

/// The layout the coordinator chooses for `j` on `cluster`, from the placement functions.
layout expected_layout(const job& j, const cluster_config& cluster) {
  const auto synced = synchronize(j.graph());
  const auto plan = compile(synced.graph);
  const auto primaries = place(synced.graph, plan, cluster);
  const auto replicas = place_replicas(synced.graph, plan, primaries, cluster);
  layout out;
  for (std::size_t k = 0; k < primaries.size(); ++k) {
    auto& copies = out.emplace_back();
    copies.push_back(cluster.nodes[primaries[k]].id);
    for (auto n : replicas[k]) copies.push_back(cluster.nodes[n].id);
  }
  return out;
}

layout reported_layout(const deployment_status& d) {
  layout out;
  for (const auto& inst : d.instances) {
    auto& copies = out.emplace_back();
    for (const auto& c : inst.copies) copies.push_back(c.node);
  }
  return out;
}

layout json_layout(const nlohmann::json& job) {
  layout out;
  for (const auto& inst : job.at("instances")) {
    auto& copies = out.emplace_back();
    for (const auto& c : inst.at("copies")) copies.push_back(c.at("node").get<std::string>());
  }
  return out;
}

/// Polls the cluster's status until `ok` holds for it (10 s at most).
template <class F>
cluster_status status_when(const cluster_config& cluster, F ok) {
  cluster_status s;
  test::wait_until([&] {
    s = query_cluster_status(cluster, 2000ms);
    return ok(s);
  });
  return s;
}

bool every_answering_node_agrees(const cluster_status& s) {
  if (!s.plan || !s.disagreeing.empty()) return false;
  for (const auto& n : s.nodes)
    if (n.counters && !n.deployment) return false;
  return true;
}

}  // namespace

BOOST_AUTO_TEST_CASE(status_shows_the_placement_the_losses_and_the_restored_copies) {
  test::node_processes nodes{4};
  const auto cluster_file = (nodes.dir / "cluster.yaml").string();
  nodes.write_cluster_file(cluster_file);
  const auto log = (nodes.dir / "status.log").string();
  const auto& spec = nodes.registry.find("example-window-count");
  auto o = spec.make_options();
  o.set("events", "40000");  // 8 s at 5000 per second
  o.set("keys", "37");
  o.set("window-ms", "50");
  o.set("parallelism", "2");
  o.set("rate", "5000");
  o.set("gather", "true");
  o.set("out", (nodes.dir / "out.txt").string());
  std::string window;
  const auto built = spec.build(o);  // the graph must outlive the loop over its nodes
  for (const auto& n : built.graph().nodes())
    if (n.op == "window") window = n.name;
  BOOST_REQUIRE(!window.empty());

  // a stopped cluster: every node answers, none runs a job
  const auto idle = query_cluster_status(nodes.cluster, 2000ms);
  BOOST_TEST(!idle.plan.has_value());
  for (const auto& n : idle.nodes) BOOST_TEST(n.counters.has_value());
  BOOST_TEST(test::tool_output({"status", "--cluster", cluster_file}, log).find("no job") !=
             std::string::npos);

  // source and sink on n1, the window's primaries on n2, their replicas on n3; n4 is free
  nodes.cluster.pins = {{"readings", "n1"}, {window, "n2"}, {"gather", "n1"}};
  nodes.cluster.replicate = {{window, 1}};
  nodes.cluster.heartbeat_timeout = 1000ms;
  const auto expected = expected_layout(spec.build(o), nodes.cluster);
  std::size_t replicated = 0;
  for (const auto& copies : expected) replicated += copies.size() > 1;
  BOOST_REQUIRE(replicated == 2u);  // the window's two instances

  run_options ro;
  ro.print_summary = false;
  ro.batch_size = 64;
  ro.checkpoints.dir = (nodes.dir / "checkpoints").string();
  ro.checkpoints.interval = 200ms;
  auto running =
      std::async(std::launch::async, [&] { return run_on_cluster(spec, o, nodes.cluster, ro); });

  // the replicas receive the source's batches over a link: their lag is measured
  const auto live = status_when(nodes.cluster, [](const cluster_status& s) {
    if (!every_answering_node_agrees(s)) return false;
    for (const auto& inst : s.plan->instances)
      if (inst.copies.size() > 1 && !inst.copies[1].lag) return false;
    return true;
  });
  BOOST_TEST(live.plan->job == "example-window-count");
  BOOST_TEST(live.plan->nodes == (std::vector<std::string>{"n1", "n2", "n3", "n4"}));
  BOOST_TEST(live.plan->gone.empty());
  BOOST_TEST((reported_layout(*live.plan) == expected));
  for (const auto& inst : live.plan->instances)
    for (const auto& c : inst.copies) BOOST_TEST((c.now == copy_status::state::alive));
  // the coordinator leaves the planner's figures unknown
  BOOST_TEST(live.plan->spare_budget == -1.0);
  BOOST_TEST(live.plan->predicted_availability == -1.0);

  // the command itself, as JSON
  const auto shown = nlohmann::json::parse(
      test::tool_output({"status", "--cluster", cluster_file, "--json"}, log));
  BOOST_REQUIRE(shown.at("job").is_object());
  BOOST_TEST((json_layout(shown.at("job")) == expected));
  BOOST_TEST(shown.at("job").at("predicted_availability").is_null());
  for (const auto& n : shown.at("nodes")) BOOST_TEST(n.at("answers").get<bool>());
  BOOST_REQUIRE_MESSAGE(running.wait_for(0s) == std::future_status::timeout,
                        "the job finished before the kill: make it longer");

  // the primaries' node dies: the status shows it gone and the primaries restored elsewhere
  nodes.kill_node(1);
  const auto healed = status_when(nodes.cluster, [](const cluster_status& s) {
    if (!every_answering_node_agrees(s) || s.plan->gone.size() != 1) return false;
    for (const auto& inst : s.plan->instances)
      if (inst.copies.size() > 1 && inst.copies[0].now != copy_status::state::restored)
        return false;
    return true;
  });
  BOOST_TEST(!healed.nodes[1].counters.has_value());
  BOOST_TEST(healed.plan->gone == (std::vector<std::string>{"n2"}));
  for (std::size_t k = 0; k < expected.size(); ++k) {
    const auto& copies = healed.plan->instances[k].copies;
    BOOST_REQUIRE(copies.size() == expected[k].size());
    if (copies.size() == 1) {
      BOOST_TEST(copies[0].node == expected[k][0]);
      continue;
    }
    // never on the dead node, nor beside its own replica
    BOOST_TEST(copies[0].was_on == "n2");
    BOOST_TEST(copies[0].node != "n2");
    BOOST_TEST(copies[0].node != expected[k][1]);
    BOOST_TEST(copies[1].node == expected[k][1]);
    BOOST_TEST((copies[1].now == copy_status::state::alive));
  }
  // the command answers at once with the dead node as silent
  const auto text = test::tool_output({"status", "--cluster", cluster_file}, log);
  BOOST_TEST_MESSAGE(text);
  BOOST_TEST(text.find("no answer") != std::string::npos);
  BOOST_TEST(text.find("restored (was n2)") != std::string::npos);

  const auto result = running.get();
  BOOST_TEST(result.recoveries == 0u);
  const auto after = status_when(nodes.cluster, [](const cluster_status& s) { return !s.plan; });
  BOOST_TEST(!after.nodes[1].counters.has_value());
  BOOST_TEST(test::tool_output({"status", "--cluster", cluster_file}, log).find("no job") !=
             std::string::npos);
}
