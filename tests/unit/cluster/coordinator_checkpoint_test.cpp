// Checkpoints and recovery as the coordinator drives them, against scripted nodes (ROUTER sockets
// in the test, plain text): it starts checkpoints, stores the chunked pieces the nodes send and
// commits on every node once all arrived; when a node falls silent it stops the others, deploys
// again on the nodes that answer, with the pieces of the latest completed checkpoint shipped
// before the Deploy that restores it, and counts the recovery.
#define BOOST_TEST_MODULE coordinator checkpoints
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <filesystem>
#include <future>
#include <map>

#include <unistd.h>

#include "../../support/wait_until.hpp"
#include "net/frames.hpp"
#include "tidemark/examples/example_jobs.hpp"
#include "tidemark/persistence/faults.hpp"
#include "tidemark/runtime/cluster.hpp"

using namespace tidemark;
using namespace std::chrono_literals;

namespace {

using piece_key = std::pair<std::uint32_t, std::uint32_t>;

/// One node of the cluster, played by the test on its own thread: answers what its script says
/// and, while `beating`, sends a heartbeat every 50 ms.
struct scripted_node {
  std::string id;
  zmq::context_t ctx{1};
  zmq::socket_t s{ctx, zmq::socket_type::router};
  std::string coordinator;
  std::string endpoint;
  bool beating = false;

  explicit scripted_node(std::string name) : id(std::move(name)) {
    s.set(zmq::sockopt::linger, 0);
    s.set(zmq::sockopt::rcvtimeo, 50);
    s.bind("tcp://127.0.0.1:*");
    endpoint = s.get(zmq::sockopt::last_endpoint);
  }

  void send(zmq::message_t m) {
    s.send(zmq::buffer(coordinator), zmq::send_flags::sndmore);
    s.send(m, zmq::send_flags::none);
  }

  /// The next frame whose body is `want` (others are skipped; `seen` gets each one); throws when
  /// none comes within 10 s.
  zmq::message_t expect(wire::Body want, const std::function<void(const wire::ControlFrame&)>& seen = {}) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (beating) {
        flatbuffers::FlatBufferBuilder b;
        send(net::control_message(b, wire::CreateHeartbeat(b, b.CreateString(id))));
      }
      zmq::message_t from, m;
      if (!s.recv(from)) continue;
      (void)s.recv(m);
      m = net::aligned(std::move(m));  // plain-text frames arrive at any address
      coordinator = from.to_string();
      if (net::verify_control(m.data(), m.size(), 64 << 20))
        throw std::runtime_error(id + ": the coordinator sent a bad frame");
      const auto& f = net::read_control(m);
      if (f.body_type() == want) return m;
      if (seen) seen(f);
    }
    throw std::runtime_error(id + ": no " + wire::EnumNameBody(want) + " within 10 s");
  }

  void reply_hello() {
    expect(wire::Body::Hello);
    flatbuffers::FlatBufferBuilder b;
    send(net::control_message(b, wire::CreateHelloReply(b, true, 0, b.CreateString(id))));
  }

  /// Answers a Deploy, naming `unreplayable` sources; returns it (a copy of the frame).
  zmq::message_t deployed(const std::function<void(const wire::ControlFrame&)>& seen = {},
                          const std::vector<std::string>& unreplayable = {}) {
    auto m = expect(wire::Body::Deploy, seen);
    flatbuffers::FlatBufferBuilder b;
    send(net::control_message(b, wire::CreateDeployed(b, true, 0, b.CreateVectorOfStrings(unreplayable))));
    return m;
  }

  /// The stage instances a Deploy places on this node.
  static std::vector<piece_key> mine(const wire::Deploy& d, const physical_plan& plan) {
    std::vector<piece_key> out;
    std::uint32_t at = 0;
    for (std::uint32_t s = 0; s < plan.stages.size(); ++s)
      for (std::uint32_t i = 0; i < plan.stages[s].parallelism; ++i, ++at)
        if (d.placement()->Get(at) == d.self_index()) out.push_back({s, i});
    return out;
  }
};

