// /metrics of running jobs, scraped over HTTP while they run: an embedded run shows its
// operators' series with growing counters and a watermark lag; `tidemark run --metrics-listen`
// serves them from the tool; on a two-node loopback cluster each
// tidemark-node (--metrics-listen) serves its own instances and transport counters and the
// coordinator the whole job. promtool accepts every scrape.
#define BOOST_TEST_MODULE metrics
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <future>

#include "../../support/promtool.hpp"
#include "../../support/wait_until.hpp"
#include "../cluster/node_processes.hpp"
#include "scrape.hpp"
#include "tidemark/observe/prometheus.hpp"

extern char** environ;

using namespace tidemark;
using namespace std::chrono_literals;

namespace {

/// Polls to a deadline: returns once `f()` is true, fails the test after `limit`.
template <class F>
void poll_until(std::chrono::seconds limit, const char* what, F f) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!f()) {
    BOOST_REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline, "timed out: " << what);
    std::this_thread::sleep_for(50ms);
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(an_embedded_run_serves_growing_operator_series) {
  std::atomic<bool> stop{false};
  run_options ro;
  ro.batch_size = 16;
  ro.live = std::make_shared<live_view>();
  ro.live_period = 100ms;
  auto server = observe::serve_metrics("127.0.0.1:0", ro.live);
  auto running = std::async(std::launch::async, [&] { return run(test::endless_job(stop), ro); });
  test::stop_at_exit stopper{stop};

  std::string first;
  poll_until(20s, "the operators' series", [&] {
    first = test::scrape(server->port());
    return test::sample(first, "tidemark_operator_events_out_total", "operator=\"ticks\"")
               .value_or(0) > 0;
  });
  BOOST_TEST(test::promtool_problems(first) == "");
  for (const char* op : {"stage=\"0\",operator=\"ticks\"", "stage=\"0\",operator=\"stamped\"",
                         "stage=\"1\",operator=\"copied\"", "stage=\"1\",operator=\"counted\""})
    BOOST_TEST(test::sample(
                   first, "tidemark_operator_events_in_total",
                   std::string{"job=\"metrics-endless\","} + op + ",instance=\"0\",node=\"local\"")
                   .has_value(),
               op);
  BOOST_TEST(*test::sample(first, "tidemark_job_finished") == 0);
  // the events carry wall-clock times: the watermark is recent, so its lag is shown (and small)
  std::string later;
  poll_until(20s, "the counters to grow", [&] {
    later = test::scrape(server->port());
    return *test::sample(later, "tidemark_operator_events_out_total", "operator=\"ticks\"") >
           *test::sample(first, "tidemark_operator_events_out_total", "operator=\"ticks\"");
  });
  BOOST_TEST(test::promtool_problems(later) == "");
  auto lag = test::sample(later, "tidemark_stage_watermark_lag_seconds");
  BOOST_REQUIRE(lag.has_value());
  BOOST_TEST(*lag >= 0);
  BOOST_TEST(*lag < 30);

  stop = true;
  auto result = running.get();
  std::uint64_t counted = 0;
  for (const auto& m : result.per_operator())
    if (m.name == "counted") counted = m.events_in;
  // the final snapshot holds the final counters
  auto last = test::scrape(server->port());
  BOOST_TEST(*test::sample(last, "tidemark_job_finished") == 1);
  BOOST_TEST(*test::sample(last, "tidemark_operator_events_in_total", "operator=\"counted\"") ==
             static_cast<double>(counted));
  BOOST_TEST(test::promtool_problems(last) == "");
}

BOOST_AUTO_TEST_CASE(the_tool_serves_metrics_with_metrics_listen) {
  const auto port = test::free_port();
  const auto tool = test::tool_binary();
  std::vector<std::string> args{tool,
                                "run",
                                "--metrics-listen",
                                "127.0.0.1:" + std::to_string(port),
                                "--batch-size",
                                "64",
                                "example-window-count",
                                "--events",
                                "100000",
                                "--keys",
                                "37",
                                "--window-ms",
                                "500",
                                "--gather",
                                "true",
                                "--sink-delay-us",
                                "500"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t quiet;  // the run's summary is not this test's output
  posix_spawn_file_actions_init(&quiet);
  posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int failed = posix_spawn(&pid, tool.c_str(), &quiet, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&quiet);
  BOOST_REQUIRE_EQUAL(failed, 0);
  std::string text;
  poll_until(20s, "the tool's operator series", [&] {
    httplib::Client client{"127.0.0.1", port};
    auto res = client.Get("/metrics");
    if (res) text = res->body;
    return test::sample(text, "tidemark_operator_events_in_total", "operator=\"counts\"")
        .has_value();
  });
  BOOST_TEST(test::promtool_problems(text) == "");
  BOOST_TEST(*test::sample(text, "tidemark_job_finished") == 0, "scraped during the run");
  int status = 0;
  ::waitpid(pid, &status, 0);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0));
}

