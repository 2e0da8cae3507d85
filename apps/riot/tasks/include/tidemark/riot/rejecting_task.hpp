// The base of the RIoTBench tasks that can reject an input: each rejected input is returned as a
// tidemark::error from process() and also reported to the task's own error_sink.
#pragma once

#include <string>
#include <utility>

#include "tidemark/core/error.hpp"

namespace tidemark::riot {

class rejecting_task {
 public:
  /// The inputs this task rejected (count, first messages, last).
  const error_sink& errors() const noexcept { return errors_; }

 protected:
  /// Reports and returns the error "<task>: <what>".
  error fail(const char* task, std::string what) const { return errors_.fail(task, std::move(what)); }

 private:
  error_sink errors_;
};

}  // namespace tidemark::riot
