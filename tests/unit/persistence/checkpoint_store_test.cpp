// The checkpoint store: pieces come back byte for byte, retention keeps the newest completed
// checkpoints, a damaged or missing piece makes a restore fall back to the previous checkpoint
// and says which piece, and a checkpoint whose complete() returned survives kill -9.
#define BOOST_TEST_MODULE checkpoint_store
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "../../support/temp_dir.hpp"
#include "tidemark/persistence/checkpoint_store.hpp"
#include "tidemark/persistence/table_store.hpp"

using namespace tidemark::persistence;
using tidemark::test::temp_dir;

namespace {

using piece_map = std::map<std::pair<std::uint32_t, std::uint32_t>, std::string>;

std::string random_bytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen{seed};
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(gen() & 0xff);
  return s;
}

// Pieces of checkpoint `id` for stages 0..1 with 2 instances each, distinct per checkpoint.
piece_map pieces_of(std::uint64_t id) {
  piece_map m;
  for (std::uint32_t stage = 0; stage < 2; ++stage)
    for (std::uint32_t instance = 0; instance < 2; ++instance)
      m[{stage, instance}] = "state of checkpoint " + std::to_string(id) + " stage " +
                             std::to_string(stage) + " instance " + std::to_string(instance);
  return m;
}

checkpoint_record record_of(std::uint64_t id, std::uint32_t pieces, std::string plan = "plan-a") {
  checkpoint_record r;
  r.id = id;
  r.job = "job";
  r.plan = std::move(plan);
  r.pieces = pieces;
  r.completed_ms = 1'700'000'000'000 + static_cast<std::int64_t>(id);
  r.duration_ms = 10.5 + static_cast<double>(id);
  r.alignment_ms = 0.25 * static_cast<double>(id);
  return r;
}

void write_checkpoint(checkpoint_store& store, std::uint64_t id, const piece_map& pieces,
                      std::string plan = "plan-a") {
  for (const auto& [at, bytes] : pieces) store.put_piece(id, at.first, at.second, bytes);
  store.complete(record_of(id, static_cast<std::uint32_t>(pieces.size()), std::move(plan)));
}

std::uint64_t total_size(const piece_map& pieces) {
  std::uint64_t n = 0;
  for (const auto& [at, bytes] : pieces) n += bytes.size();
  return n;
}

std::vector<std::uint64_t> ids(const std::vector<checkpoint_record>& records) {
  std::vector<std::uint64_t> out;
  for (const auto& r : records) out.push_back(r.id);
  return out;
}

// The key of a piece as the header of checkpoint_store.hpp lays it out (big-endian).
std::string piece_key(std::uint64_t id, std::uint32_t stage, std::uint32_t instance) {
  std::string k;
  for (int s = 56; s >= 0; s -= 8) k += static_cast<char>((id >> s) & 0xff);
  for (int s = 24; s >= 0; s -= 8) k += static_cast<char>((stage >> s) & 0xff);
  for (int s = 24; s >= 0; s -= 8) k += static_cast<char>((instance >> s) & 0xff);
  return k;
}

const std::string logged = "log=(enabled=true)";

}  // namespace

BOOST_AUTO_TEST_CASE(pieces_come_back_byte_for_byte_including_a_multi_megabyte_piece) {
  temp_dir dir;
  piece_map pieces = pieces_of(1);
  // spans several chunks and several chunk transactions, and ends in a partial chunk
  pieces[{3, 7}] = random_bytes(checkpoint_store::chunk_size * 11 + 12345, 42);
  pieces[{4, 0}] = "";  // an instance with empty state still writes a piece
  {
    checkpoint_store store{dir.path().string()};
    write_checkpoint(store, 1, pieces);
  }
  checkpoint_store store{dir.path().string()};  // reopened: read back from disk
  auto loaded = store.latest("job", "plan-a");
  BOOST_TEST(loaded.rejected.empty());
  BOOST_TEST(loaded.record.id == 1u);
  BOOST_TEST(loaded.record.pieces == pieces.size());
  BOOST_TEST(loaded.record.bytes == total_size(pieces));
  BOOST_TEST(loaded.record.duration_ms == 11.5);
  BOOST_TEST(loaded.record.alignment_ms == 0.25);
  BOOST_TEST(loaded.record.completed_ms == 1'700'000'000'001);
  BOOST_REQUIRE(loaded.pieces.size() == pieces.size());
  for (const auto& [at, bytes] : pieces)
    BOOST_TEST((loaded.pieces.at(at) == bytes), "stage " << at.first << " instance " << at.second);
}

