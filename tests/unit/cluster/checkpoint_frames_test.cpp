// The frames of cluster checkpoints: CheckpointStart and Commit carry their id, a state piece is
// cut into StatePiece chunks well below the frame limit and put back together byte for byte
// (interleaved with other pieces, or empty), and a chunk that does not continue its piece is
// refused and makes the partial piece be forgotten.
#define BOOST_TEST_MODULE checkpoint frames
#include <boost/test/unit_test.hpp>

#include <random>

#include "net/frames.hpp"

using namespace tidemark;

namespace {

std::string random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 gen{seed};
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(gen());
  return s;
}

const wire::StatePiece& chunk_of(const zmq::message_t& m) {
  BOOST_REQUIRE(!net::verify_control(m.data(), m.size(), 1 << 20));
  const auto& f = net::read_control(m);
  BOOST_REQUIRE((f.body_type() == wire::Body::StatePiece));
  return *f.body_as_StatePiece();
}

/// A StatePiece frame built by hand, for chunks the sender would never cut.
zmq::message_t chunk(std::uint64_t offset, std::uint64_t total, const std::string& bytes) {
  flatbuffers::FlatBufferBuilder b;
  auto v = b.CreateVector(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  return net::control_message(b, wire::CreateStatePiece(b, 7, 1, 0, offset, total, 0.5, v));
}

}  // namespace

BOOST_AUTO_TEST_CASE(checkpoint_start_and_commit_carry_their_id) {
  auto start = net::checkpoint_start_frame(41);
  auto commit = net::commit_frame(42);
  BOOST_REQUIRE(!net::verify_control(start.data(), start.size(), 1 << 20));
  BOOST_REQUIRE(!net::verify_control(commit.data(), commit.size(), 1 << 20));
  BOOST_TEST(net::read_control(start).body_as_CheckpointStart()->id() == 41u);
  BOOST_TEST(net::read_control(commit).body_as_Commit()->id() == 42u);
}

BOOST_AUTO_TEST_CASE(chunks_stay_well_below_the_frame_limit) {
  BOOST_TEST(net::piece_chunk_bytes(64 << 20) == std::size_t{1} << 20);
  BOOST_TEST(net::piece_chunk_bytes(1 << 20) == std::size_t{1} << 18);
  BOOST_TEST(net::piece_chunk_bytes(0) == 1u);
  const std::int64_t limit = 4096;
  const auto state = random_bytes(10'000, 1);
  auto frames = net::piece_frames(3, 2, 1, state, 1.5, net::piece_chunk_bytes(limit));
  BOOST_TEST(frames.size() == 10u);  // 1024-byte chunks
  for (const auto& f : frames)
    BOOST_TEST(!net::verify_control(f.data(), f.size(), limit).has_value());
}

BOOST_AUTO_TEST_CASE(interleaved_pieces_are_put_back_together_byte_for_byte) {
  const auto a = random_bytes(5'000, 2);
  const auto b = random_bytes(3'001, 3);
  auto fa = net::piece_frames(9, 0, 0, a, 2.5, 1000);
  auto fb = net::piece_frames(9, 1, 3, b, 0.25, 1000);
  BOOST_REQUIRE_EQUAL(fa.size(), 5u);
  BOOST_REQUIRE_EQUAL(fb.size(), 4u);
  net::piece_assembler assembler;
  std::vector<net::state_piece> whole;
  for (std::size_t i = 0; i < 5; ++i) {
    for (auto* frames : {&fa, &fb}) {
      if (i >= frames->size()) continue;
      auto piece = assembler.add(chunk_of((*frames)[i]));
      const bool last = i + 1 == frames->size();
      BOOST_TEST(piece.has_value() == last, "chunk " << i);
      if (piece) whole.push_back(std::move(*piece));
    }
  }
  BOOST_REQUIRE_EQUAL(whole.size(), 2u);
  BOOST_TEST(whole[1].checkpoint == 9u);
  BOOST_TEST(whole[1].stage == 0u);
  BOOST_TEST(whole[1].instance == 0u);
  BOOST_TEST(whole[1].alignment_ms == 2.5);
  BOOST_TEST((whole[1].bytes == a));
  BOOST_TEST(whole[0].stage == 1u);
  BOOST_TEST(whole[0].instance == 3u);
  BOOST_TEST((whole[0].bytes == b));
}

BOOST_AUTO_TEST_CASE(an_empty_piece_is_one_frame) {
  auto frames = net::piece_frames(4, 1, 2, "", 0, 1000);
  BOOST_REQUIRE_EQUAL(frames.size(), 1u);
  net::piece_assembler assembler;
  auto piece = assembler.add(chunk_of(frames[0]));
  BOOST_REQUIRE(piece.has_value());
  BOOST_TEST(piece->bytes.empty());
  BOOST_TEST(piece->checkpoint == 4u);
}

BOOST_AUTO_TEST_CASE(a_chunk_that_does_not_continue_its_piece_is_refused) {
  const std::string ten = "0123456789";
  net::piece_assembler assembler;
  // a gap: bytes 10..20 of a piece whose first 10 never came
  BOOST_CHECK_THROW(assembler.add(chunk_of(chunk(10, 30, ten))), net::bad_chunk);
  // the total changes halfway, and the partial piece is forgotten with the bad chunk
  BOOST_TEST(!assembler.add(chunk_of(chunk(0, 30, ten))).has_value());
  BOOST_CHECK_THROW(assembler.add(chunk_of(chunk(10, 40, ten))), net::bad_chunk);
  BOOST_CHECK_THROW(assembler.add(chunk_of(chunk(20, 30, ten))), net::bad_chunk);
  // past the end, and an empty chunk in the middle of a piece (it would never end)
  BOOST_CHECK_THROW(assembler.add(chunk_of(chunk(0, 5, ten))), net::bad_chunk);
  BOOST_CHECK_THROW(assembler.add(chunk_of(chunk(0, 5, ""))), net::bad_chunk);
  try {
    assembler.add(chunk_of(chunk(10, 30, ten)));
    BOOST_FAIL("a gap was accepted");
  } catch (const net::bad_chunk& e) {
    BOOST_TEST(std::string{e.what()}.find("checkpoint 7 stage 1 instance 0") != std::string::npos);
  }
  // a piece that starts over at byte 0 is accepted again
  BOOST_TEST(!assembler.add(chunk_of(chunk(0, 20, ten))).has_value());
  auto piece = assembler.add(chunk_of(chunk(10, 20, ten)));
  BOOST_REQUIRE(piece.has_value());
  BOOST_TEST((piece->bytes == ten + ten));
}
