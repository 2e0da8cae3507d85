// Fuzz target over the node's real frame handling (net::node_dispatch, the code the node server
// runs): an input is one or more frames separated by fuzz::separator; each goes to a node that has
// a job deployed, as a control frame from an allow-listed key that is not the coordinator's, as a
// control frame from the coordinator, as a data frame from the peer node that owns the channels
// and as one from a stranger; frames of odd length arrive at an odd address, as ZeroMQ hands over
// plain-text frames. Nothing may crash, hang or read out of bounds (clang's
// -fsanitize=fuzzer,address,undefined), and two properties must hold: a stranger's control frame
// never changes what the node runs, and a stranger's data frame never reaches a stage. The seed
// corpus also replays as a ctest test (replay_main.cpp).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iostream>

#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include "fuzz_node.hpp"
#include "tidemark/examples/example_jobs.hpp"
#include "tidemark/persistence/faults.hpp"

namespace tidemark::fuzz {

namespace {

const job_registry& jobs() {
  static const job_registry registry = [] {
    job_registry r;
    examples::register_jobs(r);
    return r;
  }();
  return registry;
}

node_options fuzz_options() {
  node_options o;
  o.id = "n1";
  o.allow_faults = true;
  o.max_message_bytes = 1 << 20;
  return o;
}

/// Stops the run with a message when a property of the dispatch does not hold.
void require(bool ok, const char* what) {
  if (ok) return;
  std::cerr << "frame_fuzz: " << what << '\n';
  std::abort();
}

}  // namespace

zmq::message_t deploy_frame(std::uint32_t deployment, std::uint64_t restore_checkpoint) {
  const auto& spec = jobs().find("example-window-count");
  auto options = spec.make_options();
  options.set("parallelism", "2");
  options.set("gather", "true");
  run_options run;
  const auto synced = detail::executable_graph(spec.build(options), run);
  const auto plan = compile(synced.graph, {run.fuse});
  // the source and the gathering sink on n2, the window instances on n1 and n2: readings cross
  // into this node, window results out of it
  std::vector<std::uint32_t> placement;
  for (std::size_t s = 0; s < plan.stages.size(); ++s) {
    for (std::uint32_t i = 0; i < plan.stages[s].parallelism; ++i)
      placement.push_back(s == 0 || s + 1 == plan.stages.size() ? 1 : i % 2);
  }
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<wire::NodeAddress>> nodes{
      wire::CreateNodeAddress(b, b.CreateString("n1"), b.CreateString("tcp://127.0.0.1:7101"),
                              b.CreateString("fuzz-self-key")),
      wire::CreateNodeAddress(b, b.CreateString("n2"), b.CreateString("tcp://127.0.0.1:7201"),
                              b.CreateString(peer_key))};
  wire::DeployBuilder d{b};
  auto job = b.CreateString(spec.name);
  auto names = b.CreateVectorOfStrings({"parallelism", "gather"});
  auto values = b.CreateVectorOfStrings({"2", "true"});
  auto node_list = b.CreateVector(nodes);
  auto where = b.CreateVector(placement);
  d.add_job(job);
  d.add_option_names(names);
  d.add_option_values(values);
  d.add_nodes(node_list);
  d.add_self_index(0);
  d.add_placement(where);
  d.add_batch_size(static_cast<std::uint32_t>(run.batch_size));
  d.add_credit(run.credit);
  d.add_fuse(run.fuse);
  d.add_deployment(deployment);
  d.add_restore_checkpoint(restore_checkpoint);
  return net::control_message(b, d.Finish());
}

node::node() : opts_(fuzz_options()), dispatch_(opts_, coordinator_key, jobs(), port_) {
  persistence::set_storage_faults({});  // a Faults frame of an earlier input may have set them
  static const std::string bytes = deploy_frame(deployment_id).to_string();  // builds the job once
  zmq::message_t deploy{bytes.data(), bytes.size()};
  dispatch_.on_control(coordinator_route, coordinator_key.c_str(), deploy);
  require(dispatch_.current() != nullptr, "the fuzz deployment did not deploy");
}

node::~node() { dispatch_.end_deployment(); }

}  // namespace tidemark::fuzz

namespace {

using namespace tidemark;

/// Logs go nowhere, but every log call still formats its message.
struct quiet_logs {
  quiet_logs() {
    spdlog::set_default_logger(
        std::make_shared<spdlog::logger>("fuzz", std::make_shared<spdlog::sinks::null_sink_st>()));
    spdlog::set_level(spdlog::level::trace);
  }
};

/// Buffers of misaligned frames: they outlive the node, which may keep frames.
using frame_storage = std::deque<std::vector<std::uint8_t>>;

/// The bytes as a received frame; at an odd address when `misaligned`, as ZeroMQ hands over
/// plain-text frames.
zmq::message_t message(const std::uint8_t* data, std::size_t size, bool misaligned,
                       frame_storage& storage) {
  if (!misaligned) return zmq::message_t{data, size};
  auto& bytes = storage.emplace_back(size + 1);
  std::copy(data, data + size, bytes.begin() + 1);
  return zmq::message_t{bytes.data() + 1, size, nullptr};
}

void feed(fuzz::node& n, const std::uint8_t* data, std::size_t size, frame_storage& storage) {
  auto& d = n.dispatch();
  auto& port = n.port();
  const bool odd = size % 2 == 1;  // half the frames arrive misaligned
  {
    const auto before = port.job_changes();
    auto m = message(data, size, odd, storage);
    d.on_control("stranger", fuzz::stranger_key.c_str(), m);
    fuzz::require(port.job_changes() == before,
                  "a control frame from another key than the coordinator's changed the job");
  }
  {
    auto m = message(data, size, odd, storage);
    d.on_control(fuzz::coordinator_route, fuzz::coordinator_key.c_str(), m);
  }
  {
    const auto before = port.credits + port.batches + port.signals;
    auto m = message(data, size, odd, storage);
    d.on_data(fuzz::stranger_key.c_str(), m);
    fuzz::require(port.credits + port.batches + port.signals == before,
                  "a data frame from a key that owns no channel reached a stage");
  }
  {
    auto m = message(data, size, odd, storage);
    d.on_data(fuzz::peer_key.c_str(), m);
  }
  const auto now = std::chrono::steady_clock::now();
  d.keep_channels(now);
  d.faults().flush(now, [](std::uint32_t, zmq::message_t&&) {});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static quiet_logs quiet;
  frame_storage storage;
  fuzz::node n;
  const auto* end = data + size;
  const auto* sep = reinterpret_cast<const std::uint8_t*>(fuzz::separator);
  const auto sep_size = std::strlen(fuzz::separator);
  for (const auto* p = data;;) {
    const auto* next = std::search(p, end, sep, sep + sep_size);
    feed(n, p, static_cast<std::size_t>(next - p), storage);
    if (next == end) break;
    p = next + sep_size;
  }
  return 0;
}
