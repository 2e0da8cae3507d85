// The tiered window store on a real storage service: m-bucket overflow and arrival order across
// tiers, destage on expiry, pre-stage timing (a scheduled pre-stage makes the re-execution find
// its events in memory; Δt learned from staging keeps far-away ones waiting; a demand read
// stages the rest of its window), lost and corrupt
// blocks giving incomplete results, the ρ_min, τ and memory-pressure policies (staged events stay
// under pressure), and a window operator whose periodic late trigger lets the store pre-stage
// before the re-execution; a checkpoint capture that reads its blocks later, below pre-staging,
// while the purge that follows waits.
#define BOOST_TEST_MODULE tiered_store
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <numeric>
#include <thread>

#include "../../support/wait_until.hpp"
#include "harness.hpp"
#include "tidemark/persistence/storage_service.hpp"
#include "tidemark/core/tiered_window_store.hpp"
#include "tidemark/core/window_operators.hpp"

using namespace tidemark;
using persistence::storage_config;
using persistence::storage_service;
using tidemark::test::wait_until;

namespace {

using store_t = tiered_window_store<int, std::int64_t>;
const window_id w{0, 100};
constexpr std::uint64_t h = 42;
constexpr int k = 7;

std::vector<std::int64_t> read_all(store_t& s, bool* complete = nullptr) {
  window_events<std::int64_t> events{s.events(w, h, k)};
  std::vector<std::int64_t> out(events.begin(), events.end());
  if (complete) *complete = events.complete();
  return out;
}

std::vector<std::int64_t> iota(std::int64_t n) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

double metric(const store_t& s, const char* name) {
  std::map<std::string, double> m;
  s.add_metrics(m);
  return m.at(name);
}

tiered small() {
  tiered t;
  t.memory_events = 4;
  t.block_events = 3;
  return t;
}

/// A storage service with a memory budget of `events` int64 events, and a store on it whose
/// m-bucket holds 1000 events.
struct budgeted {
  explicit budgeted(std::size_t events, tiered t = small())
      : storage(std::make_shared<storage_service>(config(events))),
        s{with_memory(t), storage, 1000} {}
  static storage_config config(std::size_t events) {
    storage_config cfg;
    cfg.memory_budget_bytes = events * sizeof(std::int64_t);
    return cfg;
  }
  static tiered with_memory(tiered t) {
    t.memory_events = 1000;
    return t;
  }
  std::shared_ptr<storage_service> storage;
  store_t s;
};

/// A store under the lazy policy (windows go to disk when the budget asks), with 1,000-event
/// blocks and a budget of 10,000 events: moderate pressure above 7,000, severe only past the
/// budget (the destaged blocks count twice while they are written: their events and their
/// serialized copy).
struct lazy_budgeted {
  std::shared_ptr<storage_service> storage = [] {
    auto cfg = budgeted::config(10'000);
    cfg.severe_free_fraction = 0;
    return std::make_shared<storage_service>(cfg);
  }();
  store_t s{[] {
              auto t = small();
              t.memory_events = 10'000;
              t.block_events = 1000;
              t.destage_on_expiry = false;
              return t;
            }(),
            storage, 1000};
};

/// Appends 0..n-1, expires the window and waits until the destage reached the disk.
void fill_and_destage(store_t& s, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) s.append(w, h, k, i);
  s.expire(w, h, k);
  wait_until([&] {
    s.tick();
    return s.memory_events() == 0;
  });
}

}  // namespace

