// Replays a fuzz corpus through LLVMFuzzerTestOneInput without libFuzzer, so the seed corpus runs
// as an ordinary ctest test with any compiler. `--write-seeds DIR` writes the seed corpus: valid
// frames of every kind, from which the fuzzer mutates.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <vector>

#include "net/frames.hpp"
#include "tidemark/core/codec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

void write(const std::filesystem::path& p, const zmq::message_t& m) {
  std::ofstream{p, std::ios::binary}.write(m.data<char>(), static_cast<std::streamsize>(m.size()));
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
