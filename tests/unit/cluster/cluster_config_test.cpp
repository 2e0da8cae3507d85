// The cluster file (YAML), placement (packed by an estimated or measured load, with pins and
// node capacities) and the placement check, with errors that name the file, the field, the
// operator or the node.
#define BOOST_TEST_MODULE cluster_config
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>

#include "tidemark/runtime/cluster.hpp"
#include "tidemark/runtime/faults.hpp"

using namespace tidemark;
namespace tt = boost::test_tools;

namespace {

struct temp_dir {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("tidemark-cluster-config-" + std::to_string(::getpid()));
  temp_dir() { std::filesystem::create_directories(path); }
  ~temp_dir() { std::filesystem::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream{path / name} << text;
    return (path / name).string();
  }
};

std::string error_of(const std::string& file) {
  try {
    cluster_config::load(file);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

job three_stage_job() {
  job j{"placed"};
  j.from_container(std::vector<int>{1, 2, 3}, "numbers")
      .key_by([](int x) { return x; }, "by_value")
      .reduce([](int a, const int& b) { return a + b; }, "sum")
      .parallelism(3)
      .rebalance()
      .map([](int x) { return x; }, "gather")
      .parallelism(1)
      .count("sink");
  return j;
}

}  // namespace

BOOST_AUTO_TEST_CASE(loads_nodes_keys_pins_and_timeouts) {
  temp_dir dir;
  key_pair::generate().save(dir.path.string(), "coordinator");
  auto n2 = key_pair::generate();
  n2.save(dir.path.string(), "n2");
  auto file = dir.write("cluster.yaml", R"(
heartbeat_timeout_ms: 800
coordinator_key: coordinator.key
nodes:
  - {id: n1, endpoint: "tcp://127.0.0.1:7100", public_key: "0123456789012345678901234567890123456789"}
  - {id: n2, endpoint: "tcp://127.0.0.1:7102", public_key_file: n2.pub}
pins:
  gather: n2
)");
  auto c = cluster_config::load(file);
  BOOST_TEST(c.nodes.size() == 2u);
  BOOST_TEST(c.nodes[1].public_key == n2.public_key);
  BOOST_TEST(c.heartbeat_timeout.count() == 800);
  BOOST_TEST(c.heartbeat_interval.count() == 200);
  BOOST_TEST(c.pins.at("gather") == "n2");
  BOOST_TEST(!c.insecure);
  BOOST_TEST(!c.faults_allowed);  // unless the file says so
  BOOST_TEST(*c.find("n2") == 1u);
  BOOST_TEST(data_endpoint("tcp://127.0.0.1:7100") == "tcp://127.0.0.1:7101");
}

BOOST_AUTO_TEST_CASE(bad_cluster_files_name_the_problem) {
  temp_dir dir;
  auto missing_key = dir.write("a.yaml", "nodes:\n  - {id: n1, endpoint: \"tcp://h:1\"}\n");
  BOOST_TEST(error_of(missing_key).find("node 'n1' needs 'public_key'") != std::string::npos);
  auto no_nodes = dir.write("b.yaml", "insecure: true\n");
  BOOST_TEST(error_of(no_nodes).find("'nodes' must list at least one node") != std::string::npos);
  auto twice = dir.write("c.yaml", "insecure: true\nnodes:\n  - {id: n1, endpoint: \"tcp://h:1\"}\n"
                                   "  - {id: n1, endpoint: \"tcp://h:3\"}\n");
  BOOST_TEST(error_of(twice).find("node id 'n1' appears twice") != std::string::npos);
  auto no_coordinator = dir.write("d.yaml", "nodes:\n  - {id: n1, endpoint: \"tcp://h:1\", "
                                            "public_key: \"0123456789012345678901234567890123456789\"}\n");
  BOOST_TEST(error_of(no_coordinator).find("'coordinator_key'") != std::string::npos);
  BOOST_TEST(error_of(dir.write("e.yaml", "nodes: [")).find("e.yaml") != std::string::npos);
  BOOST_CHECK_THROW(data_endpoint("tcp://h"), std::runtime_error);
  auto faults = dir.write("f.yaml", "insecure: true\nfaults: sometimes\nnodes:\n"
                                    "  - {id: n1, endpoint: \"tcp://h:1\"}\n");
  BOOST_TEST(error_of(faults).find("'faults' is 'sometimes'") != std::string::npos);
  auto on_loss = dir.write("g.yaml", "insecure: true\non_loss: ignore\nnodes:\n"
                                     "  - {id: n1, endpoint: \"tcp://h:1\"}\n");
  BOOST_TEST(error_of(on_loss).find("'on_loss' is 'ignore'") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(degraded_mode_only_when_the_file_says_on_loss_continue) {
  temp_dir dir;
  const std::string nodes = "insecure: true\nnodes:\n  - {id: n1, endpoint: \"tcp://h:1\"}\n";
  BOOST_TEST(
      cluster_config::load(dir.write("a.yaml", "on_loss: continue\n" + nodes)).continue_on_loss);
  BOOST_TEST(!cluster_config::load(dir.write("b.yaml", "on_loss: stop\n" + nodes)).continue_on_loss);
  BOOST_TEST(!cluster_config::load(dir.write("c.yaml", nodes)).continue_on_loss);
}

BOOST_AUTO_TEST_CASE(checkpoint_copies_default_to_one_and_stay_below_the_node_count) {
  temp_dir dir;
  const std::string one = "insecure: true\nnodes:\n  - {id: n1, endpoint: \"tcp://h:1\"}\n";
  const std::string three = one + "  - {id: n2, endpoint: \"tcp://h:3\"}\n"
                                  "  - {id: n3, endpoint: \"tcp://h:5\"}\n";
  auto c = cluster_config::load(dir.write("a.yaml", three));
  BOOST_TEST(c.checkpoint.copies == 1u);
  BOOST_TEST(c.checkpoint.retain == 3u);
  BOOST_TEST(cluster_config::load(dir.write("b.yaml", one)).checkpoint.copies == 0u);
  c = cluster_config::load(dir.write("c.yaml", "checkpoint: {copies: 2, retain: 5}\n" + three));
  BOOST_TEST(c.checkpoint.copies == 2u);
  BOOST_TEST(c.checkpoint.retain == 5u);
  BOOST_TEST(error_of(dir.write("d.yaml", "checkpoint: {copies: 3}\n" + three))
                 .find("checkpoint: 'copies' is 3: it must be at least 0 and less than the number "
                       "of nodes (3)") != std::string::npos);
  BOOST_TEST(error_of(dir.write("e.yaml", "checkpoint: {retain: 0}\n" + three))
                 .find("checkpoint: 'retain' is 0") != std::string::npos);
  BOOST_TEST(error_of(dir.write("f.yaml", "checkpoint: {copy: 1}\n" + three))
                 .find("checkpoint: unknown field 'copy'") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_broker_is_pinned_to_a_node_of_the_file_on_its_address) {
  temp_dir dir;
  const std::string nodes = "insecure: true\nnodes:\n"
                            "  - {id: n1, endpoint: \"tcp://10.0.0.1:7100\"}\n"
                            "  - {id: n2, endpoint: \"tcp://10.0.0.2:7100\"}\n";
  auto c = cluster_config::load(dir.write("a.yaml", "broker: {node: n2, port: 18830}\n" + nodes));
  BOOST_TEST(c.broker.node == "n2");
  BOOST_TEST(c.broker_address() == "10.0.0.2:18830");
  c = cluster_config::load(dir.write("b.yaml", "broker: {node: n1}\n" + nodes));
  BOOST_TEST(c.broker_address() == "10.0.0.1:1883");
  BOOST_TEST(cluster_config::load(dir.write("c.yaml", nodes)).broker_address().empty());
  BOOST_TEST(error_of(dir.write("d.yaml", "broker: {node: n9}\n" + nodes))
                 .find("broker: 'node' is 'n9', which is no node id") != std::string::npos);
  BOOST_TEST(error_of(dir.write("e.yaml", "broker: {node: n1, port: 70000}\n" + nodes))
                 .find("broker: 'port' is 70000") != std::string::npos);
  BOOST_TEST(error_of(dir.write("f.yaml", "broker: {host: n1}\n" + nodes))
                 .find("broker: unknown field 'host'") != std::string::npos);
  BOOST_TEST(error_of(dir.write("g.yaml", "broker: n1\n" + nodes))
                 .find("'broker' must be a map") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(faults_are_allowed_only_when_the_file_says_so) {
  temp_dir dir;
  const std::string nodes = "insecure: true\nnodes:\n  - {id: n1, endpoint: \"tcp://h:1\"}\n";
  BOOST_TEST(cluster_config::load(dir.write("a.yaml", "faults: allow\n" + nodes)).faults_allowed);
  BOOST_TEST(!cluster_config::load(dir.write("b.yaml", "faults: deny\n" + nodes)).faults_allowed);
  // the check is the caller's, before any node is contacted
  auto c = cluster_config::load(dir.write("c.yaml", nodes));
  try {
    inject_faults(c, "n1", {});
    BOOST_FAIL("inject_faults went ahead without 'faults: allow'");
  } catch (const std::runtime_error& e) {
    BOOST_TEST(std::string{e.what()}.find("node 'n1'") != std::string::npos);
    BOOST_TEST(std::string{e.what()}.find("faults: allow") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(placement_packs_an_estimate_by_operators_with_pins_and_capacities) {
  auto j = three_stage_job();
  auto plan = compile(j.graph());
  BOOST_REQUIRE(plan.stages.size() == 3u);  // numbers+by_value, sum x3, gather+sink
  cluster_config c;
  c.insecure = true;
  c.nodes = {{"n1", "tcp://h:1", ""}, {"n2", "tcp://h:3", ""}, {"n3", "tcp://h:5", ""}};
  // instances in order: numbers+by_value (2 operators), sum x3 (1 each), gather+sink (2). By
  // hand, heaviest first: numbers on n1, gather on n2 (n2 and n3 empty, n2 first), the first sum
  // on n3 (1 against 3 and 3); the other sums on nodes without one: n1 (3 against 3, first), n2.
  // Round robin would give {0, 1, 2, 0, 1}.
  BOOST_TEST(place(j.graph(), plan, c) == (std::vector<std::uint32_t>{0, 2, 0, 1, 1}),
             tt::per_element());
  // gather+sink pinned on n1 (2): numbers on n2 (n2, n3 empty), the sums on n3 (1 against 3, 3),
  // then n1 (3 against 3, first), then n2
  c.pins["sink"] = "n1";
  BOOST_TEST(place(j.graph(), plan, c) == (std::vector<std::uint32_t>{1, 2, 0, 1, 0}),
             tt::per_element());
  c.pins.clear();
  // equal loads on equal nodes (a, b x4, c x4, an operator each): round robin in instance order
  job chain{"chain"};
  chain.from_container(std::vector<int>{1}, "a").rebalance().map([](int x) { return x; }, "b")
      .parallelism(4).rebalance().count("c");
  const auto chain_plan = compile(chain.graph());
  BOOST_REQUIRE(chain_plan.stages.size() == 3u);
  BOOST_TEST(place(chain.graph(), chain_plan, c) ==
                 (std::vector<std::uint32_t>{0, 1, 2, 0, 1, 2, 0, 1, 2}),
             tt::per_element());
  // n1 has two cores, and shares are load over cores: a on n1 (0.5 against 1, 1); b on n2 (1
  // everywhere, n2 runs fewer), n3, n1 (the one without a b), n1 again (1.5 against 2, 2); c on
  // n2 (2 everywhere, n2 and n3 run fewer, n2 first), n3, n1 (without a c), n1 (2.5 against 3, 3)
  c.nodes[0].cpu = 2;
  BOOST_TEST(place(chain.graph(), chain_plan, c) ==
                 (std::vector<std::uint32_t>{0, 1, 2, 0, 0, 1, 2, 0, 0}),
             tt::per_element());
  c.nodes[0].cpu = 1;
  c.pins["nothing"] = "n1";
  BOOST_CHECK_EXCEPTION(place(j.graph(), plan, c), job_error, [](const job_error& e) {
    return std::string{e.what()} == "pin 'nothing': the job has no operator of that name";
  });
  c.pins = {{"sum", "n9"}};
  BOOST_CHECK_EXCEPTION(place(j.graph(), plan, c), job_error, [](const job_error& e) {
    return std::string{e.what()} == "pin 'sum': no node 'n9' in the cluster";
  });
}

BOOST_AUTO_TEST_CASE(placement_by_measured_load_packs_the_heaviest_first) {
  auto j = three_stage_job();
  auto plan = compile(j.graph());
  cluster_config c;
  c.insecure = true;
  c.nodes = {{"n1", "tcp://h:1", ""}, {"n2", "tcp://h:3", ""}, {"n3", "tcp://h:5", ""}};
  // instances in order: numbers (0.3), sum x3 (1.0 each), gather (0.6). By hand: the three sums
  // take a node each, gather the first of the equally loaded nodes, numbers the next.
  c.operator_load = {{"numbers", 0.3}, {"sum", 3.0}, {"gather", 0.6}};
  BOOST_TEST(place(j.graph(), plan, c) == (std::vector<std::uint32_t>{1, 0, 1, 2, 0}), tt::per_element());
  // a pinned instance's load counts on its node: with gather pinned on n3 (0.6), the sums go to
  // n1, n2 and n3 (0.6 is the least), and numbers to n1 (1.0, tied with n2, first in order)
  c.pins["gather"] = "n3";
  BOOST_TEST(place(j.graph(), plan, c) == (std::vector<std::uint32_t>{0, 0, 1, 2, 2}));
  c.pins.clear();
  // a stage the report does not name counts as the mean measured instance: numbers (0.2) and the
  // sums (1.0) measured, gather counts as 3.2 / 4 = 0.8
  c.operator_load = {{"numbers", 0.2}, {"sum", 3.0}};
  BOOST_TEST(place(j.graph(), plan, c) == (std::vector<std::uint32_t>{1, 0, 1, 2, 0}), tt::per_element());
  c.operator_load = {{"elsewhere", 1.0}};
  BOOST_CHECK_EXCEPTION(place(j.graph(), plan, c), job_error, [](const job_error& e) {
    return std::string{e.what()}.find("names no operator of this job") != std::string::npos;
  });
}

BOOST_AUTO_TEST_CASE(the_measured_load_comes_from_a_run_report) {
  // the shape job_result::to_json writes: the run's seconds, busy time per stage instance, its
  // operators in order
  const std::string report = R"({"job": "placed", "seconds": 2, "instances": [
      {"stage": 1, "instance": 0, "busy_ms": 500, "operators": [{"name": "sum"}]},
      {"stage": 1, "instance": 1, "busy_ms": 1500, "operators": [{"name": "sum"}]},
      {"stage": 2, "instance": 0, "busy_ms": 250, "operators": [{"name": "gather"}, {"name": "sink"}]}]})";
  const auto load = stage_load_from_report(report);  // cores: busy seconds over 2 s
  BOOST_TEST(load.size() == 2u);
  BOOST_TEST(load.at("sum") == 1.0);
  BOOST_TEST(load.at("gather") == 0.125);
  auto error = [](const std::string& text) {
    try {
      stage_load_from_report(text);
    } catch (const std::runtime_error& e) {
      return std::string{e.what()};
    }
    return std::string{};
  };
  BOOST_TEST(error("{not json").find("not JSON") != std::string::npos);
  BOOST_TEST(error(R"({"job": "x"})").find("no 'instances'") != std::string::npos);
  BOOST_TEST(error(R"({"instances": []})").find("no run time") != std::string::npos);
  BOOST_TEST(error(R"({"seconds": 1, "instances": [{"busy_ms": 1}]})").find("lacks 'operators'") !=
             std::string::npos);
}

namespace {
struct no_codec {  // a value type without tidemark::codec
  int x = 0;
};
}  // namespace

BOOST_AUTO_TEST_CASE(placement_check_refuses_a_split_without_codec) {
  job j{"uncodable"};
  j.from_container(std::vector<int>{1, 2, 3}, "numbers")
      .map([](int x) { return no_codec{x}; }, "wrap")
      .rebalance()
      .map([](const no_codec& v) { return v.x; }, "unwrap")
      .count("sink");
  auto plan = compile(j.graph());
  BOOST_REQUIRE(plan.stages.size() == 2u);  // numbers+wrap, unwrap+sink
  cluster_config c;
  c.insecure = true;
  c.nodes = {{"n1", "tcp://h:1", ""}, {"n2", "tcp://h:3", ""}};
  auto refusal = [&](const std::vector<std::uint32_t>& placement) -> std::string {
    try {
      check_placement(j.graph(), plan, placement, c);
    } catch (const job_error& e) {
      return e.what();
    }
    return "";
  };
  BOOST_TEST(refusal({1, 1}) == "");  // on one node nothing is encoded
  auto split = refusal({0, 1});
  BOOST_TEST(split.rfind("operator 'wrap' emits ", 0) == 0, split);
  BOOST_TEST(split.find("no_codec, which has no tidemark::codec") != std::string::npos, split);
  BOOST_TEST(split.find("from node 'n1' to node 'n2'") != std::string::npos, split);
  BOOST_TEST(refusal({0}) == "the placement lists 1 stage instances, the plan has 2");
  BOOST_TEST(refusal({0, 2}) == "the placement names node 2, the cluster has 2");
}

BOOST_AUTO_TEST_CASE(replicas_on_spare_cpu_are_read_from_the_file_and_planned) {
  temp_dir dir;
  const std::string nodes = "insecure: true\nnodes:\n  - {id: n1, endpoint: \"tcp://h:1\", cpu: 4}\n"
                            "  - {id: n2, endpoint: \"tcp://h:3\", cpu: 4}\n"
                            "  - {id: n3, endpoint: \"tcp://h:5\", cpu: 4}\n";
  auto c = cluster_config::load(dir.write("a.yaml", nodes + R"(replication:
  spare: 50%
  heuristic: random
  selection: knapsack
  query_level: true
  replicas: 2
  failure_probability: 0.05
  replan_interval_ms: 500
)"));
  BOOST_TEST(c.nodes[0].cpu == 4.0);
  BOOST_TEST(c.planned.spare == "50%");
  BOOST_TEST(std::string{to_string(c.planned.planner.importance)} == "random");
  BOOST_TEST(std::string{to_string(c.planned.planner.selection)} == "knapsack");
  BOOST_TEST(c.planned.planner.query_level);
  BOOST_TEST(c.planned.planner.max_level == 2u);
  BOOST_TEST(c.planned.failure_probability == 0.05);
  BOOST_TEST(c.planned.replan_interval.count() == 500);
  auto error = [&](const std::string& name, const std::string& replication) {
    return error_of(dir.write(name, nodes + "replication:\n" + replication));
  };
  BOOST_TEST(error("b.yaml", "  spare: lots\n").find("spare 'lots'") != std::string::npos);
  BOOST_TEST(error("c.yaml", "  spare: 1\n  heuristic: best\n").find("unknown heuristic 'best'") !=
             std::string::npos);
  BOOST_TEST(error("d.yaml", "  spare: 1\n  replicate: [sum]\n").find("give one of the two") !=
             std::string::npos);
  BOOST_TEST(error("e.yaml", "  spares: 1\n").find("unknown field 'spares'") != std::string::npos);

  // three_stage_job placed round robin: numbers n1, sum n2 n3 n1, gather+sink n2; only the sums
  // hold neither a source nor a sink
  auto j = three_stage_job();
  auto plan = compile(j.graph());
  c.planned.planner = {};
  const std::vector<std::uint32_t> placement{0, 1, 2, 0, 1};
  const std::vector<double> load{0.3, 1.0, 1.0, 1.0, 0.6};
  c.planned.spare = "3";  // cores: a copy of every sum
  auto all = plan_spare_replicas(j.graph(), plan, placement, c, load);
  BOOST_TEST(all.budget == 3.0);
  BOOST_TEST(all.replica_load == 3.0);
  for (std::size_t k = 0; k < placement.size(); ++k) {
    BOOST_TEST(all.replicas[k].size() == (k >= 1 && k <= 3 ? 1u : 0u));
    for (auto n : all.replicas[k]) BOOST_TEST(n != placement[k]);
  }
  // By hand, a query runs when n1 (numbers) and n2 (gather) survive and every sum has a copy on a
  // surviving node: without replicas all three nodes must survive, 0.95^3 = 0.857; with a copy of
  // every sum on another node, the sum on n3 survives through n1 or n2, so 0.95^2 = 0.9025. The
  // simulation's 1000 runs have a standard error near 0.01.
  BOOST_TEST(all.availability_without == 0.857375, tt::tolerance(0.03));
  BOOST_TEST(all.availability == 0.9025, tt::tolerance(0.03));
  // running copies of the sums on other nodes are worth as much (the query still needs n1 and
  // n2): they stay, so that a job does not move between equal plans
  auto elsewhere = all.replicas;
  for (std::size_t k = 1; k <= 3; ++k)
    for (std::uint32_t n = 0; n < 3; ++n)
      if (n != placement[k] && n != all.replicas[k][0]) elsewhere[k] = {n};
  BOOST_TEST(plan_spare_replicas(j.graph(), plan, placement, c, load, &elsewhere).replicas ==
             elsewhere);
  c.planned.spare = "1";  // one sum's copy, no more
  auto one = plan_spare_replicas(j.graph(), plan, placement, c, load);
  std::size_t copies = 0;
  for (const auto& r : one.replicas) copies += r.size();
  BOOST_TEST(copies == 1u);
  // three copies no longer fit the budget: the new plan replaces them
  BOOST_TEST(plan_spare_replicas(j.graph(), plan, placement, c, load, &elsewhere).replicas ==
             one.replicas);
  c.planned.spare = "0%";
  for (const auto& r : plan_spare_replicas(j.graph(), plan, placement, c, load).replicas)
    BOOST_TEST(r.empty());
  // without a measurement, the estimate: half of the 12 cores over the job's 7 operators, 2 in
  // numbers+by_value, 1 in each sum, 2 in gather+sink
  const std::vector<double> estimate{12.0 / 7, 6.0 / 7, 6.0 / 7, 6.0 / 7, 12.0 / 7};
  const auto guessed = instance_loads(j.graph(), plan, c);
  BOOST_REQUIRE(guessed.size() == estimate.size());
  for (std::size_t k = 0; k < guessed.size(); ++k)
    BOOST_TEST(guessed[k] == estimate[k], tt::tolerance(1e-12));
}
