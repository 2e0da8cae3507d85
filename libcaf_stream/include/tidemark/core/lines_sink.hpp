// The sinks that write one text line per element (stream::print, stream::write_lines). A
// line_writer shared by a sink's instances owns the output, so <iostream> and <fstream> stay in
// lines_sink.cpp instead of reaching every user of the API.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "tidemark/core/operator.hpp"

namespace tidemark::ops {

/// One output shared by all instances of a lines sink: standard output, or a file that the first
/// instance to start opens. Writes of whole batches do not interleave.
class line_writer {
 public:
  /// A writer on standard output.
  static std::shared_ptr<line_writer> to_stdout();

  line_writer();
  ~line_writer();
  line_writer(const line_writer&) = delete;
  line_writer& operator=(const line_writer&) = delete;

  /// Opens `path` for writing unless the writer is already open; throws job_error naming the
  /// operator `op` when it cannot.
  void open(const std::string& path, const std::string& op);
  /// Appends `text` (whole lines) in one piece.
  void write(const std::string& text);
  void flush();

 private:
  std::mutex mutex_;
  std::ostream* out_ = nullptr;
  std::unique_ptr<std::ofstream> file_;
};

/// Writes one line per element through `format(const T&) -> std::string` to a line_writer.
template <class T, class Format>
class lines_sink final : public operator_logic {
 public:
  lines_sink(std::shared_ptr<line_writer> w, Format f) : writer_(std::move(w)), format_(std::move(f)) {}

  void process(std::size_t, batch_ptr in, emitter&) override {
    std::string text;
    for (const auto& x : static_cast<batch<T>&>(*in).values)
      guarded([&] {
        text += format_(x);
        text += '\n';
      });
    writer_->write(text);
  }

  void finish(emitter&) override { writer_->flush(); }

 private:
  std::shared_ptr<line_writer> writer_;
  Format format_;
};

}  // namespace tidemark::ops
