// Injected storage faults (faults.hpp) reach every store: with fail_writes = 1 each store's write
// fails with a storage_error that names the directory and says "input/output error (injected)",
// and leaves nothing half-written; reads still work; with write_delay a write takes at least that
// long; a fault aimed at one directory spares the others; storage_faults{} heals everything. The
// storage service retries a block write before it reports it failed, and the tiered window store
// then fails the job naming the window and the cause.
#define BOOST_TEST_MODULE storage_faults
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string>

#include "../../support/temp_dir.hpp"
#include "../../support/thrown.hpp"
#include "../../support/wait_until.hpp"
#include "../checkpoint/checkpoint_harness.hpp"
#include "tidemark/core/tiered_window_store.hpp"
#include "tidemark/persistence/blob_store.hpp"
#include "tidemark/persistence/checkpoint_store.hpp"
#include "tidemark/persistence/faults.hpp"
#include "tidemark/persistence/storage_service.hpp"
#include "tidemark/persistence/table_sink.hpp"
#include "tidemark/persistence/table_store.hpp"

using namespace tidemark;
using namespace tidemark::persistence;
using tidemark::test::temp_dir;
using tidemark::test::thrown;

namespace {

const std::string logged = "log=(enabled=true)";
const std::string injected = "input/output error (injected)";

/// Sets faults for one test case and heals them when it ends, whatever happens.
struct faults_for_this_test {
  explicit faults_for_this_test(storage_faults f) { set_storage_faults(f); }
  ~faults_for_this_test() { set_storage_faults({}); }
};

storage_faults failing(std::string dir = {}) {
  storage_faults f;
  f.fail_writes = 1;
  f.dir = std::move(dir);
  return f;
}

bool names(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

using clock_type = std::chrono::steady_clock;
double ms_since(clock_type::time_point start) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
}

struct null_emitter final : emitter {
  void emit_watermark(event_time) override {}
  void emit_idle(bool) override {}
  void emit_on(std::uint32_t, batch_ptr) override {}
};

std::string key_of(int x) {
  return "k" + std::to_string(x);
}
std::string value_of(int x) {
  return "v" + std::to_string(x);
}
using sink_t = table_sink<int, std::string (*)(int), std::string (*)(int)>;

std::unique_ptr<sink_t> make_sink(const std::shared_ptr<wt_connection>& conn) {
  instance_info info;
  info.name = "results";
  info.index = 0;
  return std::make_unique<sink_t>(conn, "results", info, &key_of, &value_of, table_sink_options{});
}

/// The record of checkpoint `id` of job "job" with one piece.
checkpoint_record record(std::uint64_t id) {
  checkpoint_record r;
  r.id = id;
  r.job = "job";
  r.plan = "plan";
  r.pieces = 1;
  return r;
}

/// Writes one block through `s` and waits for its outcome: ("", bytes) or the service's error.
std::string write_block(storage_service& s, std::uint64_t store) {
  std::mutex m;
  bool done = false;
  bool ok = false;
  s.write(
      bucket_address{store, {0, 10}, 1, 1}, 0, 1, io_class::write,
      [] { return std::string(100, 'x'); },
      [&](bool good, std::uint64_t) {
        std::lock_guard<std::mutex> l(m);
        done = true;
        ok = good;
      });
  tidemark::test::wait_until([&] {
    std::lock_guard<std::mutex> l(m);
    return done;
  });
  return ok ? std::string{} : s.last_write_error();
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_store_write_fails_with_an_injected_eio_that_names_the_directory) {
  temp_dir dir;
  const auto home = dir / "db";
  auto conn = wt_connection::open(home, logged);
  table_store table{conn, "rows", durability::power_loss};
  blob_store blobs{conn, "blobs", durability::power_loss};
  table.insert("kept", "1");
  blobs.put("kept", "1");
  checkpoint_store checkpoints{conn};
  checkpoints.put_piece(1, 0, 0, "state 1");
  checkpoints.complete(record(1));
  auto sink = make_sink(conn);
  {
    null_emitter out;
    sink->process(0, std::make_unique<batch<int>>(std::vector<int>{1, 2, 3}), out);
    tidemark::test::snapshot_of(*sink, 1);  // stages the rows (and removes a stale marker)
  }
  {
    faults_for_this_test faults{failing()};
    const auto table_error = thrown<storage_error>([&] { table.insert("k", "v"); });
    BOOST_TEST(names(table_error, injected), table_error);
    BOOST_TEST(names(table_error, "'" + home + "'"), table_error);
    BOOST_TEST(names(thrown<storage_error>([&] { table.remove("kept"); }), injected));
    BOOST_TEST(
        names(thrown<storage_error>([&] { blobs.put("b", std::string(1000, 'b')); }), injected));
    BOOST_TEST(
        names(thrown<storage_error>([&] { checkpoints.put_piece(2, 0, 0, "state 2"); }), injected));
    BOOST_TEST(names(thrown<storage_error>([&] { table.checkpoint(); }), injected));

    // the sink's commit fails whole, naming the sink, the table and the directory
    {
      const auto sink_error = thrown<storage_error>([&] { sink->on_checkpoint_complete(1); });
      BOOST_TEST(
          names(sink_error, "table sink 'results' instance 0, table results in '" + home + "'"),
          sink_error);
      BOOST_TEST(names(sink_error, "none of them is in the table"), sink_error);
      BOOST_TEST(names(sink_error, injected), sink_error);
    }

    // reads are not writes: they work, and show that nothing of the failed writes is there
    BOOST_TEST(!table.lookup("k"));
    BOOST_TEST(table.lookup("kept").value_or("") == "1");
    BOOST_TEST(!blobs.get("b"));
    BOOST_TEST(table_store(conn, "results", durability::power_loss).prefix("").empty());
    auto latest = checkpoints.latest("job", "plan");
    BOOST_TEST(latest.record.id == 1u);
    BOOST_TEST(latest.rejected.empty());
  }
  // healed: the same writes succeed
  table.insert("k", "v");
  blobs.put("b", std::string(1000, 'b'));
  checkpoints.put_piece(2, 0, 0, "state 2");
  checkpoints.complete(record(2));
  sink->on_checkpoint_complete(1);
  BOOST_TEST(table.lookup("k").value_or("") == "v");
  BOOST_TEST(blobs.get("b").value_or("").size() == 1000u);
  BOOST_TEST(checkpoints.latest("job", "plan").record.id == 2u);
  BOOST_TEST(table_store(conn, "results", durability::power_loss).prefix("").size() == 3u);
}

BOOST_AUTO_TEST_CASE(a_fault_aimed_at_one_directory_spares_the_others) {
  temp_dir dir;
  auto failing_db = wt_connection::open(dir / "failing", logged);
  auto healthy_db = wt_connection::open(dir / "healthy", logged);
  table_store failing_table{failing_db, "rows", durability::power_loss};
  table_store healthy_table{healthy_db, "rows", durability::power_loss};
  faults_for_this_test faults{failing(dir / "failing")};
  BOOST_TEST(names(thrown<storage_error>([&] { failing_table.insert("k", "v"); }), injected));
  healthy_table.insert("k", "v");
  BOOST_TEST(healthy_table.lookup("k").value_or("") == "v");
}

BOOST_AUTO_TEST_CASE(a_slow_disk_makes_each_write_take_at_least_the_delay) {
  temp_dir dir;
  auto conn = wt_connection::open(dir / "db", logged);
  table_store table{conn, "rows", durability::power_loss};
  checkpoint_store checkpoints{conn};
  storage_config cfg;
  cfg.data_dir = dir / "window";
  storage_service service{cfg};
  const auto store = service.register_store();
  storage_faults slow;
  slow.write_delay = std::chrono::milliseconds{60};
  faults_for_this_test faults{slow};

  auto start = clock_type::now();
  table.insert("k", "v");
  BOOST_TEST(ms_since(start) >= 60.0);
  start = clock_type::now();
  checkpoints.put_piece(1, 0, 0, "state");
  BOOST_TEST(ms_since(start) >= 60.0);
  start = clock_type::now();
  BOOST_TEST(write_block(service, store).empty());
  BOOST_TEST(ms_since(start) >= 60.0);
  // slow, not failing
  BOOST_TEST(table.lookup("k").value_or("") == "v");
}

BOOST_AUTO_TEST_CASE(the_storage_service_retries_a_block_write_then_reports_why_it_failed) {
  temp_dir dir;
  storage_config cfg;
  cfg.data_dir = dir.path().string();
  storage_service service{cfg};
  const auto store = service.register_store();
  {
    faults_for_this_test faults{failing()};
    const auto error = write_block(service, store);
    BOOST_TEST(names(error, injected), error);
    BOOST_TEST(names(error, "'" + service.home() + "'"), error);
    const auto stats = service.stats();
    BOOST_TEST(stats.write_errors == 1u);
    BOOST_TEST(stats.write_retries == cfg.write_attempts - 1);
  }
  BOOST_TEST(write_block(service, store).empty());
  BOOST_TEST(service.stats().write_errors == 1u);
}

BOOST_AUTO_TEST_CASE(a_window_store_whose_blocks_cannot_be_written_fails_naming_the_window) {
  temp_dir dir;
  storage_config cfg;
  cfg.data_dir = dir.path().string();
  cfg.write_retry_pause = std::chrono::milliseconds{1};
  auto service = std::make_shared<storage_service>(cfg);
  tiered t;
  t.memory_events = 4;
  t.block_events = 3;
  tiered_window_store<int, std::int64_t> store{t, service, 0};
  const window_id w{0, 100};
  faults_for_this_test faults{failing()};
  for (std::int64_t i = 0; i < 10; ++i) store.append(w, 42, 7, i);  // blocks past the 4th event
  std::string error;
  tidemark::test::wait_until([&] {
    error = thrown<job_error>([&] { store.tick(); });
    return !error.empty();
  });
  BOOST_TEST(names(error, "tiered window store: a block of window [0,100) could not be written"),
             error);
  BOOST_TEST(names(error, injected), error);
}
