// Replays a fuzz corpus through LLVMFuzzerTestOneInput without libFuzzer, so the seed corpus runs
// as an ordinary ctest test with any compiler. `--write-seeds DIR` writes the seed corpus: valid
// frames of every kind, and sequences of them on the fuzz deployment's channels, from which the
// fuzzer mutates.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <vector>

#include "fuzz_node.hpp"
#include "tidemark/core/codec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

void write(const std::filesystem::path& p, const zmq::message_t& m) {
  std::ofstream{p, std::ios::binary}.write(m.data<char>(), static_cast<std::streamsize>(m.size()));
}

/// Writes frames as one input, separated as the fuzz target splits them.
void write(const std::filesystem::path& p, const std::vector<zmq::message_t>& frames) {
  std::ofstream out{p, std::ios::binary};
  for (std::size_t i = 0; i < frames.size(); ++i) {
    if (i > 0) out << tidemark::fuzz::separator;
    out.write(frames[i].data<char>(), static_cast<std::streamsize>(frames[i].size()));
  }
}

/// The readings example-window-count sends across its key shuffle (the same fields, so the same
/// encoding, as the job's own type).
struct reading {
  std::int64_t ts = 0;
  std::uint32_t sensor = 0;
  TIDEMARK_FIELDS(ts, sensor)
};

/// A data frame of the fuzz deployment: readings (ts, ts % 3) for the given times.
zmq::message_t readings_frame(std::uint32_t channel, std::uint64_t seq,
                              const std::vector<std::int64_t>& times) {
  using namespace tidemark;
  batch<reading> b;
  for (auto t : times) b.values.push_back({t, static_cast<std::uint32_t>(t % 3)});
  std::vector<std::uint8_t> payload;
  batch_codec_for<reading>()->encode_values(b, payload);
  flatbuffers::FlatBufferBuilder fb;
  auto pv = fb.CreateVector(payload);
  auto tv = fb.CreateVector(times);
  wire::DataFrameBuilder f{fb};
  f.add_channel(channel);
  f.add_seq(seq);
  f.add_count(static_cast<std::uint32_t>(times.size()));
  f.add_payload(pv);
  f.add_times(tv);
  f.add_deployment(tidemark::fuzz::deployment_id);
  wire::FinishDataFrameBuffer(fb, f.Finish());
  return net::to_message(fb);
}

template <class T>
zmq::message_t control(flatbuffers::FlatBufferBuilder& b, flatbuffers::Offset<T> body) {
  return tidemark::net::control_message(b, body);
}

/// Seeds on the fuzz deployment's channels: data into this node, credit for its senders, whole
/// sequences (a frame held behind a missing one, a duplicate, a restore, a stop).
void write_deployment_seeds(const std::filesystem::path& dir) {
  using namespace tidemark;
  fuzz::node n;
  const auto& x = *n.dispatch().current();
  std::uint32_t in = UINT32_MAX, out = UINT32_MAX;
  for (std::uint32_t c = 0; c < x.channels.size(); ++c) {
    if (x.receivers[c] && x.channels[c].output().value_type.find("reading") != std::string::npos)
      in = std::min(in, c);
    if (x.senders[c]) out = std::min(out, c);
  }
  if (in == UINT32_MAX || out == UINT32_MAX)
    throw std::runtime_error("the fuzz deployment has no readings channel into n1 or none out");
  const auto id = fuzz::deployment_id;
  write(dir / "channel_readings", readings_frame(in, 0, {1, 2, 3}));
  write(dir / "channel_credit", net::credit_frame(out, 0, 0, true, id));
  std::vector<zmq::message_t> seq;
  seq.push_back(readings_frame(in, 1, {4, 5}));  // held: frame 0 is missing
  seq.push_back(readings_frame(in, 0, {1, 2, 3}));  // frees frame 1
  seq.push_back(readings_frame(in, 0, {1, 2, 3}));  // a duplicate
  seq.push_back(net::signal_frame(in, 2, wire::FrameKind::watermark, 5, 0, id));
  seq.push_back(net::signal_frame(in, 3, wire::FrameKind::barrier, 1, 0, id));
  seq.push_back(net::signal_frame(in, 0, wire::FrameKind::probe, 0, 0, id));
  seq.push_back(net::signal_frame(in, 4, wire::FrameKind::eos, 0, 0, id));
  write(dir / "sequence_channel", seq);
  std::vector<zmq::message_t> job;
  {
    flatbuffers::FlatBufferBuilder b;
    job.push_back(control(b, wire::CreateStart(b)));
  }
  job.push_back(net::checkpoint_start_frame(1));
  job.push_back(net::commit_frame(1));
  {
    flatbuffers::FlatBufferBuilder b;
    job.push_back(control(b, wire::CreateHeartbeat(b, b.CreateString("coordinator"))));
  }
  {
    flatbuffers::FlatBufferBuilder b;
    job.push_back(control(b, wire::CreateStatusRequest(b)));
  }
  {
    flatbuffers::FlatBufferBuilder b;
    job.push_back(control(b, wire::CreateStop(b, b.CreateString("fuzz"))));
  }
  job.push_back(readings_frame(in, 0, {1}));  // after the stop: of the deployment that ended
  write(dir / "sequence_job", job);
  // the state of checkpoint 5 in chunks, then a Deploy restoring it
  std::vector<zmq::message_t> restore;
  for (auto& f : net::piece_frames(5, 1, 0, std::string(300, 's'), 1.5, 128))
    restore.push_back(std::move(f));
  restore.push_back(fuzz::deploy_frame(id + 1, 5));
  write(dir / "sequence_restore", restore);
  // a copy of another node's piece of checkpoint 6 in chunks, its record, and a coordinator that
  // lost its store asking for the copies and fetching them; the job finished: they go
  std::vector<zmq::message_t> copies;
  for (auto& f : net::copy_piece_frames(6, 1, 0, std::string(300, 'c'), 128, 3))
    copies.push_back(std::move(f));
  copies.push_back(net::copy_record_frame(6, "example-window-count", "plan", 1));
  copies.push_back(net::copies_request_frame("example-window-count"));
  copies.push_back(net::fetch_copies_frame(6, "example-window-count", "plan"));
  copies.push_back(net::drop_copies_frame("example-window-count"));
  write(dir / "sequence_copies", copies);
}

