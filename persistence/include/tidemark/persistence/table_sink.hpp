// The WiredTiger table sink: one row per element, committed exactly once through checkpoints
// (two-phase commit). Rows are staged in the sink's snapshot and committed when the checkpoint
// completes, together with a marker row that makes a commit repeated after a restore a no-op.
// docs/fault-tolerance.md ("Sinks") states the guarantee.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tidemark/core/job.hpp"
#include "tidemark/core/operator.hpp"
#include "tidemark/persistence/wiredtiger.hpp"

namespace tidemark::persistence {

/// How a table sink commits.
struct table_sink_options {
  /// Until the first checkpoint barrier reaches the sink (and in jobs without checkpoints) rows
  /// are committed every this many rows and at the end of the input (at-least-once).
  std::size_t plain_commit_rows = 1024;
};

/// The marker of (sink, instance) in table `<table>.sink_commits`: the id of the last checkpoint
/// whose rows are committed, "finished" once the input ended, absent before any commit.
std::string sink_marker_key(const std::string& sink, std::uint32_t instance);

/// One instance of a table sink, on key-value rows. Table `table` and its marker table
/// `<table>.sink_commits` are logged and every commit is synced (durability::power_loss): a
/// committed row survives kill -9 and power loss.
///
/// Once a checkpoint barrier has reached the sink, rows become visible only when a checkpoint
/// that covers them completes, all rows of that commit and the marker in one transaction; a
/// restore commits what the restored snapshot staged unless the marker shows it was committed.
/// A fresh (not restored) instance removes its marker at its first snapshot, so a marker left by
/// an earlier run never hides this run's rows. Within a run checkpoint ids must grow
/// (checkpoint_store::next_id() guarantees it).
class row_sink : public operator_logic {
 public:
  /// Opens (creating when missing) `table` and its marker table on `conn`, which needs the log
  /// enabled (else std::invalid_argument). `info` names the sink instance for the marker.
  row_sink(std::shared_ptr<wt_connection> conn, const std::string& table, const instance_info& info,
           table_sink_options opts = {});
  ~row_sink() override;

  /// Adds one row to the sink's output (an existing key is overwritten when it commits).
  void add(std::string key, std::string value);

  void finish(emitter& out) override;
  void snapshot(state_writer& out) override;
  void restore(state_reader& in) override;
  void on_checkpoint_complete(std::uint64_t id) override;
  /// rows_committed, commits, rows_staged.
  void add_metrics(std::map<std::string, double>& out) const override;

 protected:
  using rows = std::vector<std::pair<std::string, std::string>>;
  /// Called with the rows staged for checkpoint `checkpoint` (0: rows committed without one, in
  /// plain mode or at the end of the input) just before they are written, in the commit's
  /// transaction; may rewrite keys and values. A commit repeated by a restore calls it again for
  /// the same rows and checkpoint. By default rows are written as added.
  virtual void before_commit(std::uint64_t checkpoint, rows& rs) {}
  /// Commits the rows added since the last commit at once, without a checkpoint (plain mode): for
  /// a sink that takes no part in checkpoints but must have everything before a barrier durable.
  void flush();

 private:
  using staged_rows = std::vector<std::pair<std::uint64_t, rows>>;  // rows per checkpoint
  // Commits `groups` and, when `marker` is not empty, sets the marker, in one synced transaction.
  void commit(staged_rows groups, const std::string& marker);
  // The checkpoint id the marker records: 0 when absent, UINT64_MAX when "finished".
  std::uint64_t committed_through();

  struct storage;
  std::unique_ptr<storage> db_;
  std::string marker_key_;
  std::string where_;  // "table sink 'NAME' instance I, table T in 'DIR'", for errors
  table_sink_options opts_;
  bool checkpointing_ = false;                          // a barrier has reached the sink
  bool restored_ = false;                               // restored, or this run's marker is cleared
  rows pending_;                                        // rows since the last snapshot
  staged_rows staged_;                                  // not yet committed
  std::uint64_t rows_committed_ = 0;
  std::uint64_t commits_ = 0;
};

/// A row_sink on elements of type T: the row of x is (key(x), value(x)).
template <class T, class KeyFn, class ValueFn>
class table_sink final : public row_sink {
 public:
  table_sink(std::shared_ptr<wt_connection> conn, const std::string& table,
             const instance_info& info, KeyFn key, ValueFn value, table_sink_options opts = {})
      : row_sink(std::move(conn), table, info, opts),
        key_(std::move(key)),
        value_(std::move(value)) {}

  void process(std::size_t, batch_ptr in, emitter&) override {
    for (const auto& x : static_cast<batch<T>&>(*in).values)
      guarded([&] { add(std::string(key_(x)), std::string(value_(x))); });
  }

 private:
  KeyFn key_;
  ValueFn value_;
};

/// Ends `in` in a table sink writing row (key(x), value(x)) for each element x into `table` of the
/// WiredTiger database in directory `dir` (opened with the log where each instance runs, shared
/// within a process), exactly once when the job checkpoints: see row_sink. key and value are
/// called as f(const T&) and return something convertible to std::string. Instances in different
/// processes cannot share `dir`: gather the stream into one instance, or give each node its own.
template <class T, class KeyFn, class ValueFn>
void write_table(const stream<T>& in, std::string dir, std::string table, KeyFn key,
                 ValueFn value, std::string name = "", table_sink_options opts = {}) {
  static_assert(std::is_convertible_v<std::invoke_result_t<KeyFn&, const T&>, std::string>,
                "write_table(..., key, value): key must be callable as key(const T&) and return the "
                "row key (convertible to std::string)");
  static_assert(std::is_convertible_v<std::invoke_result_t<ValueFn&, const T&>, std::string>,
                "write_table(..., key, value): value must be callable as value(const T&) and return "
                "the row value (convertible to std::string)");
  in.sink(
      "write_table",
      [dir, table, key, value, opts](const instance_info& info) {
        // opened where the instance runs (a node), not where the job is built
        return std::make_unique<table_sink<T, KeyFn, ValueFn>>(
            wt_connection::open_shared(dir, "log=(enabled=true)"), table, info, key, value, opts);
      },
      std::move(name));
}

}  // namespace tidemark::persistence
