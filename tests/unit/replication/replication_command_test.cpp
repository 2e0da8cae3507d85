// `tidemark replication plan|simulate`: what the commands print for a small graph and for a
// running job, and the messages and exit codes for bad input.
#define BOOST_TEST_MODULE replication_command
#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>

#include "replication_command.hpp"
#include "tidemark/core/synchronizer.hpp"
#include "tidemark/examples/example_jobs.hpp"
#include "tidemark/runtime/job_registry.hpp"

namespace {

// The paper's example query (ticks -> sap -> avg -> out) plus a second sink on sap.
constexpr const char* graph = R"({
  "hosts": [{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}],
  "operators": [
    {"name": "ticks", "rate": 100, "cost": 0.001, "hosts": ["a"]},
    {"name": "sap", "inputs": ["ticks"], "cost": 0.002, "selectivity": 0.5, "hosts": ["b"]},
    {"name": "avg", "inputs": ["sap"], "cost": 0.006, "selectivity": 0.1, "hosts": ["c"]},
    {"name": "out", "inputs": ["avg"], "cost": 0.01, "hosts": ["d"]},
    {"name": "alert", "inputs": ["sap"], "cost": 0.001, "hosts": ["d"]}
  ]})";

struct result {
  int code = 0;
  std::string out;
  std::string err;
};

const tidemark::job_registry& example_jobs() {
  static const auto registry = [] {
    tidemark::job_registry r;
    tidemark::examples::register_jobs(r);
    return r;
  }();
  return registry;
}

// Runs `tidemark <args>` in-process with standard output and error captured.
result run(std::vector<std::string> args, const std::string& file_text = graph) {
  std::string path = "replication_command_test_graph.json";
  std::ofstream(path) << file_text;
  for (auto& a : args)
    if (a == "GRAPH") a = path;
  CLI::App app{"tidemark"};
  app.require_subcommand(1);
  tidemark::add_replication_commands(app, example_jobs());
  std::ostringstream out;
  std::ostringstream err;
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  auto* old_err = std::cerr.rdbuf(err.rdbuf());
  std::vector<const char*> argv{"tidemark"};
  for (const auto& a : args) argv.push_back(a.c_str());
  result r;
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    r.code = app.exit(e, err, err);
  }
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  std::remove(path.c_str());
  r.out = out.str();
  r.err = err.str();
  return r;
}

bool contains(const std::string& text, const std::string& part) {
  bool found = text.find(part) != std::string::npos;
  if (!found) BOOST_TEST_MESSAGE("missing '" << part << "' in:\n" << text);
  return found;
}

}  // namespace

BOOST_AUTO_TEST_CASE(plan_prints_operators_replicas_hosts_and_availability) {
  // Loads: ticks 0.1, sap 0.2, avg 0.3, out 0.05, alert 0.05. Low utilization takes alert,
  // out and ticks (0.2 of 0.3); each replica joins a neighbour's host.
  auto r =
      run({"replication", "plan", "GRAPH", "--spare", "0.3", "--heuristic", "low-utilization"});
  BOOST_TEST(r.code == 0);
  BOOST_TEST(contains(r.out, "5 operators, 2 queries, 4 hosts, primary load 0.700"));
  BOOST_TEST(contains(r.out,
                      "heuristic low-utilization, selection breadth-first, placement "
                      "bin-packing, at most 1 replicas per operator"));
  BOOST_TEST(contains(r.out, "ticks                       0.100      0.667        1  a -> b\n"));
  BOOST_TEST(contains(r.out, "avg                         0.300      0.000        0  c ->\n"));
  BOOST_TEST(contains(r.out, "alert                       0.050      0.833        1  d -> b\n"));
  BOOST_TEST(contains(r.out, "out                         0.050      0.833        1  d -> c\n"));
  BOOST_TEST(contains(r.out,
                      "3 of 5 operators replicated (3 replicas), replica load 0.200 of "
                      "budget 0.300; 0 replicas found no host"));
  BOOST_TEST(contains(r.out, "estimated availability (host failure probability 2.00 %"));
}

BOOST_AUTO_TEST_CASE(spare_as_a_percentage_of_the_primary_load) {
  auto r = run({"replication", "plan", "GRAPH", "--spare", "100%", "--heuristic", "random"});
  BOOST_TEST(r.code == 0);
  BOOST_TEST(contains(r.out,
                      "5 of 5 operators replicated (5 replicas), replica load 0.700 of "
                      "budget 0.700"));
}

BOOST_AUTO_TEST_CASE(target_availability_picks_the_cheapest_plan) {
  // Only all five replicas reach 99.9 %: with alert unreplicated its query fails with host d.
  auto r = run({"replication", "plan", "GRAPH", "--target", "0.999", "--runs", "20000"});
  BOOST_TEST(r.code == 0);
  BOOST_TEST(contains(r.out, "5 of 5 operators replicated"));
}

