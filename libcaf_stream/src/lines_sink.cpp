// The output behind the lines sinks: standard output, or one file shared by a sink's instances,
// written with POSIX calls so that a checkpoint commit can fsync it and a restore can cut it.
#include "tidemark/core/lines_sink.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

namespace tidemark::ops {

std::shared_ptr<line_writer> line_writer::to_stdout() {
  auto w = std::make_shared<line_writer>();
  w->out_ = &std::cout;
  return w;
}

line_writer::line_writer() = default;

line_writer::~line_writer() {
  if (fd_ >= 0) ::close(fd_);
}

void line_writer::fail(const char* what) {
  throw job_error(std::string{what} + " '" + path_ + "': " + std::strerror(errno));
}

void line_writer::open(const std::string& path, const std::string& op) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (out_ || fd_ >= 0) return;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    throw job_error("operator '" + op + "': cannot open '" + path +
                    "' for writing: " + std::strerror(errno));
  fd_ = fd;
  path_ = path;
}

void line_writer::start_file() {
  if (positioned_) return;
  if (::ftruncate(fd_, 0) != 0) fail("emptying");
  positioned_ = true;
  size_ = 0;
}

void line_writer::write(const std::string& text) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (out_) {
    *out_ << text;
    return;
  }
  start_file();
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    auto n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("writing");
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  size_ += text.size();
  dirty_ = dirty_ || !text.empty();
}

void line_writer::flush() {
  std::lock_guard<std::mutex> guard{mutex_};
  if (out_)
    out_->flush();
  else
    start_file();
}

void line_writer::sync() {
  std::lock_guard<std::mutex> guard{mutex_};
  if (out_) {
    out_->flush();
    return;
  }
  start_file();
  if (dirty_ && ::fsync(fd_) != 0) fail("syncing");
  dirty_ = false;
  if (!synced_once_) {
    // a new file's name is durable only once its directory is synced
    auto dir = std::filesystem::path{path_}.parent_path();
    int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) fail("opening the directory of");
    int rc = ::fsync(dfd);
    ::close(dfd);
    if (rc != 0) fail("syncing the directory of");
    synced_once_ = true;
  }
}

std::uint64_t line_writer::size() {
  std::lock_guard<std::mutex> guard{mutex_};
  return size_;
}

void line_writer::restore_to(std::uint64_t length, const std::string& op,
                             std::uint64_t checkpoint) {
  std::lock_guard<std::mutex> guard{mutex_};
  struct stat st {};
  if (::fstat(fd_, &st) != 0) fail("reading the length of");
  const auto have = static_cast<std::uint64_t>(st.st_size);
  if (have < length)
    throw job_error("write_lines '" + op + "': '" + path_ + "' holds " + std::to_string(have) +
                    " bytes, fewer than the " + std::to_string(length) + " that checkpoint " +
                    std::to_string(checkpoint) +
                    " committed: the file changed outside the job; put it back or start the job "
                    "afresh");
  if (have > length && ::ftruncate(fd_, static_cast<off_t>(length)) != 0) fail("cutting");
  positioned_ = true;
  dirty_ = have > length;
  size_ = length;
}

}  // namespace tidemark::ops
