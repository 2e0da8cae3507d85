// The storage service step by step (manual I/O mode): priorities of the I/O steps (a destage in
// progress yields to a pre-stage, late writes go before destages), block round trips through the
// FlatBuffers records, detection of corrupt records, erase, and memory-pressure levels; and the
// storage actor's order for requests that arrive while it serves a block; and a closed service
// leaves no window state behind.
#define BOOST_TEST_MODULE storage_service
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "../../support/temp_dir.hpp"
#include "../../support/wait_until.hpp"
#include "tidemark/persistence/storage_service.hpp"

using namespace tidemark;
using namespace tidemark::persistence;
using tidemark::test::wait_until;

namespace {

storage_config manual() {
  storage_config cfg;
  cfg.manual_io = true;
  cfg.serialization_threads = 1;
  return cfg;
}

/// What a stage request delivered.
struct staged {
  std::mutex m;
  std::map<std::uint64_t, std::string> blocks;
  std::uint64_t corrupt = 0;
  bool done = false;

  void start(storage_service& s, const bucket_address& b) {
    s.stage(
        b,
        [this](std::uint64_t pos, std::string_view payload, bool intact) {
          std::lock_guard<std::mutex> l(m);
          if (intact)
            blocks[pos] = std::string{payload};
          else
            ++corrupt;
        },
        [this] {
          std::lock_guard<std::mutex> l(m);
          done = true;
        },
        io_class::prestage);
  }
  bool finished() {
    std::lock_guard<std::mutex> l(m);
    return done;
  }
};

void write(storage_service& s, const bucket_address& b, std::uint64_t pos, io_class cls,
           std::string payload, std::vector<std::string>* written = nullptr) {
  s.write(b, pos, 1, cls, [payload] { return payload; },
          [written, payload](bool ok, std::uint64_t bytes) {
            BOOST_REQUIRE(ok);
            BOOST_REQUIRE_GT(bytes, payload.size());
            if (written) written->push_back(payload);
          });
}

void run_all(storage_service& s) {
  while (s.run_one()) {
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_destage_in_progress_yields_to_a_prestage_and_late_writes_go_first) {
  storage_service s{manual()};
  const auto store = s.register_store();
  const bucket_address a{store, {0, 10}, 7, 1};
  const bucket_address b{store, {10, 20}, 7, 2};
  std::vector<std::string> written;
  for (std::uint64_t pos : {0, 4, 8}) write(s, a, pos, io_class::destage, "d" + std::to_string(pos), &written);
  wait_until([&] { return s.queued(io_class::destage) == 3; });
  BOOST_REQUIRE(s.run_one());  // the destage has written its first block
  BOOST_TEST(written == std::vector<std::string>{"d0"});

  staged pre;
  pre.start(s, a);
  write(s, b, 0, io_class::write, "late", &written);
  wait_until([&] { return s.queued(io_class::write) == 1; });
  run_all(s);
  wait_until([&] { return pre.finished(); });

  std::vector<std::pair<io_class, char>> order;
  std::vector<std::uint64_t> write_positions;
  for (const auto& step : s.served()) {
    order.emplace_back(step.cls, step.op);
    if (step.op == 'w') write_positions.push_back(step.position);
  }
  const std::vector<std::pair<io_class, char>> expected{
      {io_class::destage, 'w'},   // first destage block
      {io_class::prestage, 's'},  // pre-stage reads block 0 ...
      {io_class::prestage, 's'},  // ... and finds no more on disk
      {io_class::write, 'w'},     // the late write before the rest of the destage
      {io_class::destage, 'w'},
      {io_class::destage, 'w'}};
  BOOST_TEST(order == expected);
  BOOST_TEST(write_positions == (std::vector<std::uint64_t>{0, 0, 4, 8}));
  BOOST_TEST(written == (std::vector<std::string>{"d0", "late", "d4", "d8"}));
  // The pre-stage saw what was on disk when it ran: block 0 (the store keeps later blocks in
  // memory until their writes complete).
  BOOST_TEST(pre.blocks == (std::map<std::uint64_t, std::string>{{0, "d0"}}));

  staged after;
  after.start(s, a);
  run_all(s);
  wait_until([&] { return after.finished(); });
  BOOST_TEST(after.blocks == (std::map<std::uint64_t, std::string>{{0, "d0"}, {4, "d4"}, {8, "d8"}}));
  BOOST_TEST(s.stats().served[static_cast<int>(io_class::destage)] == 3u);
}

BOOST_AUTO_TEST_CASE(requests_arriving_while_the_storage_actor_serves_a_block_are_served_by_priority) {
  storage_config cfg;
  cfg.serialization_threads = 1;  // blocks reach the actor in the order they were written
  storage_service s{cfg};
  const auto store = s.register_store();
  const bucket_address a{store, {0, 10}, 7, 1};
  const bucket_address b{store, {10, 20}, 7, 2};
  std::mutex m;
  std::vector<std::string> order;  // completions run on the actor's thread, in the order served
  bool all_arrived = false;
  auto served = [&](const std::string& name) {
    std::lock_guard<std::mutex> l(m);
    order.push_back(name);
  };
  auto write_named = [&](const bucket_address& at, std::uint64_t pos, io_class cls, std::string name,
                         std::function<void()> also = {}) {
    s.write(at, pos, 1, cls, [name] { return name; },
            [served, name, also](bool ok, std::uint64_t) {
              served(ok ? name : "failed " + name);
              if (also) also();
            });
  };
  std::promise<void> destage_queued;
  auto go = destage_queued.get_future().share();
  // d0 is serialized once d1..d3 are written, so the three wait behind it; d0's completion runs
  // while its step is being served and makes a late write and a pre-stage write arrive (lowest
  // priority first), then waits until all five are in the actor's mailbox.
  s.write(a, 0, 1, io_class::destage, [go] { go.wait(); return std::string{"d0"}; },
          [&](bool ok, std::uint64_t) {
            served(ok ? "d0" : "failed d0");
            write_named(b, 0, io_class::write, "late");
            write_named(b, 1, io_class::prestage, "pre");
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
            while (s.serializing() > 0 && std::chrono::steady_clock::now() < deadline)
              std::this_thread::sleep_for(std::chrono::milliseconds(1));
            std::lock_guard<std::mutex> l(m);
            all_arrived = s.serializing() == 0;
          });
  for (std::uint64_t pos : {1, 2, 3}) write_named(a, pos, io_class::destage, "d" + std::to_string(pos));
  destage_queued.set_value();
  wait_until([&] {
    std::lock_guard<std::mutex> l(m);
    return order.size() == 6;
  });
  std::lock_guard<std::mutex> l(m);
  BOOST_REQUIRE(all_arrived);
  // Arrival order was d1 d2 d3 late pre; priority order serves pre, then late, then the destage.
  BOOST_TEST(order == (std::vector<std::string>{"d0", "pre", "late", "d1", "d2", "d3"}));
}

BOOST_AUTO_TEST_CASE(corrupt_and_missing_records_are_detected_not_crashed_on) {
  storage_service s{manual()};
  const auto store = s.register_store();
  const bucket_address a{store, {-50, -40}, 1, 1};
  for (std::uint64_t pos : {0, 3, 6}) write(s, a, pos, io_class::write, std::string(100, 'a' + pos));
  wait_until([&] { return s.queued(io_class::write) == 3; });
  run_all(s);
  s.overwrite_block(a, 3, "not a flatbuffer");
  s.remove_block(a, 6);
  staged st;
  st.start(s, a);
  run_all(s);
  wait_until([&] { return st.finished(); });
  BOOST_TEST(st.blocks.size() == 1u);
  BOOST_TEST(st.blocks.at(0) == std::string(100, 'a'));
  BOOST_TEST(st.corrupt == 1u);
  BOOST_TEST(s.stats().corrupt_blocks == 1u);
}

BOOST_AUTO_TEST_CASE(erase_removes_one_bucket_only) {
  storage_service s{manual()};
  const auto store = s.register_store();
  const bucket_address a{store, {0, 10}, 5, 1};
  const bucket_address b{store, {0, 10}, 5, 2};  // same window and hash, another key
  for (std::uint64_t pos = 0; pos < 100; ++pos) write(s, a, pos, io_class::destage, "a");
  write(s, b, 0, io_class::destage, "b");
  wait_until([&] { return s.queued(io_class::destage) == 101; });
  run_all(s);
  s.erase(a);
  run_all(s);  // two erase steps of at most 64 blocks
  staged sa, sb;
  sa.start(s, a);
  sb.start(s, b);
  run_all(s);
  wait_until([&] { return sa.finished() && sb.finished(); });
  BOOST_TEST(sa.blocks.empty());
  BOOST_TEST(sb.blocks == (std::map<std::uint64_t, std::string>{{0, "b"}}));
}

// Window state is transient: closing drops its table instead of checkpointing it (a checkpoint
// of erased blocks made WiredTiger copy every erased block into memory: 2.4 GB at the close of a
// run with 128 MB windows).
BOOST_AUTO_TEST_CASE(closing_drops_the_window_state_instead_of_writing_it) {
  test::temp_dir dir{"storage-close"};
  const auto table = std::filesystem::path{dir.path()} / "window_state" / "window_state.wt";
  {
    auto cfg = manual();
    cfg.data_dir = dir.path();
    storage_service s{cfg};
    const bucket_address a{s.register_store(), {0, 10}, 5, 1};
    for (std::uint64_t pos = 0; pos < 10; ++pos)
      write(s, a, pos, io_class::destage, std::string(100'000, 'a'));  // overflow records
    wait_until([&] { return s.queued(io_class::destage) == 10; });
    run_all(s);
    s.erase(a);
    run_all(s);
    BOOST_TEST(std::filesystem::exists(table));
  }
  BOOST_TEST(!std::filesystem::exists(table));
  BOOST_TEST(std::filesystem::exists(table.parent_path() / "WiredTiger"));  // the home stays
}

BOOST_AUTO_TEST_CASE(memory_pressure_follows_the_budget) {
  storage_config cfg;
  cfg.memory_budget_bytes = 1000;
  storage_service s{cfg};
  BOOST_TEST(static_cast<int>(s.pressure()) == static_cast<int>(memory_pressure::none));
  s.account(700);
  BOOST_TEST(static_cast<int>(s.pressure()) == static_cast<int>(memory_pressure::none));
  s.account(50);
  BOOST_TEST(static_cast<int>(s.pressure()) == static_cast<int>(memory_pressure::moderate));
  s.account(160);  // 910 used: less than 10 % free
  BOOST_TEST(static_cast<int>(s.pressure()) == static_cast<int>(memory_pressure::severe));
  s.account(-910);
  BOOST_TEST(static_cast<int>(s.pressure()) == static_cast<int>(memory_pressure::none));
  BOOST_TEST(s.stats().memory_peak == 910);
  storage_service unlimited;
  unlimited.account(1'000'000'000);
  BOOST_TEST(static_cast<int>(unlimited.pressure()) == static_cast<int>(memory_pressure::none));
}