BOOST_AUTO_TEST_CASE(nodes_and_the_coordinator_serve_metrics_during_a_cluster_run) {
  std::vector<std::uint16_t> ports{test::free_port(), test::free_port()};
  test::node_processes nodes{2, [&](std::size_t i) {
                               return std::vector<std::string>{
                                   "--metrics-listen", "127.0.0.1:" + std::to_string(ports[i])};
                             }};
  nodes.cluster.pins["gather"] = "n2";
  const auto& spec = nodes.registry.find("example-window-count");
  auto options = spec.make_options();
  options.set("events", "100000");
  options.set("keys", "37");
  options.set("window-ms", "500");
  options.set("gather", "true");
  options.set("sink-delay-us", "500");  // 7,400 results: about 4 s
  run_options ro;
  ro.batch_size = 64;
  ro.live = std::make_shared<live_view>();
  ro.live_period = 100ms;
  auto coordinator = observe::serve_metrics("127.0.0.1:0", ro.live);
  auto running = std::async(std::launch::async,
                            [&] { return run_on_cluster(spec, options, nodes.cluster, ro); });

  // every node's scrape shows its own instances and transport counters
  for (std::size_t i = 0; i < 2; ++i) {
    const auto id = nodes.cluster.nodes[i].id;
    std::string text;
    poll_until(20s, "a node's operator series", [&] {
      text = test::scrape(ports[i]);
      return test::sample(text, "tidemark_operator_events_in_total").has_value();
    });
    BOOST_TEST(test::promtool_problems(text) == "");
    // only its own instances
    BOOST_TEST(test::sample(text, "tidemark_operator_events_in_total", "node=\"" + id + "\"")
                   .value_or(-1) ==
               test::sample(text, "tidemark_operator_events_in_total").value());
    BOOST_TEST(
        test::sample(text, "tidemark_node_frames_in_total", "node=\"" + id + "\"").value_or(0) > 0);
    BOOST_TEST(test::sample(text, "tidemark_node_bad_frames_total").value() == 0);
  }
  // the coordinator's scrape holds the whole job: both nodes' instances and counters, its own
  std::string whole;
  poll_until(20s, "the coordinator's view of both nodes", [&] {
    whole = test::scrape(coordinator->port());
    return test::sample(whole, "tidemark_operator_events_in_total", "node=\"n1\"").has_value() &&
           test::sample(whole, "tidemark_operator_events_in_total", "node=\"n2\"").has_value() &&
           test::sample(whole, "tidemark_node_frames_in_total", "node=\"n1\"").has_value() &&
           test::sample(whole, "tidemark_node_frames_in_total", "node=\"n2\"").has_value();
  });
  BOOST_TEST(test::promtool_problems(whole) == "");
  BOOST_TEST(test::sample(whole, "tidemark_operator_events_out_total", "operator=\"readings\"")
                 .has_value());
  BOOST_TEST(test::sample(whole, "tidemark_operator_events_in_total",
                          "operator=\"gather\",instance=\"0\",node=\"n2\"")
                 .has_value());
  BOOST_TEST(
      test::sample(whole, "tidemark_node_frames_in_total", "node=\"coordinator\"").value_or(0) > 0);
  BOOST_TEST(*test::sample(whole, "tidemark_job_finished") == 0, "scraped during the run");

  auto result = running.get();
  std::uint64_t counted = 0;
  for (const auto& m : result.per_operator())
    if (m.name == "counts") counted = m.events_in;
  BOOST_TEST(counted == 200u * 37u);
  auto last = test::scrape(coordinator->port());
  BOOST_TEST(*test::sample(last, "tidemark_job_finished") == 1);
  BOOST_TEST(*test::sample(last, "tidemark_operator_events_in_total", "operator=\"counts\"") ==
             static_cast<double>(counted));
  BOOST_TEST(test::promtool_problems(last) == "");
}
