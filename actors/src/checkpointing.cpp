// The driver's side of checkpoints (see checkpointing.hpp).
#include "checkpointing.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "tidemark/persistence/checkpoint_store.hpp"
#include "tidemark/persistence/wiredtiger.hpp"

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
  next_ = clock::now() + opts_.interval;
}

persistence::checkpoint_store& checkpoint_driver::store() {
  if (!store_) store_ = std::make_unique<persistence::checkpoint_store>(opts_.dir, opts_.retain);
  return *store_;
}

void checkpoint_driver::fail(std::uint64_t id, const std::string& why, bool reopen) {
  ++failed_;
  ++failed_in_a_row_;
  const auto text = "checkpoint " + std::to_string(id) + " failed: " + why;
  if (first_failure_.empty()) first_failure_ = text;
  spdlog::warn(
      "{} (the job goes on; the previous completed checkpoint stays the one to resume "
      "from)",
      text);
  current_ = 0;
  // The store's connection is unusable after a panic; the next checkpoint opens it again, so it
  // works once the disk has space (or stops failing).
  if (reopen) store_.reset();
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
    return from;
  }
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
  return from;
}

restore_point checkpoint_driver::recover() {
  restore_point from;
  if (!enabled_) return from;
  if (current_ != 0) spdlog::info("checkpoint {} abandoned: the job restarts", current_);
  current_ = 0;
  stopped_ = false;
  next_ = clock::now() + opts_.interval;
  auto loaded = store().latest(job_, plan_);
  for (const auto& why : loaded.rejected) spdlog::warn("checkpoint not usable: {}", why);
  from.checkpoint = loaded.record.id;
  from.pieces = std::move(loaded.pieces);
  return from;
}

restore_point checkpoint_driver::latest() {
  restore_point from;
  if (!enabled_) return from;
  auto loaded = store().latest(job_, plan_);
  from.checkpoint = loaded.record.id;
  from.pieces = std::move(loaded.pieces);
  return from;
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
  if (!enabled_ || stopped_) return never;
  const auto now = clock::now();
  if (current_ == 0 && now >= next_) {
    std::uint64_t id = last_id_ + 1;
    try {
      id = std::max(id, store().next_id());
    } catch (const persistence::storage_error& e) {
      last_id_ = id;
      next_ = now + opts_.interval;
      fail(id, e.what(), true);  // the store cannot even be opened: try at the next interval
      return opts_.interval;
    }
    last_id_ = id;
    current_ = id;
    started_ = now;
    received_.clear();
    progress_ = {};
    progress_.id = current_;
    next_ = now + opts_.interval;
    inject(current_);
  }
  if (current_ != 0) return never;  // the next one starts after this one completes
  return std::chrono::duration_cast<std::chrono::milliseconds>(next_ - now) + std::chrono::milliseconds{1};
}

bool checkpoint_driver::on_piece(std::uint32_t stage, std::uint32_t instance, std::uint64_t id,
                                 std::string_view state, double alignment_ms) {
  if (!enabled_ || id != current_) return false;  // an abandoned or failed checkpoint
  // replicas of an instance snapshot at the same barrier: the first copy's piece is kept
  if (received_.count({stage, instance})) return false;
  try {
    store_->put_piece(id, stage, instance, state);
  } catch (const persistence::storage_error& e) {
    fail(id,
         "writing the piece of stage " + std::to_string(stage) + " instance " +
             std::to_string(instance) + ": " + e.what(),
         e.connection_lost());
    return false;
  }
  received_.insert({stage, instance});
  progress_.bytes += state.size();
  progress_.alignment_ms = std::max(progress_.alignment_ms, alignment_ms);
  if (received_.size() < instances_) return false;
  progress_.pieces = static_cast<std::uint32_t>(received_.size());
  progress_.duration_ms = std::chrono::duration<double, std::milli>(clock::now() - started_).count();
  persistence::checkpoint_record r;
  r.id = current_;
  r.job = job_;
  r.plan = plan_;
  r.pieces = progress_.pieces;
  r.bytes = progress_.bytes;
  r.completed_ms = wall_ms();
  r.duration_ms = progress_.duration_ms;
  r.alignment_ms = progress_.alignment_ms;
  try {
    store_->complete(r);
  } catch (const persistence::storage_error& e) {
    // complete() commits the record synced before anything else: when it throws, the record is
    // not durable (a failure in the retention after it is harmless, the next complete() redoes
    // it), so the checkpoint is not reported complete and no sink commits it
    fail(id, "recording it: " + std::string{e.what()}, e.connection_lost());
    return false;
  }
  failed_in_a_row_ = 0;
  completed_.push_back(progress_);
  spdlog::debug("checkpoint {} complete: {} pieces, {} bytes, {:.1f} ms", r.id, r.pieces, r.bytes,
                r.duration_ms);
  current_ = 0;
  // a checkpoint that took longer than the interval is followed at once, not by a burst
  next_ = std::max(next_, clock::now());
  return true;
}

void checkpoint_driver::on_done(std::uint32_t stage, std::uint32_t instance) {
  stopped_ = true;
  if (current_ != 0 && !received_.count({stage, instance})) {
    spdlog::debug("checkpoint {} abandoned: stage {} instance {} finished before its barrier",
                  current_, stage, instance);
    current_ = 0;
  }
}

void checkpoint_driver::finished() {
  if (!enabled_) return;
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
