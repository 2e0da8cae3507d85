// The sinks that write one text line per element (stream::print, stream::write_lines). A
// line_writer shared by a sink's instances owns the output, so <iostream> and <fstream> stay in
// lines_sink.cpp instead of reaching every user of the API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "tidemark/core/operator.hpp"
#include "tidemark/core/state.hpp"

namespace tidemark::ops {

/// One output shared by all instances of a lines sink: standard output, or a file that the first
/// instance to start opens. Writes of whole batches do not interleave. A file is emptied before
/// its first write (or at flush() when nothing was written) unless restore_to() set its length
/// first, so a job that starts afresh overwrites the file and a restored one continues it.
class line_writer {
 public:
  /// A writer on standard output.
  static std::shared_ptr<line_writer> to_stdout();

  line_writer();
  ~line_writer();
  line_writer(const line_writer&) = delete;
  line_writer& operator=(const line_writer&) = delete;

  /// Opens `path` for writing (creating it) unless the writer is already open; throws job_error
  /// naming the operator `op` when it cannot.
  void open(const std::string& path, const std::string& op);
  /// Whether this writer writes a file (not standard output).
  bool is_file() const noexcept { return fd_ >= 0; }
  /// Appends `text` (whole lines) in one piece.
  void write(const std::string& text);
  /// Hands buffered text to the operating system (standard output) or empties a file nothing
  /// was written to.
  void flush();
  /// Makes every byte written so far durable (fsync of the file, and of its directory the first
  /// time); throws job_error when the file system refuses.
  void sync();
  /// The file's length as this writer left it.
  std::uint64_t size();
  /// Cuts the file to its first `length` bytes (what a restored checkpoint committed). Throws
  /// job_error naming `op` and `checkpoint` when the file is shorter: it changed outside the job.
  void restore_to(std::uint64_t length, const std::string& op, std::uint64_t checkpoint);

 private:
  void start_file();  // empties the file unless positioned; mutex_ held
  [[noreturn]] void fail(const char* what);

  std::mutex mutex_;
  std::ostream* out_ = nullptr;  // standard output
  int fd_ = -1;                  // a file, opened with O_APPEND
  std::string path_;
  bool positioned_ = false;  // emptied or restored: later writes append
  bool dirty_ = false;       // written since the last sync
  bool synced_once_ = false;
  std::uint64_t size_ = 0;
};

/// Writes one line per element through `format(const T&) -> std::string` to a line_writer.
///
/// print (standard output) writes every line at once: at-least-once after a restore. A file
/// (write_lines) takes part in checkpoints once the first barrier reaches it: from then on the
/// lines since the last checkpoint are staged in the snapshot and appended (and fsynced) when a
/// checkpoint covering them completes; a restore cuts the file to what was committed when the
/// restored snapshot was taken and appends what it staged, so the file holds each line exactly
/// once. Lines before the first barrier are written at once: a crash before the first
/// checkpoint completes restarts the job afresh, which empties the file. Only one instance may
/// write a checkpointed file (snapshot throws job_error otherwise).
template <class T, class Format>
class lines_sink final : public operator_logic {
 public:
  lines_sink(std::shared_ptr<line_writer> w, Format f, instance_info info = {})
      : writer_(std::move(w)), format_(std::move(f)), info_(std::move(info)) {}

  void process(std::size_t, batch_ptr in, emitter&) override {
    std::string text;
    for (const auto& x : static_cast<batch<T>&>(*in).values)
      guarded([&] {
        text += format_(x);
        text += '\n';
      });
    if (checkpointing_)
      pending_ += text;
    else
      writer_->write(text);
  }

  void finish(emitter&) override {
    if (!checkpointing_) {
      writer_->flush();
      return;
    }
    // the end of the input commits what no checkpoint covers yet
    staged_.emplace_back(std::numeric_limits<std::uint64_t>::max(), std::move(pending_));
    pending_.clear();
    commit(staged_.size());
  }

  void snapshot(state_writer& out) override {
    if (!writer_->is_file()) return;
    if (info_.parallelism > 1)
      throw job_error("write_lines '" + info_.name + "': " + std::to_string(info_.parallelism) +
                      " instances write one file, which a checkpoint cannot restore; give the "
                      "stream parallelism 1 before write_lines, or use a table sink");
    checkpointing_ = true;
    if (!pending_.empty()) staged_.emplace_back(out.checkpoint(), std::move(pending_));
    pending_.clear();
    writer_->sync();  // lines written before the first barrier belong to what this commits
    out.write(writer_->size());
    out.write(staged_);
  }

  void restore(state_reader& in) override {
    if (!writer_->is_file()) return;
    checkpointing_ = true;
    auto length = in.read<std::uint64_t>();
    in.read(staged_);
    writer_->restore_to(length, info_.name, in.checkpoint());
    commit(staged_.size());  // all staged checkpoints are <= the restored one, so complete
  }

  void on_checkpoint_complete(std::uint64_t id) override {
    std::size_t n = 0;
    while (n < staged_.size() && staged_[n].first <= id) ++n;
    commit(n);
  }

 private:
  // Appends the first `n` staged texts and makes them durable.
  void commit(std::size_t n) {
    if (n == 0) return;
    std::string text;
    for (std::size_t i = 0; i < n; ++i) text += staged_[i].second;
    writer_->write(text);
    writer_->sync();
    staged_.erase(staged_.begin(), staged_.begin() + static_cast<std::ptrdiff_t>(n));
  }

  std::shared_ptr<line_writer> writer_;
  Format format_;
  instance_info info_;
  bool checkpointing_ = false;                                 // a barrier reached this file sink
  std::string pending_;                                        // lines since the last snapshot
  std::vector<std::pair<std::uint64_t, std::string>> staged_;  // per checkpoint, not committed
};

}  // namespace tidemark::ops
