// The coordinator's live view of a cluster job, against a scripted node (a ROUTER socket in the
// test, plain text): the counters of LiveMetrics frames and heartbeats land in run_options::live,
// while garbage and metrics of instances the node does not host are dropped and counted as the
// coordinator's bad frames.
#define BOOST_TEST_MODULE coordinator live view
#include <boost/test/unit_test.hpp>

#include <future>

#include "../../support/wait_until.hpp"
#include "net/frames.hpp"
#include "tidemark/examples/example_jobs.hpp"
#include "tidemark/runtime/cluster.hpp"

using namespace tidemark;
using namespace std::chrono_literals;

namespace {

/// One node of the cluster, played by the test: answers the coordinator and sends what it is told.
struct scripted_node {
  zmq::context_t ctx{1};
  zmq::socket_t s{ctx, zmq::socket_type::router};
  std::string coordinator;
  std::string endpoint;

  scripted_node() {
    s.set(zmq::sockopt::linger, 0);
    s.bind("tcp://127.0.0.1:*");
    endpoint = s.get(zmq::sockopt::last_endpoint);
  }

  /// The next control frame's body type (the coordinator's messages are well formed).
  wire::Body receive() {
    s.set(zmq::sockopt::rcvtimeo, 5000);
    zmq::message_t id, m;
    BOOST_REQUIRE(s.recv(id));
    BOOST_REQUIRE(s.recv(m));
    coordinator = id.to_string();
    m = net::aligned(std::move(m));  // plain-text frames arrive at any address
    BOOST_REQUIRE(!net::verify_control(m.data(), m.size(), 1 << 20));
    return net::read_control(m).body_type();
  }

  void send(zmq::message_t m) {
    s.send(zmq::buffer(coordinator), zmq::send_flags::sndmore);
    s.send(m, zmq::send_flags::none);
  }
};

instance_metrics counters(std::uint32_t stage, std::uint32_t queued) {
  instance_metrics m;
  m.stage = stage;
  m.queued_batches = queued;
  operator_metrics op;
  op.name = "readings";
  op.events_out = 42;
  m.operators = {op};
  return m;
}

}  // namespace

BOOST_AUTO_TEST_CASE(live_frames_fill_the_coordinators_view_and_bad_ones_are_counted) {
  job_registry registry;
  examples::register_jobs(registry);
  const auto& spec = registry.find("example-window-count");
  auto options = spec.make_options();
  options.set("parallelism", "1");
  scripted_node node;
  cluster_config cluster;
  cluster.insecure = true;
  cluster.nodes = {{"n1", node.endpoint, ""}};
  cluster.heartbeat_timeout = 10s;
  run_options ro;
  ro.live = std::make_shared<live_view>();
  ro.live_period = 100ms;
  auto running =
      std::async(std::launch::async, [&] { return run_on_cluster(spec, options, cluster, ro); });

  flatbuffers::FlatBufferBuilder b;
  BOOST_REQUIRE(node.receive() == wire::Body::Hello);
  node.send(net::control_message(b, wire::CreateHelloReply(b, true, 0, b.CreateString("n1"))));
  BOOST_REQUIRE(node.receive() == wire::Body::Deploy);
  b.Clear();
  node.send(net::control_message(b, wire::CreateDeployed(b, true)));
  BOOST_REQUIRE(node.receive() == wire::Body::Start);

  // garbage, then metrics of a stage the plan does not have, then good counters
  const std::string garbage = "not a frame at all";
  node.send(zmq::message_t{garbage.data(), garbage.size()});
  node.send(net::live_metrics_frame("n1", {counters(0, 3), counters(99, 1)}));
  node.send(net::live_metrics_frame("n1", {counters(0, 5)}));
  b.Clear();
  auto name = b.CreateString("n1");
  auto transport = net::status_table(b, node_status{"spoofed", 17, 1, 0, 0, 0, 0, 0});
  node.send(net::control_message(b, wire::CreateHeartbeat(b, name, transport)));
  node.send(net::live_metrics_frame("n1", {counters(0, 6)}));

  std::shared_ptr<const live_snapshot> seen;
  test::wait_until([&] {
    seen = ro.live->latest();
    return seen && !seen->instances.empty() && seen->instances[0].queued_batches == 6 &&
           seen->nodes.size() == 2;
  });
  BOOST_TEST(seen->plan->job == "example-window-count");
  BOOST_REQUIRE_EQUAL(seen->instances.size(), 1u);  // nothing of the refused frame
  BOOST_TEST(seen->instances[0].operators.at(0).events_out == 42u);
  // which entry comes first depends on how the frames fall into the coordinator's polls
  const bool n1_first = seen->nodes[0].node == "n1";
  const auto& n1 = seen->nodes[n1_first ? 0 : 1];
  const auto& coordinator = seen->nodes[n1_first ? 1 : 0];
  BOOST_TEST(n1.node == "n1");  // the connection names the node, not the frame
  BOOST_TEST(n1.frames_in == 17u);
  BOOST_TEST(coordinator.node == "coordinator");
  BOOST_TEST(coordinator.bad_frames == 2u);
  BOOST_TEST(!seen->finished);

  b.Clear();
  node.send(net::done_frame("n1", {counters(0, 0)}, 1));
  auto result = running.get();
  BOOST_TEST(result.instances.size() == 1u);
  auto last = ro.live->latest();
  BOOST_TEST(last->finished);
  BOOST_TEST(last->instances.at(0).queued_batches == 0u);
}