BOOST_AUTO_TEST_CASE(a_piece_put_again_replaces_the_old_one) {
  temp_dir dir;
  checkpoint_store store{dir.path().string()};
  store.put_piece(1, 0, 0, random_bytes(checkpoint_store::chunk_size * 3, 1));
  store.put_piece(1, 0, 0, "short");
  store.complete(record_of(1, 1));
  auto loaded = store.latest("job", "plan-a");
  BOOST_TEST(loaded.pieces.at({0, 0}) == "short");
  BOOST_TEST(loaded.record.bytes == 5u);
}

BOOST_AUTO_TEST_CASE(list_is_oldest_first_and_retain_keeps_the_newest) {
  temp_dir dir;
  checkpoint_store store{dir.path().string(), 3};
  BOOST_TEST(store.list().empty());
  for (std::uint64_t id = 1; id <= 5; ++id) {
    write_checkpoint(store, id, pieces_of(id));
    std::vector<std::uint64_t> expected;
    for (std::uint64_t k = id > 3 ? id - 2 : 1; k <= id; ++k) expected.push_back(k);
    BOOST_TEST(ids(store.list()) == expected, "after checkpoint " << id);
  }
  auto records = store.list();
  BOOST_TEST(records.front().job == "job");
  BOOST_TEST(records.front().plan == "plan-a");
  BOOST_TEST(records.front().bytes == total_size(pieces_of(3)));
  BOOST_TEST(store.latest("job", "plan-a").record.id == 5u);
  BOOST_CHECK_THROW(checkpoint_store(dir.path().string() + "/other", 0), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(dropped_and_abandoned_checkpoints_leave_no_pieces) {
  temp_dir dir;
  {
    checkpoint_store store{dir.path().string(), 1};
    write_checkpoint(store, 1, pieces_of(1));
    store.put_piece(2, 0, 0, "never completed");  // e.g. an instance died mid-checkpoint
    write_checkpoint(store, 3, pieces_of(3));
    store.put_piece(4, 0, 0, "in progress");  // newer than the newest completed: kept
  }
  auto conn = wt_connection::open(dir.path().string(), logged);
  table_store headers{conn, "checkpoint.pieces", durability::power_loss};
  std::vector<std::string> expected = {piece_key(3, 0, 0), piece_key(3, 0, 1), piece_key(3, 1, 0),
                                       piece_key(3, 1, 1), piece_key(4, 0, 0)};
  std::vector<std::string> keys;
  for (const auto& r : headers.prefix("")) keys.push_back(r.key);
  BOOST_TEST(keys == expected);
  table_store chunks{conn, "checkpoint.chunks", durability::power_loss};
  BOOST_TEST(chunks.prefix(piece_key(1, 0, 0)).empty());
  BOOST_TEST(chunks.prefix(piece_key(2, 0, 0)).empty());
  BOOST_TEST(chunks.prefix(piece_key(4, 0, 0)).size() == 1u);
}

BOOST_AUTO_TEST_CASE(incomplete_checkpoints_are_never_returned) {
  temp_dir dir;
  checkpoint_store store{dir.path().string()};
  BOOST_TEST(store.latest("job", "plan-a").record.id == 0u);
  write_checkpoint(store, 1, pieces_of(1));
  for (const auto& [at, bytes] : pieces_of(2)) store.put_piece(2, at.first, at.second, bytes);
  auto loaded = store.latest("job", "plan-a");
  BOOST_TEST(loaded.record.id == 1u);
  BOOST_TEST((loaded.pieces == pieces_of(1)));
  BOOST_TEST(ids(store.list()) == std::vector<std::uint64_t>{1});
  // a record announcing more pieces than were put is refused and changes nothing
  BOOST_CHECK_THROW(store.complete(record_of(2, 5)), std::invalid_argument);
  BOOST_TEST(store.latest("job", "plan-a").record.id == 1u);
}

BOOST_AUTO_TEST_CASE(other_jobs_are_ignored_and_other_plans_are_reported) {
  temp_dir dir;
  checkpoint_store store{dir.path().string()};
  write_checkpoint(store, 1, pieces_of(1), "plan-a");
  write_checkpoint(store, 2, pieces_of(2), "plan-b");
  auto loaded = store.latest("job", "plan-a");
  BOOST_TEST(loaded.record.id == 1u);
  BOOST_REQUIRE(loaded.rejected.size() == 1u);
  BOOST_TEST(loaded.rejected[0].find("checkpoint 2: written for another plan") == 0u,
             loaded.rejected[0]);
  auto other = store.latest("another job", "plan-a");
  BOOST_TEST(other.record.id == 0u);
  BOOST_TEST(other.rejected.empty());
}

BOOST_AUTO_TEST_CASE(a_corrupt_piece_falls_back_to_the_previous_checkpoint_and_names_the_piece) {
  temp_dir dir;
  const std::string big = random_bytes(checkpoint_store::chunk_size * 2 + 7, 9);
  {
    checkpoint_store store{dir.path().string()};
    write_checkpoint(store, 1, pieces_of(1));
    auto second = pieces_of(2);
    second[{2, 1}] = big;
    write_checkpoint(store, 2, second);
  }
  {
    // flip one byte in the middle of the second chunk of checkpoint 2's piece (2, 1)
    auto conn = wt_connection::open(dir.path().string(), logged);
    table_store chunks{conn, "checkpoint.chunks", durability::power_loss};
    auto rows = chunks.prefix(piece_key(2, 2, 1));
    BOOST_REQUIRE(rows.size() == 3u);
    auto value = rows[1].value;
    value[value.size() / 2] = static_cast<char>(value[value.size() / 2] ^ 0x20);
    chunks.insert(rows[1].key, value);
  }
  checkpoint_store store{dir.path().string()};
  auto loaded = store.latest("job", "plan-a");
  BOOST_TEST(loaded.record.id == 1u);
  BOOST_TEST((loaded.pieces == pieces_of(1)));
  BOOST_REQUIRE(loaded.rejected.size() == 1u);
  BOOST_TEST(loaded.rejected[0] ==
             "checkpoint 2: piece stage 2 instance 1 is corrupt (CRC-32 mismatch)");
}

BOOST_AUTO_TEST_CASE(a_missing_piece_falls_back_to_the_previous_checkpoint_and_names_the_piece) {
  temp_dir dir;
  {
    checkpoint_store store{dir.path().string()};
    write_checkpoint(store, 1, pieces_of(1));
    write_checkpoint(store, 2, pieces_of(2));
    write_checkpoint(store, 3, pieces_of(3));
  }
  {
    auto conn = wt_connection::open(dir.path().string(), logged);
    table_store headers{conn, "checkpoint.pieces", durability::power_loss};
    BOOST_REQUIRE(headers.remove(piece_key(3, 1, 0)));
    table_store chunks{conn, "checkpoint.chunks", durability::power_loss};
    auto rows = chunks.prefix(piece_key(2, 0, 1));
    BOOST_REQUIRE(rows.size() == 1u);
    BOOST_REQUIRE(chunks.remove(rows[0].key));
  }
  checkpoint_store store{dir.path().string()};
  auto loaded = store.latest("job", "plan-a");
  BOOST_TEST(loaded.record.id == 1u);
  BOOST_TEST((loaded.pieces == pieces_of(1)));
  std::vector<std::string> expected = {
      "checkpoint 3: piece stage 1 instance 0 is missing",
      "checkpoint 2: piece stage 0 instance 1 is incomplete (chunk 0 of 1 is missing)"};
  BOOST_TEST(loaded.rejected == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(no_usable_checkpoint_leaves_id_zero_and_every_reason) {
  temp_dir dir;
  {
    checkpoint_store store{dir.path().string()};
    write_checkpoint(store, 1, pieces_of(1));
  }
  {
    auto conn = wt_connection::open(dir.path().string(), logged);
    table_store headers{conn, "checkpoint.pieces", durability::power_loss};
    BOOST_REQUIRE(headers.remove(piece_key(1, 0, 0)));
  }
  checkpoint_store store{dir.path().string()};
  auto loaded = store.latest("job", "plan-a");
  BOOST_TEST(loaded.record.id == 0u);
  BOOST_TEST(loaded.pieces.empty());
  BOOST_TEST(loaded.rejected ==
             std::vector<std::string>{"checkpoint 1: piece stage 0 instance 0 is missing"});
}

BOOST_AUTO_TEST_CASE(next_id_never_repeats_not_even_after_clear) {
  temp_dir dir;
  {
    checkpoint_store store{dir.path().string()};
    store.put_piece(9, 0, 0, "x");
    store.clear();
  }
  checkpoint_store store{dir.path().string()};  // the count survives a reopen
  BOOST_TEST(store.next_id() == 10u);
  store.clear();
  BOOST_TEST(store.next_id() == 10u);
}

BOOST_AUTO_TEST_CASE(next_id_counts_records_and_pieces) {
  temp_dir dir;
  checkpoint_store store{dir.path().string()};
  BOOST_TEST(store.next_id() == 1u);
  write_checkpoint(store, 1, pieces_of(1));
  BOOST_TEST(store.next_id() == 2u);
  store.put_piece(6, 0, 0, "abandoned by a crash");
  BOOST_TEST(store.next_id() == 7u);
  store.clear();
  BOOST_TEST(store.list().empty());
  BOOST_TEST(store.latest("job", "plan-a").record.id == 0u);
  BOOST_TEST(store.next_id() == 7u);
  write_checkpoint(store, 7, pieces_of(7));
  BOOST_TEST(store.next_id() == 8u);
}

BOOST_AUTO_TEST_CASE(a_completed_checkpoint_survives_kill_9_right_after_complete) {
  temp_dir dir;
  const std::string big = random_bytes(checkpoint_store::chunk_size * 4 + 99, 3);
  auto second = pieces_of(2);
  second[{5, 5}] = big;
  pid_t pid = fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {
    try {
      checkpoint_store store{dir.path().string()};
      write_checkpoint(store, 1, pieces_of(1));
      write_checkpoint(store, 2, second);
      store.put_piece(3, 0, 0, "not completed");
      kill(getpid(), SIGKILL);  // as kill -9: no destructor, no WiredTiger close
    } catch (...) {
      _exit(3);
    }
    _exit(5);
  }
  int status = 0;
  BOOST_REQUIRE(waitpid(pid, &status, 0) == pid);
  BOOST_REQUIRE_MESSAGE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
                        "the child did not die by SIGKILL (status " << status << ")");
  checkpoint_store store{dir.path().string()};
  BOOST_TEST(ids(store.list()) == (std::vector<std::uint64_t>{1, 2}));
  auto loaded = store.latest("job", "plan-a");
  BOOST_TEST(loaded.rejected.empty());
  BOOST_TEST(loaded.record.id == 2u);
  BOOST_TEST((loaded.pieces == second));
  BOOST_TEST(store.next_id() ==
             4u);  // the piece of 3 survived the crash too (put_piece is durable)
}
