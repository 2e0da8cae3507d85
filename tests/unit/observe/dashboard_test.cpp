// The dashboard's JSON and routes: /api/job shows the plan with counters summed per operator, rates
// per second between two snapshots, backpressure, watermarks, late events and state bytes; / is one
// page that loads nothing from elsewhere. Expected values are computed by hand from the counters.
#define BOOST_TEST_MODULE observe dashboard
#include <boost/test/unit_test.hpp>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "live_fixture.hpp"
#include "tidemark/observe/dashboard.hpp"

using namespace tidemark;
using nlohmann::json;
using tidemark::test::instance;
using tidemark::test::op;

namespace {

/// The window job at `seconds` after the source emitted `events`; the window instances have taken
/// `in0` and `in1` of them.
live_snapshot window_job(double seconds, std::uint64_t events, std::uint64_t in0,
                         std::uint64_t in1) {
  live_snapshot s;
  s.plan = test::window_job_plan();
  s.seconds = seconds;
  auto source = instance(0, 0, {op("readings", 0, events), op("stamp", events, events)}, 9000);
  source.blocked_batches = 3;
  source.queued_batches = 0;
  source.busy_ns = static_cast<std::int64_t>(seconds * 0.25e9);  // a quarter of the time busy
  s.instances.push_back(source);
  auto w0 =
      instance(1, 0,
               {op("window", in0, 10, {{"late_events_accepted", 2}, {"window_state_bytes", 100}}),
                op("counts", 10, 0)},
               4500);
  w0.queued_batches = 4;
  s.instances.push_back(w0);
  s.instances.push_back(
      instance(1, 1,
               {op("window", in1, 20, {{"late_events_dropped", 5}, {"window_state_bytes", 200}}),
                op("counts", 20, 0)},
               end_of_time));
  return s;
}

json api_job(const live_snapshot& now, const live_snapshot* before) {
  return json::parse(observe::job_json(now, before));
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_plan_with_counters_rates_and_backpressure) {
  auto before = window_job(1.0, 1000, 300, 500);
  auto now = window_job(3.0, 5000, 1800, 2000);
  auto j = api_job(now, &before);

  BOOST_TEST(j["job"] == "window-job");
  BOOST_TEST(j["finished"] == false);
  BOOST_TEST(j["rate_interval_s"].get<double>() == 2.0);
  BOOST_TEST(j["events"] == 5000);
  BOOST_TEST(j["events_per_s"].get<double>() == 2000.0);  // (5000 - 1000) / 2 s
  BOOST_TEST(j["late_events"] == 7);                      // 2 accepted + 5 dropped
  BOOST_TEST(j["watermark"] == 4500);                     // the lower of the sink instances
  BOOST_TEST(j["replicas"] == json::array());  // none in this plan
  BOOST_TEST(j["checkpoints"].is_null());

  BOOST_REQUIRE_EQUAL(j["edges"].size(), 1u);
  BOOST_TEST(j["edges"][0]["from"] == 0);
  BOOST_TEST(j["edges"][0]["to"] == 1);
  BOOST_TEST(j["edges"][0]["partitioning"] == "key");

  BOOST_REQUIRE_EQUAL(j["stages"].size(), 2u);
  const auto& source = j["stages"][0];
  BOOST_TEST(source["source"] == true);
  BOOST_TEST(source["sink"] == false);
  BOOST_TEST(source["backpressure"] == true);
  BOOST_TEST(source["blocked_batches"] == 3);
  BOOST_TEST(source["watermark"] == 9000);
  BOOST_TEST(source["busy"].get<double>() == 0.25, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(source["operators"][0]["name"] == "readings");
  BOOST_TEST(source["operators"][0]["kind"] == "source");
  BOOST_TEST(source["operators"][0]["out_per_s"].get<double>() == 2000.0);
  BOOST_TEST(source["operators"][1]["name"] == "stamp");
  BOOST_TEST(source["operators"][1]["state_memory_bytes"].is_null());

  const auto& windows = j["stages"][1];
  BOOST_TEST(windows["sink"] == true);
  BOOST_TEST(windows["parallelism"] == 2);
  BOOST_TEST(windows["nodes"] == json({"local", "node-b"}));
  BOOST_TEST(windows["backpressure"] == false);
  BOOST_TEST(windows["queued_batches"] == 4);
  BOOST_TEST(windows["watermark"] == 4500);
  const auto& window = windows["operators"][0];
  BOOST_TEST(window["events_in"] == 3800);                 // 1800 + 2000
  BOOST_TEST(window["in_per_s"].get<double>() == 1500.0);  // (3800 - 800) / 2 s
  BOOST_TEST(window["out_per_s"].get<double>() == 0.0);    // 30 results then and now
  BOOST_TEST(window["late_events"] == 7);
  BOOST_TEST(window["state_memory_bytes"].get<double>() == 300.0);
  BOOST_TEST(window["state_disk_bytes"].is_null());
  BOOST_REQUIRE_EQUAL(windows["instances"].size(), 2u);
  BOOST_TEST(windows["instances"][1]["node"] == "node-b");
  BOOST_TEST(windows["instances"][1]["watermark"] == "end");
}

BOOST_AUTO_TEST_CASE(without_an_earlier_snapshot_rates_are_null) {
  auto j = api_job(window_job(0.5, 10, 5, 5), nullptr);
  BOOST_TEST(j["rate_interval_s"].is_null());
  BOOST_TEST(j["events_per_s"].is_null());
  BOOST_TEST(j["stages"][0]["busy"].is_null());
  BOOST_TEST(j["stages"][1]["operators"][0]["in_per_s"].is_null());
  BOOST_TEST(j["stages"][1]["operators"][0]["events_in"] == 10);
}

BOOST_AUTO_TEST_CASE(operators_of_the_same_name_keep_their_own_rates) {
  // Aion's average job calls its window and the count after it both "average"
  auto plan = std::make_shared<live_plan>();
  plan->job = "average";
  plan->stages.push_back(
      {{"events", "average", "average"}, {"generator", "window", "count"}, 1, {"local"}});
  auto at = [&](double seconds, std::uint64_t events, std::uint64_t results) {
    live_snapshot s;
    s.plan = plan;
    s.seconds = seconds;
    s.instances.push_back(instance(
        0, 0, {op("events", 0, events), op("average", events, results), op("average", results, 0)},
        0));
    return s;
  };
  auto before = at(1.0, 100, 10);
  auto j = api_job(at(2.0, 300, 10), &before);
  const auto& ops = j["stages"][0]["operators"];
  BOOST_TEST(ops[1]["kind"] == "window");
  BOOST_TEST(ops[1]["in_per_s"].get<double>() == 200.0);  // (300 - 100) / 1 s
  BOOST_TEST(ops[2]["kind"] == "count");
  BOOST_TEST(ops[2]["in_per_s"].get<double>() == 0.0);  // 10 results then and now
}

BOOST_AUTO_TEST_CASE(the_routes_serve_the_page_and_the_latest_snapshot) {
  auto view = std::make_shared<live_view>();
  observe::http_server server{"127.0.0.1:0"};
  observe::add_dashboard(server, view);
  server.start();
  httplib::Client client{"127.0.0.1", server.port()};

  auto page = client.Get("/");
  BOOST_REQUIRE(page);
  BOOST_TEST(page->status == 200);
  BOOST_TEST(page->get_header_value("Content-Type") == "text/html; charset=utf-8");
  BOOST_TEST(page->body.find("fetch(\"/api/job\"") != std::string::npos);
  // self-contained: no scripts, styles or fonts from elsewhere
  for (const auto* outside : {"src=\"http", "href=\"http", "url(http", "@import"})
    BOOST_TEST(page->body.find(outside) == std::string::npos, outside);

  auto before_start = client.Get("/api/job");
  BOOST_REQUIRE(before_start);
  BOOST_TEST(json::parse(before_start->body) == json({{"started", false}}));

  view->publish(window_job(1.0, 1000, 300, 500));
  auto first = json::parse(client.Get("/api/job")->body);
  BOOST_TEST(first["job"] == "window-job");
  BOOST_TEST(first["events_per_s"].is_null());  // nothing earlier seen yet

  view->publish(window_job(1.5, 4000, 1000, 1000));
  auto res = client.Get("/api/job");
  BOOST_TEST(res->get_header_value("Content-Type") == "application/json");
  auto second = json::parse(res->body);
  BOOST_TEST(second["events_per_s"].get<double>() == 6000.0);  // (4000 - 1000) / 0.5 s
  // asking again before a new snapshot keeps the same interval
  BOOST_TEST(json::parse(client.Get("/api/job")->body)["events_per_s"].get<double>() == 6000.0);
}

BOOST_AUTO_TEST_CASE(replicated_instances_are_listed_with_their_nodes) {
  auto now = window_job(3.0, 5000, 1800, 2000);
  auto plan = std::make_shared<live_plan>(*now.plan);
  plan->stages[1].replicas = {{"node-c"}, {}};  // window instance 0 has a copy on node-c
  now.plan = plan;
  const auto j = api_job(now, nullptr);
  BOOST_REQUIRE_EQUAL(j["replicas"].size(), 1u);
  BOOST_TEST(j["replicas"][0] == json::parse(R"({"stage": 1, "operator": "window", "instance": 0,
                                                 "node": "local", "replicas": ["node-c"]})"));
}
