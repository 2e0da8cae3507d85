// The history of a job's results for the chaos checker: every result a sink commits, appended
// with its receive and commit times, checkpoint and the sink's watermark, so that a result
// written twice shows twice (a keyed results table would hide the repeat).
// docs/fault-injection.md, "The history".
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tidemark/core/job.hpp"
#include "tidemark/persistence/table_sink.hpp"

namespace tidemark::chaos {

/// How a history sink writes.
enum class history_mode {
  /// Two-phase: a result is appended when the checkpoint covering it completes (or at the end of
  /// the input; without checkpoints everything is appended at the end), once.
  exactly_once,
  /// On arrival, in small commits, without taking part in checkpoints: after a recovery the
  /// replayed results are appended again. The deliberately broken sink of the negative control.
  at_least_once,
};

/// "exactly-once" or "at-least-once"; parse_history_mode throws std::invalid_argument otherwise.
const char* to_string(history_mode m) noexcept;
history_mode parse_history_mode(const std::string& text);

/// One committed result.
struct history_entry {
  std::string id;              ///< the result's identity, e.g. a key and a window
  std::uint32_t revision = 0;  ///< its revision (0, 1, ... for late re-firings)
  std::string value;
  std::int64_t commit_ms = 0;  ///< wall clock (ms since the epoch) of the commit
  /// Wall clock when the sink instance received the result from the pipeline (the result's
  /// emission); commit_ms - received_ms is the result's emission-to-commit latency. A result that
  /// a restore re-committed keeps the time it was received before the snapshot.
  std::int64_t received_ms = 0;
  std::uint64_t checkpoint = 0;  ///< the checkpoint that committed it (0: none)
  /// The sink instance's watermark at the commit (for a checkpoint: when its snapshot was taken),
  /// start_of_time before the first watermark.
  std::int64_t watermark = 0;
  std::string writer;  ///< sink name and instance, "history/0"
};

/// One history sink instance over (id, revision, value) triples. Each process writes its own
/// WiredTiger database under the history directory (DIR/p<pid>-<random>), so nodes that share a
/// directory never contend for it and a killed node's commits stay readable; read_history merges
/// them. A commit repeated by a restore rewrites the same rows, so it does not count twice.
class history_sink : public persistence::row_sink {
 public:
  history_sink(const std::string& dir, const instance_info& info, history_mode mode);

  /// Records one result.
  void add_result(const std::string& id, std::uint32_t revision, const std::string& value);

  void on_watermark(event_time wm, emitter& out) override;
  void snapshot(state_writer& out) override;
  void restore(state_reader& in) override;
  void on_checkpoint_complete(std::uint64_t id) override;

 protected:
  void before_commit(std::uint64_t checkpoint, rows& rs) override;

 private:
  history_mode mode_;
  std::string writer_;
  std::uint64_t incarnation_;  // random: rows committed without a checkpoint get unique keys
  std::uint64_t plain_commits_ = 0;
  event_time watermark_ = start_of_time;
  // the watermark at each staged checkpoint's snapshot, until it commits
  std::vector<std::pair<std::uint64_t, event_time>> snapshot_watermarks_;
};

/// A history_sink on elements of type T.
template <class T, class IdFn, class RevisionFn, class ValueFn>
class typed_history_sink final : public history_sink {
 public:
  typed_history_sink(const std::string& dir, const instance_info& info, history_mode mode, IdFn id,
                     RevisionFn revision, ValueFn value)
      : history_sink(dir, info, mode),
        id_(std::move(id)),
        revision_(std::move(revision)),
        value_(std::move(value)) {}

  void process(std::size_t, batch_ptr in, emitter&) override {
    for (const auto& x : static_cast<batch<T>&>(*in).values)
      guarded([&] {
        add_result(std::string(id_(x)), static_cast<std::uint32_t>(revision_(x)),
                   std::string(value_(x)));
      });
  }

 private:
  IdFn id_;
  RevisionFn revision_;
  ValueFn value_;
};

/// Ends `in` in a history sink appending (id(x), revision(x), value(x)) of every element x to
/// the history in directory `dir` (created where the sink runs). id and value return something
/// convertible to std::string, revision an integer. With checkpoints and `exactly_once` each
/// result is appended once, when its checkpoint completes.
template <class T, class IdFn, class RevisionFn, class ValueFn>
void record(const stream<T>& in, std::string dir, IdFn id, RevisionFn revision, ValueFn value,
            history_mode mode = history_mode::exactly_once, std::string name = "history") {
  static_assert(std::is_convertible_v<std::invoke_result_t<IdFn&, const T&>, std::string>,
                "record(..., id, revision, value): id must be callable as id(const T&) and return "
                "the result's identity (convertible to std::string)");
  static_assert(std::is_integral_v<std::decay_t<std::invoke_result_t<RevisionFn&, const T&>>>,
                "record(..., id, revision, value): revision must be callable as revision(const T&) "
                "and return an integer");
  static_assert(std::is_convertible_v<std::invoke_result_t<ValueFn&, const T&>, std::string>,
                "record(..., id, revision, value): value must be callable as value(const T&) and "
                "return the result's value (convertible to std::string)");
  in.sink(
      "history",
      [dir, id, revision, value, mode](const instance_info& info) {
        return std::make_unique<typed_history_sink<T, IdFn, RevisionFn, ValueFn>>(
            dir, info, mode, id, revision, value);
      },
      std::move(name));
}

/// Every entry of the history in `dir` (all processes' databases), in commit order (commit time,
/// then checkpoint and position in the commit); a commit that a restore repeated counts once.
/// Waits up to 10 s for a process that still holds its database to let go. An empty or missing
/// directory gives no entries.
std::vector<history_entry> read_history(const std::string& dir);

}  // namespace tidemark::chaos
