// The errors an I/O task met and survived. A task never crashes on bad input or an unreachable
// service: it counts the failure, keeps the last message, and goes on with the next element.
#pragma once

#include <cstdint>
#include <string>

namespace tidemark::riot::io {

class task_errors {
 public:
  /// Records one failure described by `message` (what failed, where, why).
  void add(std::string message) {
    ++count_;
    last_ = std::move(message);
  }
  std::uint64_t count() const noexcept { return count_; }
  /// The most recent failure's message, empty when there was none.
  const std::string& last() const noexcept { return last_; }

 private:
  std::uint64_t count_ = 0;
  std::string last_;
};

}  // namespace tidemark::riot::io
