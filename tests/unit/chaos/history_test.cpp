// The history sink: exactly once appends a checkpoint's results when it completes, with the
// checkpoint, the watermark of its snapshot and the time each was received, and a restore does
// not append them twice; at least once writes on arrival, so a replay after a restore appears
// twice.
#define BOOST_TEST_MODULE chaos_history
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <thread>

#include "../../support/temp_dir.hpp"
#include "../checkpoint/checkpoint_harness.hpp"
#include "tidemark/chaos/history.hpp"

using namespace tidemark;
using namespace tidemark::chaos;

namespace {

struct null_emitter final : emitter {
  void emit_watermark(event_time) override {}
  void emit_idle(bool) override {}

 protected:
  void emit_on(std::uint32_t, batch_ptr) override {}
};

// results come in through add_result; batches are the typed sink's business
struct direct_sink final : history_sink {
  using history_sink::history_sink;
  void process(std::size_t, batch_ptr, emitter&) override {}
};

instance_info sink_info() {
  instance_info info;
  info.name = "history";
  return info;
}

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::size_t copies(const std::vector<history_entry>& h, const std::string& id) {
  std::size_t n = 0;
  for (const auto& e : h) n += e.id == id;
  return n;
}

}  // namespace

BOOST_AUTO_TEST_CASE(exactly_once_appends_at_completion_and_once_across_restores) {
  test::temp_dir dir{"chaos-history"};
  null_emitter out;
  std::vector<std::uint8_t> bytes;
  {
    direct_sink sink{dir / "h", sink_info(), history_mode::exactly_once};
    const auto before = wall_ms();
    sink.add_result("a", 0, "1");
    const auto received = wall_ms();
    sink.on_watermark(100, out);
    sink.add_result("a", 1, "2");
    bytes = test::snapshot_of(sink, 3);
    // the commit comes at least 20 ms after a/0 was received: its latency shows it
    while (wall_ms() < received + 20) std::this_thread::yield();
    sink.on_watermark(200, out);
    sink.add_result("b", 0, "3");                 // after the snapshot: not part of checkpoint 3
    BOOST_TEST(read_history(dir / "h").empty());  // staged, not committed
    sink.on_checkpoint_complete(3);
    auto h = read_history(dir / "h");
    BOOST_REQUIRE_EQUAL(h.size(), 2u);
    BOOST_TEST(h[0].id == "a");
    BOOST_TEST(h[0].revision == 0u);
    BOOST_TEST(h[1].revision == 1u);
    BOOST_TEST(h[1].value == "2");
    BOOST_TEST(h[0].checkpoint == 3u);
    BOOST_TEST(h[0].watermark == 100);  // the snapshot's, not the later 200
    BOOST_TEST(h[0].writer == "history/0");
    BOOST_TEST(h[0].received_ms >= before);
    BOOST_TEST(h[0].received_ms <= received);
    BOOST_TEST(h[0].commit_ms >= received + 20);
  }
  // a crash, then a restore from checkpoint 3: its rows were committed, so nothing is appended
  // again; the replayed b/0 is appended once its checkpoint completes
  direct_sink restored{dir / "h", sink_info(), history_mode::exactly_once};
  test::restore_from(restored, bytes, 3);
  BOOST_TEST(read_history(dir / "h").size() == 2u);
  restored.add_result("b", 0, "3");
  test::snapshot_of(restored, 4);
  restored.on_checkpoint_complete(4);
  restored.finish(out);
  auto h = read_history(dir / "h");
  BOOST_REQUIRE_EQUAL(h.size(), 3u);
  BOOST_TEST(copies(h, "a") == 2u);
  BOOST_TEST(copies(h, "b") == 1u);
  BOOST_TEST(h[2].checkpoint == 4u);
}

BOOST_AUTO_TEST_CASE(at_least_once_appends_a_replay_again) {
  test::temp_dir dir{"chaos-history"};
  null_emitter out;
  std::vector<std::uint8_t> bytes;
  {
    direct_sink sink{dir / "h", sink_info(), history_mode::at_least_once};
    bytes = test::snapshot_of(sink, 1);  // takes no part: nothing in the snapshot
    for (int i = 0; i < 64; ++i) sink.add_result("r" + std::to_string(i), 0, "v");
    // 64 rows: written at once, before any checkpoint completes
    BOOST_TEST(read_history(dir / "h").size() == 64u);
  }
  direct_sink replay{dir / "h", sink_info(), history_mode::at_least_once};
  test::restore_from(replay, bytes, 1);
  for (int i = 0; i < 64; ++i) replay.add_result("r" + std::to_string(i), 0, "v");
  replay.finish(out);
  auto h = read_history(dir / "h");
  BOOST_TEST(h.size() == 128u);
  BOOST_TEST(copies(h, "r7") == 2u);
}

BOOST_AUTO_TEST_CASE(at_least_once_commits_what_came_before_a_barrier) {
  // a recovery from this checkpoint replays only what follows it: fewer than 64 rows waiting for
  // their commit at the barrier must be in the table when it passes, not with the stopped job
  test::temp_dir dir{"chaos-history"};
  {
    direct_sink sink{dir / "h", sink_info(), history_mode::at_least_once};
    for (int i = 0; i < 5; ++i) sink.add_result("r" + std::to_string(i), 0, "v");
    BOOST_TEST(read_history(dir / "h").empty());  // waiting for 64
    (void)test::snapshot_of(sink, 1);
    BOOST_TEST(read_history(dir / "h").size() == 5u);
    sink.add_result("after", 0, "v");
  }  // destroyed unfinished, as a job stopped for a recovery is: what followed the barrier is gone
  const auto h = read_history(dir / "h");
  BOOST_TEST(h.size() == 5u);
  BOOST_TEST(copies(h, "after") == 0u);
}
