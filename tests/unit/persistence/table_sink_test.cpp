// The table sink's two-phase commit, driven by hand as the runtime would: rows become visible only
// when a checkpoint covering them completes, a restore after a crash commits the restored
// snapshot's rows once, and restoring the same bytes again commits nothing.
#define BOOST_TEST_MODULE table_sink
#include <boost/test/unit_test.hpp>

#include "../checkpoint/checkpoint_harness.hpp"

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../../support/temp_dir.hpp"
#include "tidemark/core/state.hpp"
#include "tidemark/persistence/table_sink.hpp"
#include "tidemark/persistence/table_store.hpp"

using namespace tidemark;
using namespace tidemark::persistence;
using tidemark::test::temp_dir;

namespace {

struct null_emitter final : emitter {
  void emit_watermark(event_time) override {}
  void emit_idle(bool) override {}
  void emit_on(std::uint32_t, batch_ptr) override {}
};

std::string key_of(int x) {
  char k[16];
  std::snprintf(k, sizeof k, "k%06d", x);
  return k;
}

std::string value_of(int x) {
  return "v" + std::to_string(x * x);
}

using sink_t = table_sink<int, std::string (*)(int), std::string (*)(int)>;

std::unique_ptr<sink_t> make_sink(const std::shared_ptr<wt_connection>& conn,
                                  table_sink_options opts = {}) {
  instance_info info;
  info.name = "results";
  info.index = 0;
  return std::make_unique<sink_t>(conn, "results", info, &key_of, &value_of, opts);
}

void feed(sink_t& sink, int from, int to) {
  null_emitter out;
  std::vector<int> xs;
  for (int x = from; x < to; ++x) xs.push_back(x);
  sink.process(0, std::make_unique<batch<int>>(xs), out);
}

// The table as a map, read through an independent handle.
std::map<std::string, std::string> table_of(const std::shared_ptr<wt_connection>& conn) {
  table_store t{conn, "results", durability::power_loss};
  std::map<std::string, std::string> m;
  for (auto& r : t.prefix("")) m[r.key] = r.value;
  return m;
}

// What the table must hold: the rows of elements [0, n), computed without the sink.
std::map<std::string, std::string> expected_rows(int n) {
  std::map<std::string, std::string> m;
  for (int x = 0; x < n; ++x) {
    char k[16];
    std::snprintf(k, sizeof k, "k%06d", x);
    m[k] = "v" + std::to_string(x * x);
  }
  return m;
}

std::optional<std::string> marker(const std::shared_ptr<wt_connection>& conn) {
  table_store t{conn, "results.sink_commits", durability::power_loss};
  return t.lookup(sink_marker_key("results", 0));
}

double metric(const sink_t& sink, const std::string& name) {
  std::map<std::string, double> m;
  sink.add_metrics(m);
  return m.at(name);
}

const std::string logged = "log=(enabled=true)";

}  // namespace

BOOST_AUTO_TEST_CASE(rows_commit_at_checkpoint_completion_and_once_after_a_crash) {
  temp_dir dir;
  auto conn = wt_connection::open(dir.path().string(), logged);
  auto first = make_sink(conn);
  feed(*first, 0, 10);
  auto snap1 = test::snapshot_of(*first, 1);
  feed(*first, 10, 20);
  auto snap2 = test::snapshot_of(*first, 2);
  feed(*first, 20, 25);
  BOOST_TEST(table_of(conn).empty());  // nothing before a checkpoint completes
  first->on_checkpoint_complete(1);
  BOOST_TEST((table_of(conn) == expected_rows(10)));
  BOOST_TEST(marker(conn).value_or("") == "1");

  first.reset();  // crash: checkpoint 2 completed, but its notification never arrived
  BOOST_TEST((table_of(conn) == expected_rows(10)));

  auto second = make_sink(conn);
  test::restore_from(*second, snap2, 2);
  BOOST_TEST((table_of(conn) == expected_rows(20)));
  BOOST_TEST(metric(*second, "rows_committed") == 10);  // rows 0..9 were committed before
  BOOST_TEST(marker(conn).value_or("") == "2");

  second.reset();  // crash again before anything new
  auto third = make_sink(conn);
  test::restore_from(*third, snap2, 2);
  BOOST_TEST(metric(*third, "rows_committed") == 0);  // nothing twice
  BOOST_TEST((table_of(conn) == expected_rows(20)));

  // the replay after checkpoint 2 goes on to the end
  feed(*third, 20, 30);
  test::snapshot_of(*third, 3);
  feed(*third, 30, 35);
  third->on_checkpoint_complete(3);
  BOOST_TEST((table_of(conn) == expected_rows(30)));
  null_emitter out;
  third->finish(out);
  BOOST_TEST((table_of(conn) == expected_rows(35)));
  BOOST_TEST(marker(conn).value_or("") == "finished");
  BOOST_TEST(metric(*third, "rows_committed") == 15);
}

