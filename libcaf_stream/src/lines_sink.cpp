// The output behind the lines sinks: standard output or one file shared by a sink's instances.
#include "tidemark/core/lines_sink.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>

namespace tidemark::ops {

std::shared_ptr<line_writer> line_writer::to_stdout() {
  auto w = std::make_shared<line_writer>();
  w->out_ = &std::cout;
  return w;
}

line_writer::line_writer() = default;
line_writer::~line_writer() = default;

void line_writer::open(const std::string& path, const std::string& op) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (out_) return;
  auto file = std::make_unique<std::ofstream>(path);
  if (!*file)
    throw job_error("operator '" + op + "': cannot open '" + path + "' for writing: " +
                    std::strerror(errno));
  file_ = std::move(file);
  out_ = file_.get();
}

void line_writer::write(const std::string& text) {
  std::lock_guard<std::mutex> guard{mutex_};
  *out_ << text;
}

void line_writer::flush() {
  std::lock_guard<std::mutex> guard{mutex_};
  out_->flush();
}

}  // namespace tidemark::ops