/// What the test writes as the state of (stage, instance): several chunks of recognizable bytes.
std::string state_of(piece_key k) {
  std::string s;
  for (int i = 0; i < 700; ++i) s += "stage " + std::to_string(k.first) + " instance " + std::to_string(k.second) + ";";
  return s;
}

struct fixture {
  job_registry registry;
  const job_spec* spec = nullptr;
  job_options options;
  physical_plan plan;
  std::filesystem::path dir;

  fixture() {
    examples::register_jobs(registry);
    spec = &registry.find("example-window-count");
    options = spec->make_options();
    options.set("parallelism", "2");
    auto j = spec->build(options);
    plan = compile(j.graph());
    dir = std::filesystem::temp_directory_path() /
          ("tidemark-coordinator-checkpoints-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
  }
  ~fixture() { std::filesystem::remove_all(dir); }

  run_options checkpointed() const {
    run_options ro;
    ro.checkpoints.dir = (dir / "checkpoints").string();
    ro.checkpoints.interval = 100ms;
    return ro;
  }
};

/// Sends this node's pieces for the next checkpoint (8 KiB chunks) and returns its id.
std::uint64_t answer_checkpoint(scripted_node& n, const std::vector<piece_key>& mine) {
  auto start = n.expect(wire::Body::CheckpointStart);
  const auto id = net::read_control(start).body_as_CheckpointStart()->id();
  for (auto k : mine)
    for (auto& f : net::piece_frames(id, k.first, k.second, state_of(k), 1.0, 8192)) n.send(std::move(f));
  return id;
}

}  // namespace

BOOST_FIXTURE_TEST_CASE(pieces_are_stored_at_the_coordinator_and_committed_on_every_node, fixture) {
  scripted_node n1{"n1"}, n2{"n2"};
  cluster_config cluster;
  cluster.insecure = true;
  cluster.checkpoint.copies = 0;  // the scripted nodes keep no copies
  cluster.nodes = {{"n1", n1.endpoint, ""}, {"n2", n2.endpoint, ""}};
  cluster.heartbeat_timeout = 10s;
  auto ro = checkpointed();
  ro.live = std::make_shared<live_view>();
  auto running = std::async(std::launch::async, [&] { return run_on_cluster(*spec, options, cluster, ro); });
  // what a node saw; checked on the test's thread (Boost.Test's checks are not thread-safe)
  struct seen_by_node {
    std::uint64_t restore, checkpoint, committed;
  };
  auto script = [&](scripted_node& n, bool garbage) {
    n.reply_hello();
    auto deploy = garbage ? n.deployed({}, {"feed"}) : n.deployed();
    const auto& d = *net::read_control(deploy).body_as_Deploy();
    const auto restore = d.restore_checkpoint();
    auto mine = scripted_node::mine(d, plan);
    n.expect(wire::Body::Start);
    n.beating = true;
    if (garbage)  // a chunk that does not start its piece: counted, the checkpoint goes on
      n.send(std::move(net::piece_frames(1, 0, 0, "xyz", 0, 1)[1]));
    auto id = answer_checkpoint(n, mine);
    auto commit = n.expect(wire::Body::Commit);
    const auto committed = net::read_control(commit).body_as_Commit()->id();
    n.send(net::done_frame(n.id, {}, 0));
    n.expect(wire::Body::Stop);
    return seen_by_node{restore, id, committed};
  };
  auto a = std::async(std::launch::async, [&] { return script(n1, true); });
  auto b = std::async(std::launch::async, [&] { return script(n2, false); });
  const auto seen_a = a.get();
  const auto seen_b = b.get();
  for (const auto& node : {seen_a, seen_b}) {
    BOOST_TEST(node.restore == 0u);
    BOOST_TEST(node.committed == node.checkpoint);
  }
  const auto id = seen_a.checkpoint;
  BOOST_TEST(seen_b.checkpoint == id);
  auto result = running.get();
  BOOST_REQUIRE(!result.checkpoints.empty());
  BOOST_TEST(result.checkpoints.front().id == id);
  std::uint32_t instances = 0;
  for (const auto& st : plan.stages) instances += st.parallelism;
  BOOST_TEST(result.checkpoints.front().pieces == instances);
  BOOST_TEST(result.recoveries == 0u);
  // the source n1 said it cannot replay is named once in the result
  BOOST_REQUIRE(result.warnings.size() == 1u);
  BOOST_TEST(result.warnings.front().find("source 'feed' cannot replay") != std::string::npos);
  const auto seen = ro.live->latest();
  BOOST_REQUIRE(seen);
  BOOST_REQUIRE(!seen->nodes.empty());
  BOOST_TEST(seen->nodes.back().node == "coordinator");
  BOOST_TEST(seen->nodes.back().bad_frames == 1u);  // the stray chunk
}

