// The frames that carry live metrics between a node and the coordinator: LiveMetrics and Done
// give back every counter of every instance (the live fields included), a heartbeat gives back
// the node's transport counters, a status reply the node's view of its deployment (1.7), and all
// pass verification.
#define BOOST_TEST_MODULE live frames
#include <boost/test/unit_test.hpp>

#include "net/frames.hpp"

using namespace tidemark;

namespace {

std::vector<instance_metrics> two_instances() {
  instance_metrics a;
  a.stage = 2;
  a.instance = 1;
  a.busy_ns = 123'456'789;
  a.max_queued_batches = 9;
  a.queued_batches = 4;
  a.blocked_batches = 3;
  a.watermark = 1'700'000'000'123;
  operator_metrics op;
  op.name = "window";
  op.op = "window";
  op.instance = 1;
  op.events_in = 1000;
  op.events_out = 10;
  op.batches_in = 8;
  op.batches_out = 2;
  op.skipped = 1;
  op.extra = {{"late_events_dropped", 5}, {"lateness_after_end_p99", 0.25}};
  a.operators = {op};
  instance_metrics b;  // no watermark yet, no operators
  b.stage = 0;
  return {a, b};
}

void require_equal(const instance_metrics& x, const instance_metrics& y) {
  BOOST_TEST(x.stage == y.stage);
  BOOST_TEST(x.instance == y.instance);
  BOOST_TEST(x.busy_ns == y.busy_ns);
  BOOST_TEST(x.max_queued_batches == y.max_queued_batches);
  BOOST_TEST(x.queued_batches == y.queued_batches);
  BOOST_TEST(x.blocked_batches == y.blocked_batches);
  BOOST_TEST(x.watermark == y.watermark);
  BOOST_REQUIRE_EQUAL(x.operators.size(), y.operators.size());
  for (std::size_t i = 0; i < x.operators.size(); ++i) {
    const auto& o = x.operators[i];
    const auto& p = y.operators[i];
    BOOST_TEST(o.name == p.name);
    BOOST_TEST(o.op == p.op);
    BOOST_TEST(o.instance == p.instance);
    BOOST_TEST(o.events_in == p.events_in);
    BOOST_TEST(o.events_out == p.events_out);
    BOOST_TEST(o.batches_in == p.batches_in);
    BOOST_TEST(o.batches_out == p.batches_out);
    BOOST_TEST(o.skipped == p.skipped);
    BOOST_TEST((o.extra == p.extra));
  }
}

const wire::ControlFrame& verified(const zmq::message_t& m) {
  BOOST_REQUIRE(!net::verify_control(m.data(), m.size(), 1 << 20));
  return net::read_control(m);
}

}  // namespace

BOOST_AUTO_TEST_CASE(live_metrics_and_done_frames_give_back_every_counter) {
  const auto sent = two_instances();
  auto live = net::live_metrics_frame("n1", sent);
  const auto& f = verified(live);
  BOOST_REQUIRE(f.body_type() == wire::Body::LiveMetrics);
  BOOST_TEST(f.body_as_LiveMetrics()->node()->str() == "n1");
  auto got = net::read_metrics(*f.body_as_LiveMetrics());
  BOOST_REQUIRE_EQUAL(got.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) require_equal(got[i], sent[i]);
  BOOST_TEST(got[1].watermark == INT64_MIN);

  auto done = net::done_frame("n1", sent, 77);
  const auto& d = verified(done);
  BOOST_REQUIRE(d.body_type() == wire::Body::Done);
  auto final_counters = net::read_metrics(*d.body_as_Done());
  BOOST_REQUIRE_EQUAL(final_counters.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) require_equal(final_counters[i], sent[i]);
}