void write_seeds(const std::filesystem::path& dir) {
  using namespace tidemark;
  std::filesystem::create_directories(dir);
  write(dir / "watermark", net::signal_frame(1, 7, wire::FrameKind::watermark, 1000, 0));
  write(dir / "credit", net::credit_frame(2, 3, 4, true, 0));
  {
    batch<std::string> b{{"a", "bc", ""}};
    std::vector<std::uint8_t> payload;
    batch_codec_for<std::string>()->encode_values(b, payload);
    flatbuffers::FlatBufferBuilder fb;
    auto pv = fb.CreateVector(payload);
    auto times = fb.CreateVector(std::vector<std::int64_t>{1, 2, 3});
    wire::DataFrameBuilder f{fb};
    f.add_channel(0);
    f.add_count(3);
    f.add_payload(pv);
    f.add_times(times);
    wire::FinishDataFrameBuffer(fb, f.Finish());
    write(dir / "data_strings", net::to_message(fb));
  }
  {
    flatbuffers::FlatBufferBuilder b;
    write(dir / "hello", net::control_message(b, wire::CreateHello(b, b.CreateString("n1"))));
  }
  {
    flatbuffers::FlatBufferBuilder b;
    std::vector<flatbuffers::Offset<wire::NodeAddress>> nodes{wire::CreateNodeAddress(
        b, b.CreateString("n1"), b.CreateString("tcp://127.0.0.1:7100"), b.CreateString("k"))};
    auto body = wire::CreateDeploy(b, b.CreateString("example-window-count"),
                                   b.CreateVectorOfStrings({"events"}),
                                   b.CreateVectorOfStrings({"10"}), b.CreateVector(nodes), 0,
                                   b.CreateVector(std::vector<std::uint32_t>{0, 0}), 64, 2, 5);
    write(dir / "deploy", net::control_message(b, body));
  }
  {
    fault_command cmd;
    cmd.links["*"].drop = 0.1;
    cmd.links["n2"].delay = std::chrono::milliseconds{20};
    cmd.unreachable = {"coordinator"};
    cmd.seed = 7;
    write(dir / "faults", net::faults_frame(cmd));
  }
  instance_metrics im;
  im.operators.push_back({"window", "window", 0, 1, 2, 3, 4, 0, {{"late", 1.0}}});
  write(dir / "done", net::done_frame("n1", {im}, 9));
  write_deployment_seeds(dir);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string{argv[1]} == "--write-seeds") {
    write_seeds(argv[2]);
    return 0;
  }
  if (argc != 2) {
    std::cerr << "usage: frame_fuzz_replay CORPUS_DIR | --write-seeds DIR\n";
    return 2;
  }
  std::size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator{argv[1]}) {
    std::ifstream in{e.path(), std::ios::binary};
    std::vector<std::uint8_t> bytes{std::istreambuf_iterator<char>{in}, {}};
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    ++n;
  }
  if (n == 0) {
    std::cerr << "no inputs in " << argv[1] << '\n';
    return 1;
  }
  std::cout << n << " inputs replayed\n";
}
