// A secured cluster (CURVE + ZAP allow-list): a key that is not on the allow-list cannot join,
// deploy or inject data, plain-text peers are refused, an incompatible wire version is refused
// with a message, and malformed frames from an allowed peer are counted and dropped without
// harming the node. Keys have roles: a node's key cannot act as the coordinator, a data channel
// accepts frames only from the node that owns it, and a frame above the size limit is counted
// while the node goes on serving, and one at the coordinator is counted and logged.
#define BOOST_TEST_MODULE security
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <future>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "../../support/lines.hpp"
#include "net/channels.hpp"
#include "net/frames.hpp"
#include "net/security.hpp"
#include "node_processes.hpp"
#include "wiring.hpp"

using namespace tidemark;
using namespace std::chrono_literals;

namespace {

using tidemark::test::sorted_lines;

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
  zmq::socket_t handshakes{ctx, zmq::socket_type::pair};  // the DEALER's failed handshakes
  raw_peer(const std::string& endpoint, const key_pair* own, const std::string& server_key) {
    net::make_client(s, own ? *own : key_pair{}, server_key, own == nullptr, 64 << 20);
    static int peers = 0;
    const auto monitor = "inproc://raw-peer-" + std::to_string(peers++);
    BOOST_REQUIRE(zmq_socket_monitor(s.handle(), monitor.c_str(),
                                     ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                                         ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                                         ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) == 0);
    handshakes.set(zmq::sockopt::linger, 0);
    handshakes.connect(monitor);
    s.connect(endpoint);
  }
  ~raw_peer() { (void)zmq_socket_monitor(s.handle(), nullptr, 0); }
  /// True once the server ended a handshake of this peer (within 10 s): what a node does to a
  /// plain-text peer, so nothing this peer sent can reach it.
  bool handshake_refused() {
    handshakes.set(zmq::sockopt::rcvtimeo, 10000);
    zmq::message_t event;
    return handshakes.recv(event).has_value();
  }
  void send(const void* p, std::size_t n) { s.send(zmq::const_buffer{p, n}, zmq::send_flags::none); }
  void send(zmq::message_t m) { s.send(m, zmq::send_flags::none); }
  std::optional<zmq::message_t> receive(std::chrono::milliseconds timeout) {
    s.set(zmq::sockopt::rcvtimeo, static_cast<int>(timeout.count()));
    zmq::message_t m;
    if (!s.recv(m)) return std::nullopt;
    return net::aligned(std::move(m));  // plain-text frames arrive at any address
  }
};

zmq::message_t hello(std::uint16_t major) {
  flatbuffers::FlatBufferBuilder b;
  auto body = wire::CreateHello(b, b.CreateString("test"));
  auto frame = wire::CreateControlFrame(b, major, 0, wire::Body::Hello, body.Union());
  wire::FinishControlFrameBuffer(b, frame);
  return net::to_message(b);
}

template <class Body>
zmq::message_t empty_control() {
  flatbuffers::FlatBufferBuilder b;
  typename Body::Builder body{b};
  return net::control_message(b, body.Finish());
}

/// The key pair the fixture saved for `name` (n1, n2, ... or coordinator).
key_pair saved_key(const test::node_processes& nodes, const std::string& name) {
  return key_pair::load((nodes.dir / "keys" / (name + ".key")).string());
}

/// Asks node `i` for its counters until `done` holds or 10 s passed; returns the last answer.
/// Each request is a frame the node counts in frames_in: `requests` (when given) says how many.
template <class Done>
node_status await_status(test::node_processes& nodes, std::size_t i, Done done,
                         std::uint64_t* requests = nullptr) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  for (;;) {
    auto s = nodes.status(i);
    if (requests) ++*requests;
    if (done(s) || std::chrono::steady_clock::now() > deadline) return s;
    std::this_thread::sleep_for(20ms);
  }
}

