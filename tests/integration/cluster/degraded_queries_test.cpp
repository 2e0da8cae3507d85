// degraded_queries: degraded mode (`on_loss: continue`, docs/replication.md) on four tidemark-node
// processes. example-queries with two sources and four queries; one query's filter runs alone on
// n2, its own window on n3 and its sink on n4. SIGKILL on n2 mid-run stops that query (its
// filter, window and sink) without flushing: its sink holds only results the embedded run has
// too, fewer of them, while the other three queries give exactly the embedded run's results, the
// job ends with no recovery and reports the stopped query. Had the stopped window fired at a fake
// end of its input, its sink would hold partial counts the embedded run never gives. The negative
// control: without `on_loss: continue` the same kill fails the job.
#define BOOST_TEST_MODULE degraded_queries
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <filesystem>
#include <future>
#include <map>
#include <string>
#include <vector>

#include "../../support/environment.hpp"
#include "../../support/lines.hpp"
#include "../../support/wait_until.hpp"
#include "tidemark/chaos/local_cluster.hpp"
#include "tidemark/examples/example_jobs.hpp"
#include "tidemark/runtime/cluster.hpp"

using namespace tidemark;

namespace {

chaos::local_cluster_options node_processes() {
  chaos::local_cluster_options o;
  o.node_binary = test::node_binary();
  o.nodes = 4;
  return o;
}

constexpr std::int64_t events = 20000;
constexpr std::int64_t rate = 4000;  // 5 s; a query's windows close every 50 ms
const std::vector<std::string> queries{"q0_0", "q0_1", "q1_0", "q1_1"};

/// Sources and shared windows on n1, q0_0's filter alone on n2, the other filters and every
/// query's own window on n3, the sinks on n4.
struct four_nodes {
  chaos::local_cluster nodes{node_processes()};
  job_registry registry;
  const job_spec& spec;

  four_nodes() : spec(find(registry)) {
    nodes.cluster.pins = {{"src0", "n1"}, {"src1", "n1"}, {"win0", "n1"}, {"win1", "n1"},
                          {"f0_0", "n2"}, {"f0_1", "n3"}, {"f1_0", "n3"}, {"f1_1", "n3"}};
    // SIGKILL breaks n2's connection, which degraded mode acts on at once; a busy machine must
    // not make the coordinator give up a node nobody killed (the negative control, without
    // replicas or checkpoints, fails only once n2's heartbeats are this late)
    nodes.cluster.heartbeat_timeout = std::chrono::milliseconds{3000};
    for (const auto& q : queries) {
      nodes.cluster.pins["w" + q.substr(1)] = "n3";
      nodes.cluster.pins[q] = "n4";
    }
  }

  static const job_spec& find(job_registry& r) {
    examples::register_jobs(r);
    return r.find("example-queries");
  }

  job_options options(const std::filesystem::path& out, std::int64_t pace) const {
    auto o = spec.make_options();
    o.set("sources", "2");
    o.set("queries", "2");
    o.set("events", std::to_string(events));
    o.set("keys", "37");
    o.set("rate", std::to_string(pace));
    o.set("out-dir", out.string());
    return o;
  }

  static std::map<std::string, std::vector<std::string>> results(const std::filesystem::path& d) {
    std::map<std::string, std::vector<std::string>> out;
    for (const auto& q : queries) out[q] = test::sorted_lines(d / (q + ".txt"));
    return out;
  }

  /// A cluster run into `name`/ that kills n2 once q0_0's sink wrote 40 results.
  job_result run_killing_n2(const std::string& name) {
    const auto out = nodes.dir / name;
    run_options ro;
    ro.print_summary = false;
    ro.batch_size = 64;
    auto job = std::async(std::launch::async, [&] {
      return run_on_cluster(spec, options(out, rate), nodes.cluster, ro);
    });
    test::wait_until([&] {
      return job.wait_for(std::chrono::seconds{0}) == std::future_status::ready ||
             test::sorted_lines(out / "q0_0.txt").size() >= 40;
    });
    BOOST_REQUIRE_MESSAGE(job.wait_for(std::chrono::seconds{0}) != std::future_status::ready,
                          "the job ended before the kill: make it longer");
    nodes.kill(1);
    return job.get();
  }
};

}  // namespace

BOOST_FIXTURE_TEST_CASE(losing_a_query_s_only_copy_stops_that_query_and_no_other, four_nodes) {
  const auto reference_dir = nodes.dir / "reference";
  run_options quiet;
  quiet.print_summary = false;
  run_registered(spec, options(reference_dir, 0), quiet);
  const auto expected = results(reference_dir);
  for (const auto& [q, lines] : expected) BOOST_REQUIRE_MESSAGE(lines.size() > 400u, q);

  nodes.cluster.continue_on_loss = true;
  const auto r = run_killing_n2("degraded");
  for (const auto& w : r.warnings) BOOST_TEST_MESSAGE(w);
  BOOST_TEST(r.recoveries == 0u);
  BOOST_TEST((r.stopped_queries == std::vector<std::string>{"q0_0"}));
  const auto named = std::count_if(r.warnings.begin(), r.warnings.end(), [](const auto& w) {
    return w.find("node 'n2'") != std::string::npos && w.find("f0_0") != std::string::npos &&
           w.find("w0_0") != std::string::npos && w.find("q0_0") != std::string::npos;
  });
  BOOST_TEST(named == 1);

  const auto got = results(nodes.dir / "degraded");
  for (const auto& q : {"q0_1", "q1_0", "q1_1"}) {
    BOOST_TEST_CONTEXT("query " << q) {
      BOOST_TEST(got.at(q).size() == expected.at(q).size());
      BOOST_TEST((got.at(q) == expected.at(q)));
    }
  }
  // the stopped query: what it wrote before the loss is right, and it wrote nothing after it
  const auto& stopped = got.at("q0_0");
  BOOST_TEST_MESSAGE("q0_0 wrote " << stopped.size() << " of " << expected.at("q0_0").size()
                                   << " results before it stopped");
  BOOST_TEST(stopped.size() >= 40u);
  BOOST_TEST(stopped.size() < expected.at("q0_0").size());
  BOOST_TEST(std::includes(expected.at("q0_0").begin(), expected.at("q0_0").end(), stopped.begin(),
                           stopped.end()),
             "q0_0 wrote results the embedded run does not give: a stopped stage flushed");

  // the negative control: without degraded mode the same loss fails the job (no checkpoints)
  nodes.start(1);
  nodes.cluster.continue_on_loss = false;
  try {
    run_killing_n2("stop");
    BOOST_FAIL("without on_loss: continue, losing q0_0's filter must fail the job");
  } catch (const job_error& e) {
    BOOST_TEST_MESSAGE(e.what());
    BOOST_TEST(std::string{e.what()}.find("node 'n2'") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(degraded_mode_with_checkpoints_is_refused) {
  job_registry registry;
  const auto& spec = four_nodes::find(registry);
  cluster_config c;  // refused before any node is contacted
  c.insecure = true;
  c.nodes.push_back({"n1", "tcp://127.0.0.1:1", ""});
  c.continue_on_loss = true;
  run_options ro;
  ro.print_summary = false;
  ro.checkpoints.dir = "unused-checkpoints";
  ro.checkpoints.interval = std::chrono::milliseconds{200};
  try {
    run_on_cluster(spec, spec.make_options(), c, ro);
    BOOST_FAIL("degraded mode with checkpoints must be refused");
  } catch (const job_error& e) {
    BOOST_TEST(std::string{e.what()}.find("on_loss: continue") != std::string::npos, e.what());
  }
}