BOOST_AUTO_TEST_CASE(overflow_goes_to_the_p_bucket_and_iteration_keeps_arrival_order) {
  auto storage = std::make_shared<storage_service>();
  store_t s{small(), storage, 0};
  for (std::int64_t i = 0; i < 10; ++i) s.append(w, h, k, i);
  // the blocks may still be in flight (read from memory) or written already (staged): same order
  BOOST_TEST(read_all(s) == iota(10));
  wait_until([&] {
    s.tick();
    return metric(s, "state_disk_events") == 6;  // positions 4..9 in two blocks
  });
  BOOST_TEST(s.memory_events() == 4u);
  BOOST_TEST(metric(s, "state_write_blocks") == 2);
  const auto stages_before = metric(s, "state_demand_stages");
  BOOST_TEST(read_all(s) == iota(10));  // now staged from disk behind the m-bucket
  BOOST_TEST(metric(s, "state_demand_stages") == stages_before + 1);
  BOOST_TEST(s.memory_events() == 4u);  // staged events are freed after the read
  s.purge(w, h, k);
  BOOST_TEST(metric(s, "state_disk_events") == 0);
  BOOST_TEST(metric(s, "state_disk_bytes") == 0);
  wait_until([&] { return storage->stats().served[2] >= 1; });  // the erase
  BOOST_TEST(s.memory_bytes() == 0u);
}

BOOST_AUTO_TEST_CASE(expiry_destages_all_but_the_bootstrap_set_and_late_events_go_to_disk) {
  auto storage = std::make_shared<storage_service>();
  auto cfg = small();
  cfg.memory_events = 100;
  cfg.bootstrap_fraction = 0.2;
  store_t s{cfg, storage, 1000};
  for (std::int64_t i = 0; i < 50; ++i) s.append(w, h, k, i);
  s.expire(w, h, k);
  wait_until([&] {
    s.tick();
    return s.memory_events() == 10;  // ρ_min = 20 % of 50
  });
  BOOST_TEST(metric(s, "state_destage_blocks") == 14);  // 40 events in blocks of 3
  s.append(w, h, k, 50);  // late: to the open p-bucket block, flushed by the next tick
  s.tick();
  wait_until([&] {
    s.tick();
    return s.memory_events() == 10;
  });
  BOOST_TEST(metric(s, "state_write_blocks") == 1);
  BOOST_TEST(read_all(s) == iota(51));
  BOOST_TEST(storage->stats().memory_used == static_cast<std::int64_t>(s.memory_bytes()));
}