BOOST_AUTO_TEST_CASE(bad_input_gets_a_message_and_exit_code_1) {
  auto r = run({"replication", "plan", "GRAPH", "--spare", "50x"});
  BOOST_TEST(r.code == 1);
  BOOST_TEST(r.err ==
             "tidemark replication: --spare '50x' is not a load >= 0 or a percentage "
             "such as 50%\n");
  r = run({"replication", "plan", "GRAPH"}, R"({"hosts": {"count": 2},
            "operators": [{"name": "s", "cots": 1}]})");
  BOOST_TEST(r.code == 1);
  BOOST_TEST(contains(r.err,
                      "replication_command_test_graph.json: operator #0 ('s') has unknown "
                      "field 'cots'"));
  r = run({"replication", "plan", "GRAPH", "--heuristic", "importance"});
  BOOST_TEST(r.code != 0);
  BOOST_TEST(contains(r.err, "importance not in {random,low-utilization,out-degree,product}"));
}

BOOST_AUTO_TEST_CASE(simulate_runs_a_small_experiment) {
  auto r = run({"replication", "simulate", "--runs", "2", "--hosts", "10", "--queries", "20",
                "--threads", "1"});
  BOOST_TEST(r.code == 0);
  BOOST_TEST(contains(r.out, "2 runs; per run 20 queries"));
  BOOST_TEST(contains(r.out, "running queries (%), spare 50 %"));
  BOOST_TEST(contains(r.out, "product, colour"));
}

BOOST_AUTO_TEST_CASE(the_shipped_example_graph_plans) {
  std::ifstream in(REPLICATION_EXAMPLE);
  std::stringstream text;
  text << in.rdbuf();
  BOOST_REQUIRE(!text.str().empty());
  auto r = run({"replication", "plan", "GRAPH", "--spare", "50%"}, text.str());
  BOOST_TEST(r.code == 0);
  BOOST_TEST(contains(r.out, "17 operators, 3 queries, 8 hosts, primary load 4.622"));
  BOOST_TEST(contains(r.out, "13 of 17 operators replicated (13 replicas), replica load 2.202"));
}

BOOST_AUTO_TEST_CASE(plan_measures_a_running_job) {
  // 20 000 readings/s for 50 s: the 2 s measurement stops it long before its end
  auto r = run({"replication", "plan", "example-late-windows", "--rate", "20000", "--events",
                "1000000", "--measure", "2s", "--hosts", "3", "--spare", "50%"});
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(contains(r.out, "measured job 'example-late-windows' embedded for "));
  BOOST_TEST(contains(r.out, "then stopped it"));
  BOOST_TEST(contains(r.out, "primaries placed on 3 hosts of 1.0 cores"));
  // every operator of `tidemark plan` (the graph with its synchronizer gates) has a row: one per
  // instance, measured on this process
  const auto& spec = example_jobs().find("example-late-windows");
  auto options = tidemark::parse_job_arguments(spec, {});
  auto graph = tidemark::synchronize(spec.build(options).graph()).graph;
  std::size_t rows = 0;
  for (const auto& n : graph.nodes())
    for (std::uint32_t i = 0; i < n.parallelism; ++i) {
      auto name = n.parallelism == 1 ? n.name : n.name + "[" + std::to_string(i) + "]";
      auto at = r.out.find("\n" + name + " ");
      BOOST_TEST(at != std::string::npos, "no row for " << name << " in:\n" << r.out);
      if (at == std::string::npos) continue;
      ++rows;
      BOOST_TEST(contains(r.out.substr(at, r.out.find('\n', at + 1) - at), " local "));
    }
  BOOST_TEST(rows >= 5u);
  // the source did measurable work, and so did the job as a whole
  auto readings = r.out.find("\nreadings ");
  BOOST_REQUIRE(readings != std::string::npos);
  BOOST_TEST(std::strtod(r.out.c_str() + readings + 25, nullptr) > 0.0, r.out);
  auto total = r.out.find("primary load ");
  BOOST_REQUIRE(total != std::string::npos);
  BOOST_TEST(std::strtod(r.out.c_str() + total + 13, nullptr) > 0.0, r.out);
}

BOOST_AUTO_TEST_CASE(plan_of_an_unknown_job_names_the_registered_ones) {
  auto r = run({"replication", "plan", "no-such-job", "--measure", "1s"});
  BOOST_TEST(r.code == 1);
  BOOST_TEST(contains(r.err, "no-such-job"));
  r = run({"replication", "plan", "example-late-windows", "--measure", "soon"});
  BOOST_TEST(r.code == 1);
  BOOST_TEST(contains(r.err, "--measure 'soon' is not a duration"));
}