// Every piece and record is a synced write; on a busy disk one takes hundreds of ms. Written on
// the control loop's thread they held back the coordinator's heartbeats, and the nodes fenced
// themselves (seen in CI beside a build). The writer thread keeps the heartbeats going.
BOOST_FIXTURE_TEST_CASE(a_slow_checkpoint_disk_does_not_hold_up_the_heartbeats, fixture) {
  scripted_node n1{"n1"};
  cluster_config cluster;
  cluster.insecure = true;
  cluster.checkpoint.copies = 0;  // the scripted nodes keep no copies
  cluster.nodes = {{"n1", n1.endpoint, ""}};
  cluster.heartbeat_timeout = 1000ms;  // a node fences itself after 750 ms without a word
  const auto fence = cluster.heartbeat_timeout * 3 / 4;
  auto running = std::async(std::launch::async, [&] {
    return run_on_cluster(*spec, options, cluster, checkpointed());
  });
  n1.reply_hello();
  auto deploy = n1.deployed();
  const auto mine = scripted_node::mine(*net::read_control(deploy).body_as_Deploy(), plan);
  n1.expect(wire::Body::Start);
  n1.beating = true;
  // from now on every write to the checkpoint database waits 300 ms first
  constexpr auto delay = 300ms;
  persistence::storage_faults slow;
  slow.write_delay = delay;
  slow.dir = (dir / "checkpoints").string();
  persistence::set_storage_faults(slow);
  using clock = std::chrono::steady_clock;
  const auto sent = clock::now();
  answer_checkpoint(n1, mine);
  std::vector<clock::time_point> beats{sent};
  n1.expect(wire::Body::Commit, [&](const wire::ControlFrame& f) {
    if (f.body_type() == wire::Body::Heartbeat) beats.push_back(clock::now());
  });
  const auto committed = clock::now();
  persistence::set_storage_faults({});
  beats.push_back(committed);
  n1.send(net::done_frame("n1", {}, 0));
  n1.expect(wire::Body::Stop);
  running.get();
  // the writes were slow: every piece and the record waited
  BOOST_TEST((committed - sent >= delay * static_cast<int>(mine.size() + 1)));
  clock::duration longest{};
  for (std::size_t i = 1; i < beats.size(); ++i) longest = std::max(longest, beats[i] - beats[i - 1]);
  BOOST_TEST_MESSAGE("longest time without a heartbeat: "
                     << std::chrono::duration_cast<std::chrono::milliseconds>(longest).count()
                     << " ms over " << beats.size() - 2 << " heartbeats");
  BOOST_TEST((longest < fence));
}