BOOST_AUTO_TEST_CASE(a_late_notification_commits_every_earlier_checkpoint_in_one_transaction) {
  temp_dir dir;
  auto conn = wt_connection::open(dir.path().string(), logged);
  auto sink = make_sink(conn);
  feed(*sink, 0, 5);
  test::snapshot_of(*sink, 4);
  test::snapshot_of(*sink, 5);  // nothing new: stages nothing
  feed(*sink, 5, 12);
  test::snapshot_of(*sink, 6);
  feed(*sink, 12, 15);
  test::snapshot_of(*sink, 7);
  sink->on_checkpoint_complete(6);  // 4 and 5 were never announced
  BOOST_TEST((table_of(conn) == expected_rows(12)));
  BOOST_TEST(metric(*sink, "commits") == 1);  // checkpoints 4 to 6 in one transaction
  BOOST_TEST(metric(*sink, "rows_staged") == 3);
  sink->on_checkpoint_complete(7);
  BOOST_TEST((table_of(conn) == expected_rows(15)));
}

BOOST_AUTO_TEST_CASE(a_marker_left_by_an_earlier_run_does_not_hide_this_runs_rows) {
  temp_dir dir;
  auto conn = wt_connection::open(dir.path().string(), logged);
  {
    auto earlier = make_sink(conn);
    feed(*earlier, 100, 101);
    null_emitter out;
    earlier->finish(out);
    BOOST_TEST(marker(conn).value_or("") == "finished");
  }
  // a new run of the job: its first checkpoint completes, then it crashes before the commit
  auto fresh = make_sink(conn);
  feed(*fresh, 0, 8);
  auto snap1 = test::snapshot_of(*fresh, 1);
  fresh.reset();
  auto restored = make_sink(conn);
  test::restore_from(*restored, snap1, 1);
  auto want = expected_rows(8);
  want[key_of(100)] = value_of(100);
  BOOST_TEST((table_of(conn) == want));
}

BOOST_AUTO_TEST_CASE(without_checkpoints_rows_commit_every_n_rows_and_at_the_end) {
  temp_dir dir;
  auto conn = wt_connection::open(dir.path().string(), logged);
  table_sink_options opts;
  opts.plain_commit_rows = 4;
  auto sink = make_sink(conn, opts);
  feed(*sink, 0, 10);
  BOOST_TEST((table_of(conn) == expected_rows(8)));
  null_emitter out;
  sink->finish(out);
  BOOST_TEST((table_of(conn) == expected_rows(10)));
}

BOOST_AUTO_TEST_CASE(committed_rows_survive_reopening_the_database) {
  temp_dir dir;
  {
    auto conn = wt_connection::open(dir.path().string(), logged);
    auto sink = make_sink(conn);
    feed(*sink, 0, 6);
    test::snapshot_of(*sink, 1);
    sink->on_checkpoint_complete(1);
  }
  auto conn = wt_connection::open(dir.path().string(), logged);
  BOOST_TEST((table_of(conn) == expected_rows(6)));
}

BOOST_AUTO_TEST_CASE(a_connection_without_log_is_refused) {
  temp_dir dir;
  auto conn = wt_connection::open(dir.path().string());
  BOOST_CHECK_THROW(make_sink(conn), std::invalid_argument);
}