BOOST_AUTO_TEST_CASE(a_heartbeat_carries_the_transport_counters) {
  node_status s{"n2", 10, 2, 1, 3, 4096, 7, 2048, 5, 6, 8};
  flatbuffers::FlatBufferBuilder b;
  auto name = b.CreateString("n2");
  auto counters = net::status_table(b, s);
  auto m = net::control_message(b, wire::CreateHeartbeat(b, name, counters));
  const auto& f = verified(m);
  BOOST_REQUIRE(f.body_type() == wire::Body::Heartbeat);
  BOOST_REQUIRE(f.body_as_Heartbeat()->counters());
  auto got = net::read_status(*f.body_as_Heartbeat()->counters());
  BOOST_TEST(got.node == "n2");
  BOOST_TEST(got.frames_in == 10u);
  BOOST_TEST(got.bad_frames == 2u);
  BOOST_TEST(got.refused_peers == 1u);
  BOOST_TEST(got.lost_frames == 3u);
  BOOST_TEST(got.data_bytes_in == 4096u);
  BOOST_TEST(got.batch_frames_in == 7u);
  BOOST_TEST(got.batch_bytes_in == 2048u);
  BOOST_TEST(got.oversized_frames == 5u);
  BOOST_TEST(got.refused_control == 6u);
  BOOST_TEST(got.refused_data == 8u);
}

BOOST_AUTO_TEST_CASE(a_status_reply_carries_the_deployment_with_every_copy_state_and_lag) {
  using state = copy_status::state;
  deployment_status d;
  d.job = "example-window-count";
  d.deployment = 3;
  d.nodes = {"n1", "n2", "n3", "n4"};
  d.gone = {"n2"};
  d.spare_budget = 0.5;
  d.replica_load = 1.25;
  d.predicted_availability = 0.97;
  d.instances.push_back({0, 0, "readings", {{"n1", state::alive, "", std::nullopt}}});
  d.instances.push_back({1,
                         0,
                         "window-1",
                         {{"n4", state::restored, "n2", 7u},
                          {"n3", state::alive, "", 0u},
                          {"n1", state::dropped, "", std::nullopt}}});
  d.instances.push_back({1, 1, "window-1", {{"n2", state::gone, "", std::nullopt}}});
  node_status s{"n3", 10};
  flatbuffers::FlatBufferBuilder b;
  auto view = net::deployment_table(b, d);
  auto m = net::control_message(b, net::status_table(b, s, view));
  const auto& f = verified(m);
  BOOST_REQUIRE(f.body_type() == wire::Body::StatusReply);
  BOOST_TEST(net::read_status(*f.body_as_StatusReply()).frames_in == 10u);
  const auto got = net::read_deployment(*f.body_as_StatusReply());
  BOOST_REQUIRE(got.has_value());
  BOOST_TEST(got->job == d.job);
  BOOST_TEST(got->deployment == 3u);
  BOOST_TEST(got->nodes == d.nodes);
  BOOST_TEST(got->gone == d.gone);
  BOOST_TEST(got->spare_budget == 0.5);
  BOOST_TEST(got->replica_load == 1.25);
  BOOST_TEST(got->predicted_availability == 0.97);
  BOOST_REQUIRE_EQUAL(got->instances.size(), d.instances.size());
  for (std::size_t k = 0; k < d.instances.size(); ++k) {
    BOOST_TEST(got->instances[k].stage == d.instances[k].stage);
    BOOST_TEST(got->instances[k].instance == d.instances[k].instance);
    BOOST_TEST(got->instances[k].name == d.instances[k].name);
    BOOST_TEST((got->instances[k].copies == d.instances[k].copies));
  }
  BOOST_TEST(got->same_plan(d));
}

BOOST_AUTO_TEST_CASE(a_status_reply_without_a_job_or_from_before_1_7_has_no_deployment) {
  flatbuffers::FlatBufferBuilder b;
  auto m = net::control_message(b, net::status_table(b, node_status{"n1"}));
  const auto& f = verified(m);
  BOOST_TEST(!net::read_deployment(*f.body_as_StatusReply()).has_value());
  // the planner's figures default to unknown in a Deploy that does not carry them
  flatbuffers::FlatBufferBuilder d;
  wire::DeployBuilder deploy{d};
  auto dm = net::control_message(d, deploy.Finish());
  const auto& g = verified(dm);
  BOOST_TEST(g.body_as_Deploy()->spare_budget() == -1.0);
  BOOST_TEST(g.body_as_Deploy()->replica_load() == -1.0);
  BOOST_TEST(g.body_as_Deploy()->predicted_availability() == -1.0);
}
