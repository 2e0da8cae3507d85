#include "tidemark/core/operators.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "tidemark/core/job.hpp"
#include "tidemark/core/state.hpp"

namespace tidemark {

std::atomic<std::int64_t> batch_gauge::live_{0};
std::atomic<std::int64_t> batch_gauge::peak_{0};

void batch_gauge::created() noexcept {
  auto now = live_.fetch_add(1, std::memory_order_relaxed) + 1;
  auto peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

namespace {
thread_local bool replaying = false;
}  // namespace

bool replaying_generator() noexcept { return replaying; }

detail::replaying_scope::replaying_scope() noexcept : before_(replaying) { replaying = true; }
detail::replaying_scope::~replaying_scope() { replaying = before_; }

namespace ops {
namespace {

/// Lines of a text file (without the newline); instance k of p reads lines k, k+p, k+2p, ...
/// Replayable: a checkpoint saves the byte offset and the line number, restore seeks there.
class text_file_source final : public source_logic {
 public:
  text_file_source(std::string path, const instance_info& info);
  void open() override;
  bool pull(std::size_t max, emitter& out) override;
  bool replayable() const override { return true; }
  void snapshot(state_writer& out) override;
  void restore(state_reader& in) override;

 private:
  std::string path_;
  std::uint32_t index_;
  std::uint32_t parallelism_;
  std::ifstream in_;
  std::uint64_t line_ = 0;
};

text_file_source::text_file_source(std::string path, const instance_info& info)
    : path_(std::move(path)), index_(info.index), parallelism_(info.parallelism) {}

void text_file_source::open() {
  in_.open(path_);
  if (!in_)
    throw job_error("cannot open '" + path_ + "': " + std::strerror(errno) +
                    " (check the path; relative paths start in the working directory)");
}

bool text_file_source::pull(std::size_t max, emitter& out) {
  auto b = std::make_unique<batch<std::string>>();
  std::string line;
  while (b->values.size() < max && std::getline(in_, line)) {
    if (line_++ % parallelism_ == index_) b->values.push_back(std::move(line));
  }
  bool more = static_cast<bool>(in_);
  if (!b->values.empty()) out.emit(std::move(b));
  return more;
}

// A file read to its end has no offset (tellg fails once eofbit is set): -1 stands for the end.
void text_file_source::snapshot(state_writer& out) {
  out.write(in_ && !in_.eof() ? static_cast<std::int64_t>(in_.tellg()) : std::int64_t{-1});
  out.write(line_);
}

void text_file_source::restore(state_reader& in) {
  const auto offset = in.read<std::int64_t>();
  line_ = in.read<std::uint64_t>();
  if (offset < 0) {
    in_.setstate(std::ios::eofbit | std::ios::failbit);
    return;
  }
  in_.seekg(0, std::ios::end);
  const auto size = static_cast<std::int64_t>(in_.tellg());
  if (offset > size)
    throw job_error("cannot restore '" + path_ + "' at byte " + std::to_string(offset) +
                    ": the file has only " + std::to_string(size) +
                    " bytes now (it changed since the checkpoint)");
  in_.seekg(offset);
}

}  // namespace
}  // namespace ops

stream<std::string> job::from_text_file(std::string path, std::string name) {
  return add_source<std::string>("text_file", std::move(name), [path](const instance_info& info) {
    return std::make_unique<ops::text_file_source>(path, info);
  });
}

}  // namespace tidemark
