// A secured cluster (CURVE + ZAP allow-list): a key that is not on the allow-list cannot join,
// deploy or inject data, plain-text peers are refused, an incompatible wire version is refused
// with a message, and malformed frames from an allowed peer are counted and dropped without
// harming the node.
#define BOOST_TEST_MODULE security
#include <boost/test/unit_test.hpp>

#include "net/frames.hpp"
#include "net/security.hpp"
#include "node_processes.hpp"

using namespace tidemark;
using namespace std::chrono_literals;

namespace {

job_options small_job(const job_spec& spec) {
  auto o = spec.make_options();
  o.set("events", "1000");
  o.set("parallelism", "3");
  return o;
}

/// A DEALER connected to `endpoint` with `own` keys (or plain text when `own` is null).
struct raw_peer {
  zmq::context_t ctx{1};
  zmq::socket_t s{ctx, zmq::socket_type::dealer};
  raw_peer(const std::string& endpoint, const key_pair* own, const std::string& server_key) {
    net::make_client(s, own ? *own : key_pair{}, server_key, own == nullptr, 64 << 20);
    s.connect(endpoint);
  }
  void send(const void* p, std::size_t n) { s.send(zmq::const_buffer{p, n}, zmq::send_flags::none); }
  void send(zmq::message_t m) { s.send(m, zmq::send_flags::none); }
  std::optional<zmq::message_t> receive(std::chrono::milliseconds timeout) {
    s.set(zmq::sockopt::rcvtimeo, static_cast<int>(timeout.count()));
    zmq::message_t m;
    if (!s.recv(m)) return std::nullopt;
    return m;
  }
};

zmq::message_t hello(std::uint16_t major) {
  flatbuffers::FlatBufferBuilder b;
  auto body = wire::CreateHello(b, b.CreateString("test"));
  auto frame = wire::CreateControlFrame(b, major, 0, wire::Body::Hello, body.Union());
  wire::FinishControlFrameBuffer(b, frame);
  return net::to_message(b);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_key_not_on_the_allow_list_cannot_join_or_deploy) {
  test::node_processes nodes;
  const auto& spec = nodes.registry.find("example-window-count");
  auto before = nodes.status(0);
  auto rogue = nodes.cluster;
  rogue.coordinator = key_pair::generate();
  rogue.connect_timeout = 1000ms;
  BOOST_CHECK_EXCEPTION(run_on_cluster(spec, small_job(spec), rogue), job_error, [](const job_error& e) {
    return std::string{e.what()}.find("no answer to hello") != std::string::npos;
  });
  BOOST_TEST(!query_status(nodes.cluster.nodes[0].endpoint, rogue, 500ms).has_value());
  auto after = nodes.status(0);
  BOOST_TEST(after.refused_peers > before.refused_peers);
  BOOST_TEST(after.frames_in == before.frames_in + 1);  // only the status request just made
  // the real coordinator still runs jobs
  BOOST_CHECK_NO_THROW(run_on_cluster(spec, small_job(spec), nodes.cluster));
}

BOOST_AUTO_TEST_CASE(plain_text_peers_are_refused) {
  test::node_processes nodes;
  const auto& spec = nodes.registry.find("example-window-count");
  auto before = nodes.status(0);
  auto plain = nodes.cluster;
  plain.insecure = true;
  plain.connect_timeout = 1000ms;
  BOOST_CHECK_THROW(run_on_cluster(spec, small_job(spec), plain), job_error);
  BOOST_TEST(!query_status(nodes.cluster.nodes[0].endpoint, plain, 500ms).has_value());
  raw_peer data{data_endpoint(nodes.cluster.nodes[0].endpoint), nullptr, ""};
  data.send(net::signal_frame(0, 0, wire::FrameKind::eos, 0, 0));
  std::this_thread::sleep_for(300ms);
  auto after = nodes.status(0);
  BOOST_TEST(after.frames_in == before.frames_in + 1);
  BOOST_TEST(after.bad_frames == before.bad_frames);
}

BOOST_AUTO_TEST_CASE(a_key_not_on_the_allow_list_cannot_inject_data) {
  test::node_processes nodes;
  auto before = nodes.status(1);
  auto rogue = key_pair::generate();
  raw_peer data{data_endpoint(nodes.cluster.nodes[1].endpoint), &rogue,
                nodes.cluster.nodes[1].public_key};
  for (int i = 0; i < 3; ++i) data.send(net::signal_frame(0, i, wire::FrameKind::watermark, 5, 0));
  std::this_thread::sleep_for(300ms);
  auto after = nodes.status(1);
  BOOST_TEST(after.refused_peers > before.refused_peers);
  BOOST_TEST(after.frames_in == before.frames_in + 1);
  BOOST_TEST(after.bad_frames == before.bad_frames);
}

BOOST_AUTO_TEST_CASE(an_incompatible_wire_version_is_refused_with_a_message) {
  test::node_processes nodes{1};
  raw_peer control{nodes.cluster.nodes[0].endpoint, &nodes.cluster.coordinator,
                   nodes.cluster.nodes[0].public_key};
  control.send(hello(net::wire_version_major + 1));
  auto reply = control.receive(2000ms);
  BOOST_REQUIRE(reply.has_value());
  BOOST_REQUIRE(!net::verify_control(reply->data(), reply->size(), 1 << 20));
  const auto& f = net::read_control(*reply);
  BOOST_REQUIRE((f.body_type() == wire::Body::HelloReply));
  BOOST_TEST(!f.body_as_HelloReply()->accepted());
  BOOST_TEST(f.body_as_HelloReply()->reason()->str().find("incompatible wire version 2.0") !=
             std::string::npos);
  control.send(hello(net::wire_version_major));
  reply = control.receive(2000ms);
  BOOST_REQUIRE(reply.has_value());
  BOOST_TEST(net::read_control(*reply).body_as_HelloReply()->accepted());
}

BOOST_AUTO_TEST_CASE(malformed_frames_from_an_allowed_peer_are_counted_and_dropped) {
  test::node_processes nodes{1};
  const auto& n = nodes.cluster.nodes[0];
  auto before = nodes.status(0);
  raw_peer control{n.endpoint, &nodes.cluster.coordinator, n.public_key};
  auto good = hello(net::wire_version_major);
  std::vector<std::uint8_t> bytes(good.data<std::uint8_t>(), good.data<std::uint8_t>() + good.size());
  control.send(bytes.data(), bytes.size() / 2);  // truncated
  auto flipped = bytes;
  flipped[4] ^= 0x01;  // the file identifier
  control.send(flipped.data(), flipped.size());
  auto offset = bytes;
  offset[3] ^= 0x80;  // the root offset points far outside
  control.send(offset.data(), offset.size());
  control.send("x", 1);
  {  // a message type without its message (the Verifier alone lets it through)
    flatbuffers::FlatBufferBuilder b;
    wire::FinishControlFrameBuffer(b, wire::CreateControlFrame(b, net::wire_version_major, 0,
                                                                wire::Body::Failure, 0));
    control.send(net::to_message(b));
  }
  // a data frame while no job is deployed, and data frames that fail verification
  raw_peer data{data_endpoint(n.endpoint), &nodes.cluster.coordinator, n.public_key};
  auto frame = net::signal_frame(3, 0, wire::FrameKind::watermark, 1, 0);
  data.send(frame.data(), frame.size());
  data.send(frame.data(), frame.size() - 3);
  std::this_thread::sleep_for(300ms);
  auto after = nodes.status(0);
  BOOST_TEST(after.bad_frames == before.bad_frames + 7);
  BOOST_TEST(after.frames_in == before.frames_in + 1);
}

BOOST_AUTO_TEST_CASE(verification_refuses_truncated_oversized_and_flipped_frames) {
  auto frame = net::signal_frame(1, 2, wire::FrameKind::watermark, 42, 0);
  const auto* p = frame.data<std::uint8_t>();
  BOOST_TEST(!net::verify_data(p, frame.size(), 1 << 20).has_value());
  BOOST_TEST(net::read_data(frame).watermark() == 42);
  for (std::size_t n = 0; n < frame.size(); ++n)
    BOOST_TEST(net::verify_data(p, n, 1 << 20).has_value(), "truncated to " << n);
  auto oversized = net::verify_data(p, frame.size(), frame.size() - 1);
  BOOST_REQUIRE(oversized.has_value());
  BOOST_TEST(oversized->find("exceeds the limit") != std::string::npos);
  std::vector<std::uint8_t> bytes(p, p + frame.size());
  for (std::size_t byte = 0; byte < 8; ++byte) {  // the root offset and the file identifier
    auto flipped = bytes;
    flipped[byte] ^= byte < 4 ? 0x40 : 0x01;
    BOOST_TEST(net::verify_data(flipped.data(), flipped.size(), 1 << 20).has_value(),
               "bit flipped in byte " << byte);
  }
  // a control frame is not a data frame, and the other way round
  auto h = hello(1);
  BOOST_TEST(net::verify_data(h.data(), h.size(), 1 << 20).has_value());
  BOOST_TEST(net::verify_control(p, frame.size(), 1 << 20).has_value());
}
