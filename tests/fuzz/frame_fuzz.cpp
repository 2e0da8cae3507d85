// Fuzz target over frame decoding: any bytes, taken as a data frame and as a control frame, go
// through the node's checks (size limit, FlatBuffers Verifier, version) and then every read the
// node does: the batch decoded with the example job's codecs, every field of every control
// message, metrics. Nothing may crash, hang or read out of bounds (build with clang's
// -fsanitize=fuzzer,address; the seed corpus also replays as a ctest test).
#include <cstdint>

#include "net/frames.hpp"
#include "tidemark/core/codec.hpp"

namespace {

struct reading {
  std::int64_t ts = 0;
  std::uint32_t sensor = 0;
  TIDEMARK_FIELDS(ts, sensor)
};

void decode_data(const std::uint8_t* data, std::size_t size) {
  if (tidemark::net::verify_data(data, size, 1 << 20)) return;
  const auto& f = *tidemark::wire::GetDataFrame(data);
  if (!f.payload()) return;
  for (const auto* codec : {tidemark::batch_codec_for<reading>(),
                            tidemark::batch_codec_for<tidemark::window_result<std::uint32_t, std::uint64_t>>(),
                            tidemark::batch_codec_for<std::string>()}) {
    try {
      auto b = codec->decode_values(f.payload()->data(), f.payload()->size());
      if (f.times()) b->times.assign(f.times()->begin(), f.times()->end());
      if (f.hashes()) b->hashes.assign(f.hashes()->begin(), f.hashes()->end());
    } catch (const tidemark::wire_error&) {
    }
  }
}

std::size_t touch(const flatbuffers::String* s) { return s ? s->size() : 0; }

void decode_control(const std::uint8_t* data, std::size_t size) {
  if (tidemark::net::verify_control(data, size, 1 << 20)) return;
  const auto& f = *tidemark::wire::GetControlFrame(data);
  if (tidemark::net::check_version(f)) return;
  std::size_t n = 0;
  using tidemark::wire::Body;
  switch (f.body_type()) {
    case Body::Hello: n += touch(f.body_as_Hello()->node()); break;
    case Body::HelloReply: n += touch(f.body_as_HelloReply()->reason()); break;
    case Body::Deploy: {
      const auto* d = f.body_as_Deploy();
      n += touch(d->job());
      if (d->option_names())
        for (const auto* s : *d->option_names()) n += touch(s);
      if (d->option_values())
        for (const auto* s : *d->option_values()) n += touch(s);
      if (d->nodes())
        for (const auto* a : *d->nodes()) n += touch(a->id()) + touch(a->data_endpoint()) + touch(a->public_key());
      if (d->placement())
        for (auto p : *d->placement()) n += p;
      break;
    }
    case Body::Deployed: n += touch(f.body_as_Deployed()->error()); break;
    case Body::Done: n += tidemark::net::read_metrics(*f.body_as_Done()).size(); break;
    case Body::LiveMetrics: n += tidemark::net::read_metrics(*f.body_as_LiveMetrics()).size(); break;
    case Body::Heartbeat:
      if (const auto* c = f.body_as_Heartbeat()->counters()) n += tidemark::net::read_status(*c).frames_in;
      break;
    case Body::Failure: n += touch(f.body_as_Failure()->what()); break;
    case Body::StatusReply: n += touch(f.body_as_StatusReply()->node()); break;
    case Body::Faults: n += tidemark::net::read_faults(*f.body_as_Faults()).links.size(); break;
    case Body::FaultsReply: n += touch(f.body_as_FaultsReply()->reason()); break;
    default: break;
  }
  (void)n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  decode_data(data, size);
  decode_control(data, size);
  return 0;
}