BOOST_FIXTURE_TEST_CASE(a_silent_node_is_replaced_from_the_latest_checkpoint, fixture) {
  scripted_node n1{"n1"}, n2{"n2"};
  cluster_config cluster;
  cluster.insecure = true;
  cluster.checkpoint.copies = 0;  // the scripted nodes keep no copies
  cluster.nodes = {{"n1", n1.endpoint, ""}, {"n2", n2.endpoint, ""}};
  cluster.heartbeat_timeout = 500ms;
  cluster.connect_timeout = 1000ms;
  cluster.pins = {{"counts", "n2"}};  // its node goes: the pinned stage moves too
  auto running = std::async(std::launch::async, [&] {
    return run_on_cluster(*spec, options, cluster, checkpointed());
  });
  std::promise<std::uint64_t> committed;
  auto second = std::async(std::launch::async, [&] {
    n2.reply_hello();
    auto deploy = n2.deployed();
    auto mine = scripted_node::mine(*net::read_control(deploy).body_as_Deploy(), plan);
    n2.expect(wire::Body::Start);
    n2.beating = true;
    answer_checkpoint(n2, mine);
    committed.set_value(net::read_control(n2.expect(wire::Body::Commit)).body_as_Commit()->id());
    n2.beating = false;  // and it answers nothing any more
  });
  n1.reply_hello();
  auto first = n1.deployed();
  auto mine = scripted_node::mine(*net::read_control(first).body_as_Deploy(), plan);
  n1.expect(wire::Body::Start);
  n1.beating = true;
  const auto id = answer_checkpoint(n1, mine);
  n1.expect(wire::Body::Commit);
  second.get();
  BOOST_TEST(committed.get_future().get() == id);

  // n2 falls silent: n1 is stopped, greeted again and given every piece of checkpoint `id`
  n1.expect(wire::Body::Stop);
  n1.reply_hello();
  std::map<piece_key, std::string> shipped;
  net::piece_assembler assembler;
  auto redeploy = n1.deployed([&](const wire::ControlFrame& f) {
    if (f.body_type() != wire::Body::StatePiece) return;
    if (auto piece = assembler.add(*f.body_as_StatePiece())) {
      BOOST_TEST(piece->checkpoint == id);
      shipped[{piece->stage, piece->instance}] = std::move(piece->bytes);
    }
  });
  const auto& d = *net::read_control(redeploy).body_as_Deploy();
  BOOST_TEST(d.restore_checkpoint() == id);
  BOOST_REQUIRE_EQUAL(d.nodes()->size(), 1u);
  BOOST_TEST(d.nodes()->Get(0)->id()->str() == "n1");
  auto all = scripted_node::mine(d, plan);
  std::uint32_t instances = 0;
  for (const auto& st : plan.stages) instances += st.parallelism;
  BOOST_REQUIRE_EQUAL(all.size(), instances);  // n2's instances moved here, the pinned one too
  BOOST_REQUIRE_EQUAL(shipped.size(), instances);
  for (auto k : all) BOOST_TEST((shipped[k] == state_of(k)), "stage " << k.first << " instance " << k.second);
  n1.expect(wire::Body::Start);
  n1.send(net::done_frame("n1", {}, 0));
  auto result = running.get();
  BOOST_TEST(result.recoveries == 1u);
  BOOST_TEST(result.checkpoints.front().id == id);
}

BOOST_FIXTURE_TEST_CASE(without_checkpoints_a_silent_node_fails_the_job_as_before, fixture) {
  scripted_node n1{"n1"};
  cluster_config cluster;
  cluster.insecure = true;
  cluster.checkpoint.copies = 0;  // the scripted nodes keep no copies
  cluster.nodes = {{"n1", n1.endpoint, ""}};
  cluster.heartbeat_timeout = 300ms;
  auto running = std::async(std::launch::async, [&] { return run_on_cluster(*spec, options, cluster); });
  n1.reply_hello();
  n1.deployed();
  n1.expect(wire::Body::Start);
  BOOST_CHECK_EXCEPTION(running.get(), job_error, [](const job_error& e) {
    return std::string{e.what()}.find("sent no heartbeat") != std::string::npos;
  });
}
