// The driver's side of checkpoints (see checkpointing.hpp).
#include "checkpointing.hpp"

#include <algorithm>
#include <mutex>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "tidemark/persistence/checkpoint_store.hpp"
#include "tidemark/persistence/wiredtiger.hpp"
#include "write_queue.hpp"

namespace tidemark::detail {
namespace {

/// FNV-1a over the plan text: stable across builds and platforms, unlike std::hash.
std::string fingerprint(const std::string& text) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

checkpoint_driver::checkpoint_driver(const checkpoint_options& opts, std::string job,
                                     const std::string& plan, std::size_t instances)
    : opts_(opts), job_(std::move(job)), plan_(fingerprint(plan + opts.job_settings)), instances_(instances) {
  if (!opts_.enabled()) return;
  enabled_ = true;
  store_ = std::make_unique<persistence::checkpoint_store>(opts_.dir, opts_.retain);
  writer_ = std::make_unique<write_queue>();
  next_ = clock::now() + opts_.interval;
}

persistence::checkpoint_store& checkpoint_driver::store() {
  if (!store_) store_ = std::make_unique<persistence::checkpoint_store>(opts_.dir, opts_.retain);
  return *store_;
}

void checkpoint_driver::write(std::uint64_t id, std::string what, std::function<void()> f) {
  writer_->post([this, id, what = std::move(what), f = std::move(f)] {
    if (id == write_failed_) return;  // an earlier write of this checkpoint failed
    try {
      f();
    } catch (const persistence::storage_error& e) {
      write_failed_ = id;
      // The store's connection is unusable after a panic; the next write opens it again, so it
      // works once the disk has space (or stops failing).
      if (e.connection_lost()) store_.reset();
      std::lock_guard<std::mutex> lock{outcomes_mutex_};
      outcomes_.push_back({id, what + ": " + e.what()});
    }
  });
}

void checkpoint_driver::fail(std::uint64_t id, const std::string& why) {
  ++failed_;
  ++failed_in_a_row_;
  const auto text = "checkpoint " + std::to_string(id) + " failed: " + why;
  if (first_failure_.empty()) first_failure_ = text;
  spdlog::warn(
      "{} (the job goes on; the previous completed checkpoint stays the one to resume "
      "from)",
      text);
  if (current_ == id) {
    current_ = 0;
    shipped_.clear();
  }
  writing_.erase(id);
  if (opts_.max_consecutive_failures != 0 && failed_in_a_row_ >= opts_.max_consecutive_failures)
    throw job_error(std::to_string(failed_in_a_row_) + " checkpoints in a row failed (the bound " +
                    "is checkpoint_options::max_consecutive_failures); the last: " + text);
}

checkpoint_driver::~checkpoint_driver() = default;

restore_point checkpoint_driver::start_point() {
  restore_point from;
  if (!enabled_) return from;
  const auto existing = store_->list();
  if (!opts_.resume) {
    if (!existing.empty())
      throw job_error("'" + opts_.dir + "' holds checkpoint " + std::to_string(existing.back().id) +
                      " of job '" + existing.back().job +
                      "': pass --resume to continue from it, or remove the directory to start over");
    store_->clear();  // pieces of checkpoints that never completed
    last_id_ = store_->next_id() - 1;
    return from;
  }
  last_id_ = store_->next_id() - 1;
  auto loaded = store_->latest(job_, plan_);
  for (const auto& why : loaded.rejected) spdlog::warn("checkpoint not usable: {}", why);
  if (loaded.record.id == 0) {
    if (!existing.empty()) {
      std::string why = "they belong to job '" + existing.back().job + "'";
      if (!loaded.rejected.empty()) {
        why = "none is usable";
        for (const auto& r : loaded.rejected) why += "; " + r;
      }
      throw job_error("no usable checkpoint of job '" + job_ + "' in '" + opts_.dir + "': " + why);
    }
    spdlog::info("no checkpoint of job '{}' in '{}': starting from the beginning", job_, opts_.dir);
    store_->clear();
    return from;
  }
  spdlog::info("resuming job '{}' from checkpoint {} ({} pieces, {} bytes)", job_,
               loaded.record.id, loaded.record.pieces, loaded.record.bytes);
  from.checkpoint = loaded.record.id;
  from.pieces = std::move(loaded.pieces);
  remember(from);
  return from;
}

restore_point checkpoint_driver::recover() {
  restore_point from;
  if (!enabled_) return from;
  settle();  // a checkpoint recorded meanwhile is one to restore from
  if (current_ != 0) spdlog::info("checkpoint {} abandoned: the job restarts", current_);
  current_ = 0;
  shipped_.clear();
  for (auto it = writing_.begin(); it != writing_.end();)  // its holders' answers are moot now
    if (it->second.awaiting.empty()) {
      ++it;
    } else {
      spdlog::info("checkpoint {} abandoned before its copies were durable: the job restarts",
                   it->first);
      it = writing_.erase(it);
    }
  next_ = clock::now() + opts_.interval;
  auto loaded = store().latest(job_, plan_);
  for (const auto& why : loaded.rejected) spdlog::warn("checkpoint not usable: {}", why);
  from.checkpoint = loaded.record.id;
  from.pieces = std::move(loaded.pieces);
  remember(from);
  return from;
}

restore_point checkpoint_driver::latest() const {
  restore_point from;
  if (!enabled_) return from;
  if (!keep_latest_) throw std::logic_error("checkpoint_driver::latest() needs keep_latest()");
  from.checkpoint = latest_id_;
  for (const auto& [k, bytes] : latest_) from.pieces.emplace(k, *bytes);
  return from;
}

void checkpoint_driver::remember(const restore_point& from) {
  if (!keep_latest_) return;
  latest_id_ = from.checkpoint;
  latest_.clear();
  for (const auto& [k, bytes] : from.pieces) latest_.emplace(k, std::make_shared<const std::string>(bytes));
}

void checkpoint_driver::settle() {
  writer_->drain();
  (void)collect();
}

void checkpoint_driver::warn_unreplayable(const std::vector<std::string>& sources,
                                          job_result& result) const {
  if (!enabled_) return;
  for (const auto& name : sources) {
    result.warnings.push_back("source '" + name +
                              "' cannot replay: after a crash, what it read since the last "
                              "checkpoint is not read again");
    spdlog::warn("{}", result.warnings.back());
  }
}

std::chrono::milliseconds checkpoint_driver::poll(const std::function<void(std::uint64_t)>& inject) {
  constexpr std::chrono::milliseconds never = std::chrono::hours{1};
  if (!enabled_) return never;
  // while the writer works, the caller looks again soon for what became durable (collect)
  constexpr std::chrono::milliseconds soon{2};
  const auto now = clock::now();
  std::vector<std::uint64_t> overdue;  // copies not durable in time
  for (const auto& [id, w] : writing_)
    if (!w.awaiting.empty() && now >= w.deadline) overdue.push_back(id);
  for (auto id : overdue) {
    std::string holders;
    for (const auto& h : writing_[id].awaiting) holders += (holders.empty() ? "'" : ", '") + h + "'";
    fail(id, "node " + holders + " did not confirm its copy within " +
                 std::to_string(copy_timeout_.count()) + " ms");
  }
  const bool writing = !writing_.empty() || writer_->busy();
  // one checkpoint at a time, the next once the last one's record is durable: a disk slower than
  // the interval spaces the checkpoints out instead of queueing their pieces in memory
  if (current_ == 0 && writing_.empty() && now >= next_) {
    current_ = ++last_id_;
    started_ = now;
    received_.clear();
    progress_ = {};
    progress_.id = current_;
    collecting_.clear();
    shipped_.clear();
    next_ = now + opts_.interval;
    inject(current_);
  }
  if (writing) return soon;
  if (current_ != 0) return never;  // the next one starts after this one completes
  return std::chrono::duration_cast<std::chrono::milliseconds>(next_ - now) + std::chrono::milliseconds{1};
}

void checkpoint_driver::on_piece(std::uint32_t stage, std::uint32_t instance, std::uint64_t id,
                                 std::string state, double alignment_ms) {
  if (!enabled_ || id != current_) return;  // an abandoned or failed checkpoint
  // replicas of an instance snapshot at the same barrier: the first copy's piece is kept
  if (received_.count({stage, instance})) return;
  received_.insert({stage, instance});
  progress_.bytes += state.size();
  progress_.alignment_ms = std::max(progress_.alignment_ms, alignment_ms);
  auto bytes = std::make_shared<const std::string>(std::move(state));
  if (keep_latest_) collecting_.emplace(std::make_pair(stage, instance), bytes);
  write(id,
        "writing the piece of stage " + std::to_string(stage) + " instance " +
            std::to_string(instance),
        [this, id, stage, instance, bytes] { store().put_piece(id, stage, instance, *bytes); });
  if (shipping_)
    for (auto& holder : shipping_->piece(id, stage, instance, *bytes)) ++shipped_[holder];
  if (received_.size() < instances_) return;
  progress_.pieces = static_cast<std::uint32_t>(received_.size());
  progress_.duration_ms = std::chrono::duration<double, std::milli>(clock::now() - started_).count();
  writing w{progress_, std::move(collecting_), {}, {}, clock::now() + copy_timeout_};
  auto& r = w.record;
  r.id = current_;
  r.job = job_;
  r.plan = plan_;
  r.pieces = progress_.pieces;
  r.bytes = progress_.bytes;
  r.completed_ms = wall_ms();
  r.duration_ms = progress_.duration_ms;
  r.alignment_ms = progress_.alignment_ms;
  for (const auto& [holder, pieces] : std::exchange(shipped_, {})) {
    r.holders.push_back(holder);
    w.awaiting.insert(holder);
    shipping_->record(id, holder, pieces);
  }
  if (w.awaiting.empty()) write_record(w);
  writing_[id] = std::move(w);
  collecting_.clear();
  current_ = 0;
}

void checkpoint_driver::write_record(const writing& w) {
  // complete() commits the record synced before anything else: when it throws, the record is
  // not durable (a failure in the retention after it is harmless, the next complete() redoes
  // it), so the checkpoint is not reported complete and no sink commits it
  write(w.record.id, "recording it", [this, r = w.record] {
    store().complete(r);
    std::lock_guard<std::mutex> lock{outcomes_mutex_};
    outcomes_.push_back({r.id, {}});
  });
}

void checkpoint_driver::ship_copies(copy_shipping shipping, std::chrono::milliseconds timeout) {
  shipping_ = std::move(shipping);
  copy_timeout_ = timeout;
}

void checkpoint_driver::on_copy_durable(std::uint64_t id, const std::string& holder,
                                        const std::string& error) {
  auto it = writing_.find(id);
  if (it == writing_.end() || !it->second.awaiting.erase(holder)) return;  // failed already
  if (!error.empty()) {
    fail(id, "node '" + holder + "' could not keep its copy: " + error);
    return;
  }
  if (it->second.awaiting.empty()) write_record(it->second);
}

void checkpoint_driver::holder_lost(const std::string& holder) {
  if (current_ != 0 && shipped_.count(holder)) {
    shipped_.clear();
    fail(current_, "node '" + holder + "', which was to keep a copy of it, was lost");
  }
  std::vector<std::uint64_t> waiting;
  for (const auto& [id, w] : writing_)
    if (w.awaiting.count(holder)) waiting.push_back(id);
  for (auto id : waiting)
    fail(id, "node '" + holder + "', which was to keep a copy of it, was lost before it was durable");
}

bool checkpoint_driver::nothing_to_resume() {
  return enabled_ && opts_.resume && store_->list().empty();
}

void checkpoint_driver::adopt(
    const persistence::checkpoint_record& record,
    const std::map<std::pair<std::uint32_t, std::uint32_t>, std::string>& pieces) {
  for (const auto& [k, bytes] : pieces) store_->put_piece(record.id, k.first, k.second, bytes);
  store_->complete(record);
}

std::vector<std::uint64_t> checkpoint_driver::collect() {
  std::vector<std::uint64_t> durable;
  if (!enabled_) return durable;
  std::vector<outcome> done;
  {
    std::lock_guard<std::mutex> lock{outcomes_mutex_};
    done.swap(outcomes_);
  }
  for (auto& o : done) {
    if (!o.error.empty()) {
      fail(o.id, o.error);
      continue;
    }
    auto it = writing_.find(o.id);
    if (it == writing_.end()) continue;
    failed_in_a_row_ = 0;
    completed_.push_back(it->second.metrics);
    if (keep_latest_) {
      latest_id_ = o.id;
      latest_ = std::move(it->second.pieces);
    }
    writing_.erase(it);
    spdlog::debug("checkpoint {} complete: {} pieces, {} bytes, {:.1f} ms", o.id,
                  completed_.back().pieces, completed_.back().bytes,
                  completed_.back().duration_ms);
    durable.push_back(o.id);
    // a checkpoint that took longer than the interval is followed at once, not by a burst
    next_ = std::max(next_, clock::now());
  }
  return durable;
}

void checkpoint_driver::finished() {
  if (!enabled_) return;
  writer_->drain();  // nothing of the run is written after the cleanup
  try {
    store().clear();
  } catch (const persistence::storage_error& e) {
    // the results are complete; only the cleanup failed
    spdlog::warn(
        "job '{}' finished, but its checkpoints in '{}' could not be removed ({}); "
        "remove the directory before the job's next run",
        job_, opts_.dir, e.what());
    return;
  }
  spdlog::info("job '{}' finished: its checkpoints in '{}' were removed", job_, opts_.dir);
}

}  // namespace tidemark::detail