BOOST_AUTO_TEST_CASE(a_scheduled_prestage_puts_the_events_in_memory_before_the_re_execution) {
  auto storage = std::make_shared<storage_service>();
  store_t s{small(), storage, 1000};
  fill_and_destage(s, 30);
  // No staging measured yet: pre-stage at once for a re-execution expected in 5 s.
  s.expect_fire(w, h, k, 5000);
  BOOST_TEST(metric(s, "state_stages") == 1);
  wait_until([&] {
    s.tick();
    return metric(s, "state_stages_done") == 1;
  });
  BOOST_TEST(s.memory_events() == 30u);
  BOOST_TEST(read_all(s) == iota(30));
  BOOST_TEST(metric(s, "state_prestage_hits") == 1);
  BOOST_TEST(metric(s, "state_io_wait_ms") == 0);
  BOOST_TEST(s.memory_events() == 0u);  // freed after the re-execution
  // Δt is now learned from that staging: a re-execution a minute away is not pre-staged yet ...
  s.tick();
  BOOST_TEST(s.prestage_lead_ms(30) < 60'000);
  s.expect_fire(w, h, k, 60'000);
  BOOST_TEST(metric(s, "state_stages") == 1);
  // ... one due now is.
  s.expect_fire(w, h, k, 0);
  BOOST_TEST(metric(s, "state_stages") == 2);
}

BOOST_AUTO_TEST_CASE(without_prestaging_the_re_execution_stages_on_demand) {
  auto storage = std::make_shared<storage_service>();
  auto cfg = small();
  cfg.prestage = false;
  store_t s{cfg, storage, 1000};
  fill_and_destage(s, 30);
  s.expect_fire(w, h, k, 0);
  BOOST_TEST(metric(s, "state_stages") == 0);
  BOOST_TEST(read_all(s) == iota(30));
  BOOST_TEST(metric(s, "state_demand_stages") == 1);
  BOOST_TEST(metric(s, "state_prestage_hits") == 0);
}

BOOST_AUTO_TEST_CASE(a_demand_read_stages_the_other_keys_of_its_window_at_once) {
  auto storage = std::make_shared<storage_service>();
  auto cfg = small();
  cfg.prestage = false;
  store_t s{cfg, storage, 1000};
  const window_id other{100, 200};
  for (std::int64_t i = 0; i < 30; ++i) {
    s.append(w, h, k, i);
    s.append(w, h + 1, k + 1, 100 + i);
    s.append(other, h, k, 200 + i);
  }
  for (const auto& [win, hash, key] : {std::tuple{w, h, k}, {w, h + 1, k + 1}, {other, h, k}})
    s.expire(win, hash, key);
  wait_until([&] {
    s.tick();
    return s.memory_events() == 0;
  });
  BOOST_TEST(read_all(s) == iota(30));
  BOOST_TEST(metric(s, "state_demand_stages") == 1);
  BOOST_TEST(metric(s, "state_window_stages") == 1);  // k + 1 of the same window, not `other`
  wait_until([&] {
    s.tick();
    return metric(s, "state_stages_done") == 2;
  });
  std::vector<std::int64_t> second;
  {
    window_events<std::int64_t> events{s.events(w, h + 1, k + 1)};
    second.assign(events.begin(), events.end());
  }
  std::vector<std::int64_t> expected = iota(30);
  for (auto& x : expected) x += 100;
  BOOST_TEST(second == expected);
  BOOST_TEST(metric(s, "state_demand_stages") == 1);
  BOOST_TEST(metric(s, "state_prestage_hits") == 1);
}

BOOST_AUTO_TEST_CASE(lost_and_corrupt_blocks_make_the_result_incomplete) {
  auto storage = std::make_shared<storage_service>();
  auto cfg = small();
  cfg.memory_events = 0;  // no cap: the whole m-bucket is destaged on expiry
  auto s = std::make_unique<store_t>(cfg, storage, 1000);
  fill_and_destage(*s, 9);  // blocks at positions 0, 3, 6
  const bucket_address a{1, w, h, 1};  // first store, first bucket
  storage->overwrite_block(a, 3, "garbage");
  storage->remove_block(a, 6);
  bool complete = true;
  BOOST_TEST(read_all(*s, &complete) == (std::vector<std::int64_t>{0, 1, 2}));
  BOOST_TEST(!complete);
  BOOST_TEST(metric(*s, "state_blocks_lost") == 2);
  BOOST_TEST(metric(*s, "state_blocks_corrupt") == 1);

  // Through a process function, the window result is marked incomplete.
  auto sum = [](const int&, const window_id&, window_events<std::int64_t>& es) {
    std::int64_t t = 0;
    for (auto x : es) t += x;
    return t;
  };
  ops::process_function<std::int64_t, int, decltype(sum)> fn{sum, std::move(s)};
  ops::process_function<std::int64_t, int, decltype(sum)>::payload p;
  BOOST_TEST(fn.result(p, w, w, h, k) == 3);
  BOOST_TEST(fn.incomplete());
}

BOOST_AUTO_TEST_CASE(a_capture_reads_the_disk_later_below_prestaging_and_defers_erases) {
  // Manual I/O: nothing reaches the disk unless this thread serves it, so a capture that waited
  // for a read would never return.
  storage_config sc;
  sc.manual_io = true;
  auto storage = std::make_shared<storage_service>(sc);
  auto serve_all = [&] {
    wait_until([&] {
      while (storage->run_one()) {
      }
      return storage->serializing() == 0 && storage->queued(io_class::destage) == 0 &&
             storage->queued(io_class::write) == 0;
    });
  };
  auto cfg = small();
  cfg.memory_events = 0;  // no cap: the whole m-bucket is destaged on expiry
  store_t s{cfg, storage, 1000};
  for (std::int64_t i = 0; i < 9; ++i) s.append(w, h, k, i);
  s.expire(w, h, k);  // blocks at positions 0, 3, 6
  serve_all();
  wait_until([&] {
    s.tick();
    return s.memory_events() == 0;
  });
  s.append(w, h, k, 9);  // late: the open tail, in memory
  const window_id open{100, 200};
  s.append(open, h, k, 100);  // an open window: its m-bucket

  auto capture = s.capture(1);
  BOOST_TEST(storage->queued(io_class::write) == 0u);  // no read queued at the capture
  s.purge(w, h, k);                                      // the window's re-execution is done
  BOOST_TEST(storage->queued(io_class::destage) == 0u);  // its erase waits for the capture
  s.append(open, h, k, 101);                             // after the capture: not in it
  serve_all();  // would erase the blocks the capture still has to read

  std::vector<std::uint8_t> bytes;
  std::atomic<bool> written{false};
  std::thread writer{[&] {
    state_writer out{1, bytes};
    capture(out);
    written = true;
  }};
  bool read_below_prestage = false;
  wait_until([&] {
    read_below_prestage |= storage->queued(io_class::write) > 0 && storage->queued(io_class::prestage) == 0;
    storage->run_one();
    return written.load();
  });
  writer.join();
  BOOST_TEST(read_below_prestage);
  capture = nullptr;  // written: the deferred erase goes ahead
  BOOST_TEST(storage->queued(io_class::destage) == 1u);
  serve_all();

  // Read back on a service with its own I/O thread (the manual one would wait for this thread).
  store_t restored{cfg, std::make_shared<storage_service>(), 1000};
  state_reader in{1, bytes.data(), bytes.size()};
  restored.restore(in);
  bool complete = false;
  BOOST_TEST(read_all(restored, &complete) == iota(10));
  BOOST_TEST(complete);
  window_events<std::int64_t> events{restored.events(open, h, k)};
  BOOST_TEST(std::vector<std::int64_t>(events.begin(), events.end()) == std::vector<std::int64_t>{100});
}

BOOST_AUTO_TEST_CASE(idle_windows_are_destaged_after_tau) {
  auto storage = std::make_shared<storage_service>();
  auto cfg = small();
  cfg.memory_events = 100;
  cfg.idle_destage_ms = 5;
  store_t s{cfg, storage, 1000};
  for (std::int64_t i = 0; i < 20; ++i) s.append(w, h, k, i);
  s.tick();
  BOOST_TEST(metric(s, "state_idle_destages") == 0);
  // ticks until the windows have been idle for tau
  wait_until([&] {
    s.tick();
    return s.memory_events() == 0;
  });
  BOOST_TEST(metric(s, "state_idle_destages") == 1);
  s.append(w, h, k, 20);  // still open: goes behind the destaged events
  BOOST_TEST(read_all(s) == iota(21));
}

BOOST_AUTO_TEST_CASE(severe_memory_pressure_destages_open_windows) {
  auto t = small();
  t.block_events = 64;
  budgeted b{20, t};
  auto& s = b.s;
  auto& storage = b.storage;
  for (std::int64_t i = 0; i < 2000; ++i) s.append(w, h, k, i);
  BOOST_TEST(metric(s, "state_pressure_destages") > 0);
  BOOST_TEST(metric(s, "state_backpressure_ms") > 0);  // appends waited for the writes
  // out of severe pressure; what is left in memory is less than a block, which moderate pressure
  // does not write
  wait_until([&] {
    s.tick();
    return storage->pressure() != memory_pressure::severe;
  });
  BOOST_TEST(s.memory_events() < 64u);
  BOOST_TEST(read_all(s) == iota(2000));
}

// Under the lazy policy an expired window stays in memory with its late events, and so it does
// after a checkpoint restore (which appends the events again): complete, in order, no block
// written. The window overflows its m-bucket (4 events) into an open tail shorter than a block
// (3), which only destage on expiry would seal.
BOOST_AUTO_TEST_CASE(
    without_destage_on_expiry_an_expired_window_stays_in_memory_with_its_late_events) {
  auto cfg = small();
  cfg.destage_on_expiry = false;
  store_t s{cfg, std::make_shared<storage_service>(), 1000};
  for (std::int64_t i = 0; i < 5; ++i) s.append(w, h, k, i);
  s.expire(w, h, k);
  s.append(w, h, k, 5);  // late
  std::vector<std::uint8_t> bytes;
  {
    state_writer out{1, bytes};
    s.snapshot(out);
  }
  store_t restored{cfg, std::make_shared<storage_service>(), 1000};
  state_reader in{1, bytes.data(), bytes.size()};
  restored.restore(in);
  for (store_t* x : {&s, &restored}) {
    x->tick();
    BOOST_TEST(x->memory_events() == 6u);
    BOOST_TEST(metric(*x, "state_destage_blocks") == 0);
    BOOST_TEST(metric(*x, "state_write_blocks") == 0);
    bool complete = false;
    BOOST_TEST(read_all(*x, &complete) == iota(6));
    BOOST_TEST(complete);
  }
}

BOOST_AUTO_TEST_CASE(a_prestage_starts_only_when_its_blocks_fit_below_severe_pressure) {
  // Budget: 10,000 events, severe pressure above 9,000 (72,000 bytes).
  auto storage = std::make_shared<storage_service>(budgeted::config(10'000));
  auto t = small();
  t.memory_events = 10'000;
  t.block_events = 1000;
  store_t s{t, storage, 1000};
  fill_and_destage(s, 3000);  // ~24 KB on disk
  const window_id open{100, 200};
  for (std::int64_t i = 0; i < 6500; ++i) s.append(open, h, k, i);  // 52 KB: no pressure yet
  BOOST_TEST((storage->pressure() == memory_pressure::none));
  BOOST_TEST(storage->headroom() < 24'000);
  s.expect_fire(w, h, k, 0);
  BOOST_TEST(metric(s, "state_stages") == 0);
  s.purge(open, h, k);
  s.expect_fire(w, h, k, 0);
  BOOST_TEST(metric(s, "state_stages") == 1);
  BOOST_TEST(read_all(s) == iota(3000));
}

BOOST_AUTO_TEST_CASE(moderate_memory_pressure_destages_expired_windows_before_open_ones) {
  lazy_budgeted b;
  auto& s = b.s;
  const window_id open{100, 200};
  for (std::int64_t i = 0; i < 2000; ++i) s.append(w, h, k, i);
  s.expire(w, h, k);
  // 7,100 events: moderate pressure, first seen at the tick (appends look every 256, the last
  // time at 6,912). A quarter of the memory is 1,775 events, so the expired window's 2,000 (two
  // blocks) are enough; largest first alone would have taken the open window's 5,100 (six).
  for (std::int64_t i = 0; i < 5100; ++i) s.append(open, h, k, i);
  BOOST_TEST(metric(s, "state_pressure_destages") == 0);
  s.tick();
  BOOST_TEST(metric(s, "state_pressure_destages") == 1);
  BOOST_TEST(metric(s, "state_destage_blocks") == 2);
  BOOST_TEST(read_all(s) == iota(2000));
}

// Of two expired windows, the later one goes to disk first: its re-execution comes last, so the
// earlier one stays in memory and fires without a stage (Belady's choice, not the larger window).
// Blocks being written count as released: pressure that lasts until they are on disk destages
// nothing more.
BOOST_AUTO_TEST_CASE(moderate_memory_pressure_destages_the_latest_expired_window_first) {
  lazy_budgeted b;
  auto& s = b.s;
  const window_id later{100, 200};
  const window_id open{200, 300};
  for (std::int64_t i = 0; i < 2500; ++i) s.append(w, h, k, i);
  for (std::int64_t i = 0; i < 2000; ++i) s.append(later, h, k, i);
  s.expire(w, h, k);
  s.expire(later, h, k);
  // 7,100 events: moderate pressure at the tick; a quarter of them (1,775) is one window
  for (std::int64_t i = 0; i < 2600; ++i) s.append(open, h, k, i);
  s.tick();
  BOOST_TEST(metric(s, "state_pressure_destages") == 1);
  BOOST_TEST(metric(s, "state_destage_blocks") == 2);
  wait_until([&] {
    s.tick();
    return s.memory_events() <= 5100;  // the later window's blocks are written
  });
  // the ticks while they were written did not send the earlier window after them
  BOOST_TEST(s.memory_events() == 5100u);
  BOOST_TEST(metric(s, "state_pressure_destages") == 1);
  BOOST_TEST(read_all(s) == iota(2500));
  BOOST_TEST(metric(s, "state_stages") == 0);
  window_events<std::int64_t> events{s.events(later, h, k)};
  BOOST_TEST(std::vector<std::int64_t>(events.begin(), events.end()) == iota(2000));
  BOOST_TEST(metric(s, "state_stages") == 1);
}

BOOST_AUTO_TEST_CASE(memory_pressure_keeps_staged_events_for_their_re_execution) {
  // Staged events are freed after the re-execution they were staged for. Pressure that freed them
  // earlier only moved the read into the re-execution (and pre-staging started it again).
  budgeted b{400};  // the 30 events' ten blocks take about 1 KB on disk
  auto& s = b.s;
  fill_and_destage(s, 30);
  s.expect_fire(w, h, k, 0);  // 30 events staged: no pressure yet
  wait_until([&] {
    s.tick();
    return metric(s, "state_stages_done") == 1;
  });
  const window_id open{100, 200};
  for (std::int64_t i = 0; i < 350; ++i) s.append(open, h, k, i);  // severe pressure
  s.tick();
  BOOST_TEST(metric(s, "state_pressure_destages") > 0);
  BOOST_TEST(read_all(s) == iota(30));
  BOOST_TEST(metric(s, "state_prestage_hits") == 1);
  BOOST_TEST(metric(s, "state_demand_stages") == 0);
  BOOST_TEST(metric(s, "state_stages") == 1);
}

BOOST_AUTO_TEST_CASE(a_window_operator_with_a_periodic_late_trigger_prestages_before_re_firing) {
  auto storage = std::make_shared<storage_service>();
  auto t = small();
  t.memory_events = 100;
  t.block_events = 16;
  window_config cfg;
  cfg.allowed_lateness = 10'000;
  cfg.late = late_trigger::every_ms(50);
  auto store = std::make_unique<store_t>(t, storage, cfg.allowed_lateness);
  auto* s = store.get();
  auto sum = [](const int&, const window_id&, window_events<std::int64_t>& es) {
    std::int64_t total = 0;
    for (auto x : es) total += x;
    return total;
  };
  auto key = [](const std::int64_t&) { return k; };
  using fn_t = ops::process_function<std::int64_t, int, decltype(sum)>;
  auto op = ops::make_window_logic<std::int64_t, int>(tumbling{100}, key, fn_t{sum, std::move(store)}, cfg, "w");
  test::recording_emitter out;
  op->on_timer(1000, out);  // the operator's processing time
  op->process(0, test::make_batch(iota(100), iota(100), std::vector<std::uint64_t>(100, h)), out);
  op->on_watermark(100, out);  // on time (sum 4950); the expiry destages the window
  wait_until([&] {
    op->on_timer(1000, out);
    return s->memory_events() == 0;
  });
  // A late event: every_ms(50) re-fires at 1050, so the store pre-stages now (Δt not learned yet).
  op->process(0, test::make_batch(std::vector<std::int64_t>{1000}, {50}, {h}), out);
  BOOST_TEST(metric(*s, "state_stages") == 1);
  wait_until([&] {
    op->on_timer(1010, out);  // not due yet
    return metric(*s, "state_stages_done") == 1;
  });
  op->on_timer(1050, out);  // the re-execution
  std::vector<std::pair<pane_timing, std::int64_t>> results;
  for (const auto& r : out.values<window_result<int, std::int64_t>>())
    results.emplace_back(r.timing, r.value);
  BOOST_TEST(results.size() == 2u);
  BOOST_TEST(results.back().second == 5950);
  BOOST_TEST(static_cast<int>(results.back().first) == static_cast<int>(pane_timing::late));
  BOOST_TEST(metric(*s, "state_prestage_hits") == 1);
  BOOST_TEST(metric(*s, "state_demand_stages") == 0);
  BOOST_TEST(metric(*s, "state_io_wait_ms") == 0);
}