/// The control frame a reply carries, verified.
const wire::ControlFrame& answer(const std::optional<zmq::message_t>& m) {
  BOOST_REQUIRE(m.has_value());
  BOOST_REQUIRE(!net::verify_control(m->data(), m->size(), 64 << 20));
  return net::read_control(*m);
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
  BOOST_TEST(after.oversized_frames == before.oversized_frames);  // a refused handshake is none
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
  // the node ends the plain-text handshake: the frame is never delivered, so nothing may count it
  BOOST_REQUIRE(data.handshake_refused());
  auto after = nodes.status(0);
  BOOST_TEST(after.frames_in == before.frames_in + 1);
  BOOST_TEST(after.bad_frames == before.bad_frames);
  BOOST_TEST(after.oversized_frames == before.oversized_frames);
}

BOOST_AUTO_TEST_CASE(a_key_not_on_the_allow_list_cannot_inject_data) {
  test::node_processes nodes;
  auto before = nodes.status(1);
  auto rogue = key_pair::generate();
  raw_peer data{data_endpoint(nodes.cluster.nodes[1].endpoint), &rogue,
                nodes.cluster.nodes[1].public_key};
  for (int i = 0; i < 3; ++i) data.send(net::signal_frame(0, i, wire::FrameKind::watermark, 5, 0));
  std::uint64_t requests = 0;
  auto after = await_status(
      nodes, 1, [&](const node_status& s) { return s.refused_peers > before.refused_peers; },
      &requests);
  BOOST_TEST(after.refused_peers > before.refused_peers);
  BOOST_TEST(after.frames_in == before.frames_in + requests);
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
  std::uint64_t requests = 0;
  auto after = await_status(
      nodes, 0, [&](const node_status& s) { return s.bad_frames >= before.bad_frames + 7; },
      &requests);
  BOOST_TEST(after.bad_frames == before.bad_frames + 7);
  BOOST_TEST(after.frames_in == before.frames_in + requests);
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

BOOST_AUTO_TEST_CASE(a_node_key_cannot_act_as_coordinator) {
  test::node_processes nodes;
  const auto& spec = nodes.registry.find("example-window-count");
  const auto& n1 = nodes.cluster.nodes[0];
  const auto n2_key = saved_key(nodes, "n2");
  const auto before = nodes.status(0);
  raw_peer impostor{n1.endpoint, &n2_key, n1.public_key};

  // status stays open to every allow-listed key
  impostor.send(empty_control<wire::StatusRequest>());
  const auto status = impostor.receive(2000ms);
  const auto& s = answer(status);
  BOOST_REQUIRE((s.body_type() == wire::Body::StatusReply));
  BOOST_TEST(s.body_as_StatusReply()->node()->str() == "n1");

  // hello is refused with the reason
  impostor.send(hello(net::wire_version_major));
  const auto refused = impostor.receive(2000ms);
  const auto& h = answer(refused);
  BOOST_REQUIRE((h.body_type() == wire::Body::HelloReply));
  BOOST_TEST(!h.body_as_HelloReply()->accepted());
  BOOST_TEST(h.body_as_HelloReply()->reason()->str().find("only the coordinator's key") !=
             std::string::npos);

  // so is a fault command, with the reason (the node does not even look whether faults are allowed)
  impostor.send(empty_control<wire::Faults>());
  const auto no_faults = impostor.receive(2000ms);
  const auto& fr = answer(no_faults);
  BOOST_REQUIRE((fr.body_type() == wire::Body::FaultsReply));
  BOOST_TEST(!fr.body_as_FaultsReply()->accepted());
  BOOST_TEST(fr.body_as_FaultsReply()->reason()->str().find("only the coordinator's key") !=
             std::string::npos);

  // while a job runs, the impostor's Stop and Deploy change nothing
  auto options = [&](const std::string& out) {
    auto o = spec.make_options();
    o.set("events", "120000");
    o.set("keys", "37");
    o.set("window-ms", "500");
    o.set("parallelism", "3");
    o.set("gather", "true");
    o.set("out", (nodes.dir / out).string());
    return o;
  };
  auto job = std::async(std::launch::async,
                        [&] { return run_on_cluster(spec, options("cluster.txt"), nodes.cluster); });
  std::uint64_t sent = 0;
  std::size_t deploys_refused = 0;
  while (job.wait_for(10ms) != std::future_status::ready) {
    flatbuffers::FlatBufferBuilder b;
    impostor.send(net::control_message(b, wire::CreateStop(b, b.CreateString("impostor"))));
    flatbuffers::FlatBufferBuilder d;
    impostor.send(net::control_message(
        d, wire::CreateDeploy(d, d.CreateString("example-window-count"))));
    sent += 2;
    const auto reply = impostor.receive(2000ms);
    const auto& deployed = answer(reply);
    BOOST_REQUIRE((deployed.body_type() == wire::Body::Deployed));
    deploys_refused += !deployed.body_as_Deployed()->ok();
  }
  BOOST_REQUIRE_NO_THROW(job.get());
  BOOST_TEST(sent >= 2u);
  BOOST_TEST(deploys_refused == sent / 2);
  run_registered(spec, options("embedded.txt"));
  const auto cluster_lines = sorted_lines(nodes.dir / "cluster.txt");
  BOOST_TEST(cluster_lines.size() == 240u * 37u);
  BOOST_TEST((cluster_lines == sorted_lines(nodes.dir / "embedded.txt")));

  const auto after = nodes.status(0);
  BOOST_TEST(after.refused_control == before.refused_control + 2 + sent);
  BOOST_TEST(after.bad_frames == before.bad_frames);
  // nodes that received nothing from the impostor refused nothing
  BOOST_TEST(nodes.status(1).refused_control == 0u);
}

BOOST_AUTO_TEST_CASE(a_data_channel_accepts_frames_only_from_the_node_that_owns_it) {
  test::node_processes nodes;
  const auto& spec = nodes.registry.find("example-window-count");
  auto options = small_job(spec);
  const run_options ro;
  // the plan, placement and channels exactly as the coordinator and the nodes compute them
  const auto j = spec.build(options);
  const auto synced = detail::executable_graph(j, ro);
  const auto plan = compile(synced.graph, {ro.fuse});
  const auto placement = place(synced.graph, plan, nodes.cluster);
  const auto channels = net::enumerate_channels(synced.graph, plan, detail::wire(plan));
  const auto offsets = net::instance_offsets(plan);
  std::optional<std::uint32_t> crossing;
  std::uint32_t owner = 0, receiver = 0;
  for (std::uint32_t c = 0; c < channels.size() && !crossing; ++c) {
    owner = placement[offsets[channels[c].from_stage] + channels[c].from_instance];
    receiver = placement[offsets[channels[c].to_stage] + channels[c].to_instance];
    if (owner != receiver) crossing = c;
  }
  BOOST_REQUIRE(crossing.has_value());
  const std::uint32_t forger = 3 - owner - receiver;  // the third node

  // deployed by hand as the coordinator, so the test knows the deployment number frames carry
  const std::uint32_t deployment = 4242;
  std::vector<std::string> names, values;
  for (const auto& [k, v] : options.values()) {
    names.push_back(k);
    values.push_back(v);
  }
  std::vector<std::unique_ptr<raw_peer>> control;
  for (std::uint32_t m = 0; m < 3; ++m) {
    const auto& n = nodes.cluster.nodes[m];
    flatbuffers::FlatBufferBuilder b;
    std::vector<flatbuffers::Offset<wire::NodeAddress>> addresses;
    for (const auto& a : nodes.cluster.nodes)
      addresses.push_back(wire::CreateNodeAddress(b, b.CreateString(a.id),
                                                  b.CreateString(a.endpoint),
                                                  b.CreateString(a.public_key)));
    auto body = wire::CreateDeploy(b, b.CreateString(spec.name), b.CreateVectorOfStrings(names),
                                   b.CreateVectorOfStrings(values), b.CreateVector(addresses), m,
                                   b.CreateVector(placement),
                                   static_cast<std::uint32_t>(ro.batch_size), ro.credit,
                                   static_cast<std::uint32_t>(ro.linger.count()), ro.fuse, 250, 0,
                                   0, deployment);
    control.push_back(std::make_unique<raw_peer>(n.endpoint, &nodes.cluster.coordinator, n.public_key));
    control.back()->send(net::control_message(b, body));
    const auto reply = control.back()->receive(5000ms);
    const auto& deployed = answer(reply);
    BOOST_REQUIRE((deployed.body_type() == wire::Body::Deployed));
    BOOST_REQUIRE_MESSAGE(deployed.body_as_Deployed()->ok(), deployed.body_as_Deployed()->error()->str());
  }

  const auto& to = nodes.cluster.nodes[receiver];
  const auto before = nodes.status(receiver);
  auto frame = [&] { return net::signal_frame(*crossing, 0, wire::FrameKind::watermark, 1, 0, deployment); };
  // another allow-listed node's key: refused and counted
  const auto forger_key = saved_key(nodes, nodes.cluster.nodes[forger].id);
  raw_peer forged{data_endpoint(to.endpoint), &forger_key, to.public_key};
  forged.send(frame());
  auto s = await_status(nodes, receiver,
                        [&](const node_status& s) { return s.refused_data > before.refused_data; });
  BOOST_TEST(s.refused_data == before.refused_data + 1);
  BOOST_TEST(s.data_bytes_in == before.data_bytes_in);
  // the coordinator's key is no node's either
  raw_peer coordinator{data_endpoint(to.endpoint), &nodes.cluster.coordinator, to.public_key};
  coordinator.send(frame());
  s = await_status(nodes, receiver,
                   [&](const node_status& s) { return s.refused_data > before.refused_data + 1; });
  BOOST_TEST(s.refused_data == before.refused_data + 2);
  // the owner's key: accepted
  const auto owner_key = saved_key(nodes, nodes.cluster.nodes[owner].id);
  raw_peer genuine{data_endpoint(to.endpoint), &owner_key, to.public_key};
  genuine.send(frame());
  s = await_status(nodes, receiver,
                   [&](const node_status& s) { return s.data_bytes_in > before.data_bytes_in; });
  BOOST_TEST(s.data_bytes_in > before.data_bytes_in);
  BOOST_TEST(s.refused_data == before.refused_data + 2);
  BOOST_TEST(s.bad_frames == before.bad_frames);
  for (auto& c : control) c->send(empty_control<wire::Stop>());
}

BOOST_AUTO_TEST_CASE(a_frame_above_the_limit_is_counted_and_the_node_serves_on) {
  constexpr std::int64_t limit = 1 << 20;
  test::node_processes nodes{3, [](std::size_t) {
    return std::vector<std::string>{"--max-message-bytes", std::to_string(limit)};
  }};
  const auto& spec = nodes.registry.find("example-window-count");
  const auto& n1 = nodes.cluster.nodes[0];
  const auto n2_key = saved_key(nodes, "n2");
  const auto before = nodes.status(0);
  const std::vector<std::uint8_t> big(4 * limit, 0x55);

  // control socket: once the connection is up (a status request answered), 4 MiB make ZeroMQ
  // drop it
  raw_peer control{n1.endpoint, &n2_key, n1.public_key};
  control.send(empty_control<wire::StatusRequest>());
  BOOST_REQUIRE(control.receive(2000ms).has_value());
  control.send(big.data(), big.size());
  auto s = await_status(nodes, 0, [&](const node_status& s) {
    return s.oversized_frames > before.oversized_frames;
  });
  BOOST_TEST(s.oversized_frames == before.oversized_frames + 1);

  // data socket: likewise, once a first frame arrived (a bad one: no job is deployed)
  raw_peer data{data_endpoint(n1.endpoint), &n2_key, n1.public_key};
  data.send(net::signal_frame(0, 0, wire::FrameKind::watermark, 1, 0));
  await_status(nodes, 0, [&](const node_status& s) { return s.bad_frames > before.bad_frames; });
  data.send(big.data(), big.size());
  s = await_status(nodes, 0, [&](const node_status& s) {
    return s.oversized_frames > before.oversized_frames + 1;
  });
  BOOST_TEST(s.oversized_frames == before.oversized_frames + 2);

  // a few bytes above the limit pass ZeroMQ (its limit leaves room for CURVE) and the node
  // refuses the frame itself
  data.send(big.data(), limit + 8);
  s = await_status(nodes, 0, [&](const node_status& s) {
    return s.oversized_frames > before.oversized_frames + 2;
  });
  BOOST_TEST(s.oversized_frames == before.oversized_frames + 3);
  BOOST_TEST(s.bad_frames == before.bad_frames + 1);  // only the frame without a job

  // the node serves on: the dropped peer's next request is answered, a job runs, and a frame of
  // exactly the limit is no oversized frame
  control.send(empty_control<wire::StatusRequest>());
  BOOST_TEST(control.receive(2000ms).has_value());
  // the coordinator reads the count in n1's heartbeats (frequent here, so some come while the job
  // runs) and warns
  std::ostringstream coordinator_log;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(coordinator_log);
  spdlog::default_logger()->sinks().push_back(sink);
  nodes.cluster.heartbeat_interval = 10ms;
  auto job = small_job(spec);
  job.set("events", "50000");
  BOOST_CHECK_NO_THROW(run_on_cluster(spec, job, nodes.cluster));
  spdlog::default_logger()->sinks().pop_back();
  BOOST_TEST(coordinator_log.str().find("node 'n1' refused 3 frames above its size limit") !=
                 std::string::npos,
             coordinator_log.str());
  data.send(big.data(), limit);
  s = await_status(nodes, 0, [&](const node_status& s) { return s.bad_frames > before.bad_frames + 1; });
  BOOST_TEST(s.bad_frames == before.bad_frames + 2);  // not a data frame, but not too big either
  BOOST_TEST(s.oversized_frames == before.oversized_frames + 3);
}

BOOST_AUTO_TEST_CASE(a_frame_above_the_limit_at_the_coordinator_is_counted_and_logged) {
  // a fake node: a CURVE server that admits the coordinator's key and answers its hello with
  // 4 MiB, four times the coordinator's limit
  zmq::context_t ctx{1};
  cluster_config cluster;
  cluster.coordinator = key_pair::generate();
  const auto node_key = key_pair::generate();
  net::zap_handler zap{ctx, {cluster.coordinator.public_key}, "fake node"};
  zmq::socket_t fake{ctx, zmq::socket_type::router};
  net::make_server(fake, node_key, false, 64 << 20);
  fake.bind("tcp://127.0.0.1:*");
  cluster.nodes.push_back({"fake", fake.get(zmq::sockopt::last_endpoint), node_key.public_key});
  cluster.max_message_bytes = 1 << 20;
  cluster.connect_timeout = 2000ms;
  job_registry registry;
  examples::register_jobs(registry);
  const auto& spec = registry.find("example-window-count");

  std::ostringstream coordinator_log;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(coordinator_log);
  spdlog::default_logger()->sinks().push_back(sink);
  auto run = std::async(std::launch::async,
                        [&] { return run_on_cluster(spec, small_job(spec), cluster); });
  fake.set(zmq::sockopt::rcvtimeo, 10000);
  zmq::message_t peer, frame;
  BOOST_REQUIRE(fake.recv(peer).has_value());
  BOOST_REQUIRE(fake.recv(frame).has_value());  // the hello
  const std::vector<std::uint8_t> big(4 << 20, 0x55);
  fake.send(peer, zmq::send_flags::sndmore);
  fake.send(zmq::const_buffer{big.data(), big.size()}, zmq::send_flags::none);
  // without an answer to its hello the coordinator gives up; its links (and their watches) are
  // closed when run_on_cluster returns, so the log is complete then
  BOOST_CHECK_THROW(run.get(), job_error);
  spdlog::default_logger()->sinks().pop_back();
  const auto log = coordinator_log.str();
  const auto port = cluster.nodes[0].endpoint.substr(cluster.nodes[0].endpoint.rfind(':'));
  BOOST_TEST(
      log.find("coordinator (link to node 'fake'): ZeroMQ dropped the connection from "
               "127.0.0.1" +
               port + ": it sent a frame above the limit of 1048576 bytes") != std::string::npos,
      log);
  BOOST_TEST(log.find("(1 so far)") != std::string::npos, log);
  BOOST_TEST(log.find("(2 so far)") == std::string::npos, log);
}
