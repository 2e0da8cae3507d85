// The table sink's two-phase commit: rows staged per checkpoint in the snapshot, committed with
// the (sink, instance) marker in one synced transaction when the checkpoint completes.
#include "tidemark/persistence/table_sink.hpp"

#include <cstdlib>
#include <limits>

#include "store_support.hpp"
#include "tidemark/core/state.hpp"

namespace tidemark::persistence {

namespace {
constexpr durability level = durability::power_loss;
constexpr std::uint64_t finished = std::numeric_limits<std::uint64_t>::max();
const std::string finished_marker = "finished";
}  // namespace

std::string sink_marker_key(const std::string& sink, std::uint32_t instance) {
  std::string k = sink;
  k += '\0';
  k += std::to_string(instance);
  return k;
}

struct row_sink::storage {
  wt_session session;
  wt_cursor table;
  wt_cursor markers;
};

row_sink::row_sink(std::shared_ptr<wt_connection> conn, const std::string& table,
                   const instance_info& info, table_sink_options opts)
    : marker_key_(sink_marker_key(info.name, info.index)),
      where_("table sink '" + info.name + "' instance " + std::to_string(info.index) + ", table " +
             table + " in '" + conn->home() + "'"),
      opts_(opts) {
  detail::validate_store_name("table sink", table);
  auto session = conn->open_session();
  auto rows_cursor = detail::open_bytes_table(session, "table sink", "table:" + table, level);
  auto markers =
      detail::open_bytes_table(session, "table sink", "table:" + table + ".sink_commits", level);
  db_ = std::make_unique<storage>(
      storage{std::move(session), std::move(rows_cursor), std::move(markers)});
}

row_sink::~row_sink() = default;

void row_sink::add(std::string key, std::string value) {
  pending_.emplace_back(std::move(key), std::move(value));
  if (!checkpointing_ && pending_.size() >= opts_.plain_commit_rows) flush();
}

void row_sink::flush() {
  if (pending_.empty()) return;
  commit({{0, pending_}}, {});
  pending_.clear();
}

void row_sink::commit(staged_rows groups, const std::string& marker) {
  // One transaction: a failed commit leaves none of its rows and the old marker. It is not
  // retried: the checkpoint is complete and cannot be taken back, so a job whose sink cannot
  // commit stops, and a resumed run commits these rows from the checkpoint's snapshot.
  std::size_t count = 0;
  for (const auto& group : groups) count += group.second.size();
  try {
    wt_transaction tx{db_->session};
    for (auto& [id, rs] : groups) {
      before_commit(id, rs);
      for (const auto& [k, v] : rs) {
        db_->table.set_key(k);
        db_->table.set_value(v);
        db_->table.insert();
      }
    }
    if (!marker.empty()) {
      db_->markers.set_key(marker_key_);
      db_->markers.set_value(marker);
      db_->markers.insert();
    }
    detail::commit_at(tx, db_->session, level);
  } catch (const storage_error& e) {
    throw storage_error(e.code(), where_ + ": committing " + std::to_string(count) + " rows" +
                                      (marker.empty() ? "" : " up to checkpoint " + marker) +
                                      " failed, none of them is in the table: " + e.what());
  }
  rows_committed_ += count;
  ++commits_;
}

std::uint64_t row_sink::committed_through() {
  db_->markers.set_key(marker_key_);
  std::uint64_t id = 0;
  if (db_->markers.search()) {
    auto v = std::string{db_->markers.value()};
    id = v == finished_marker ? finished : std::strtoull(v.c_str(), nullptr, 10);
  }
  db_->markers.reset();
  return id;
}

void row_sink::finish(emitter&) {
  auto all = staged_;  // copies: a commit that fails leaves everything staged
  all.emplace_back(0, pending_);
  commit(std::move(all), finished_marker);
  staged_.clear();
  pending_.clear();
}

void row_sink::snapshot(state_writer& out) {
  checkpointing_ = true;
  if (!restored_) {
    // A marker left by an earlier run of the job (even "finished") must not make a restore of
    // this run skip rows: it goes before this run's first checkpoint can complete.
    wt_transaction tx{db_->session};
    db_->markers.set_key(marker_key_);
    db_->markers.remove();
    detail::commit_at(tx, db_->session, level);
    restored_ = true;
  }
  if (!pending_.empty()) staged_.emplace_back(out.checkpoint(), std::move(pending_));
  pending_.clear();
  out.write(staged_);
}

void row_sink::restore(state_reader& in) {
  checkpointing_ = true;
  restored_ = true;
  in.read(staged_);
  // Every checkpoint staged here is <= in.checkpoint(), which completed: commit those the marker
  // does not cover yet. The marker moves to in.checkpoint() in the same transaction, so restoring
  // from these bytes again commits nothing.
  const auto through = committed_through();
  staged_rows todo;
  for (auto& group : staged_)
    if (group.first > through && !group.second.empty()) todo.push_back(group);
  if (!todo.empty()) commit(std::move(todo), std::to_string(in.checkpoint()));
  staged_.clear();
}

void row_sink::on_checkpoint_complete(std::uint64_t id) {
  staged_rows todo;
  std::size_t done = 0;
  for (; done < staged_.size() && staged_[done].first <= id; ++done)
    if (!staged_[done].second.empty()) todo.push_back(staged_[done]);  // kept until committed
  if (!todo.empty()) commit(std::move(todo), std::to_string(id));  // nothing staged: no fsync
  staged_.erase(staged_.begin(), staged_.begin() + static_cast<std::ptrdiff_t>(done));
}

void row_sink::add_metrics(std::map<std::string, double>& out) const {
  out["rows_committed"] = static_cast<double>(rows_committed_);
  out["commits"] = static_cast<double>(commits_);
  std::size_t staged = pending_.size();
  for (const auto& [id, rs] : staged_) staged += rs.size();
  out["rows_staged"] = static_cast<double>(staged);
}

}  // namespace tidemark::persistence
