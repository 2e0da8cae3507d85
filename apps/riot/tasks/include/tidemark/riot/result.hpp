// Error reporting shared by the RIoTBench tasks: a task that cannot process an input returns a
// task_error (what was wrong and where) instead of a value, and counts it; nothing throws per message.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace tidemark::riot {

/// Why one input could not be processed, e.g. "senml_parse: entry 3: 'v' is not a number: \"abc\"".
struct task_error {
  std::string message;
};

/// Either the task's output for one input or the task_error that replaced it.
template <class T>
class result {
 public:
  result(T value) : v_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  result(task_error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool has_value() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  /// The value; only valid when has_value().
  T& operator*() & { return std::get<0>(v_); }
  const T& operator*() const& { return std::get<0>(v_); }
  T&& operator*() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }

  /// The error; only valid when !has_value().
  const task_error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, task_error> v_;
};

/// Counts the inputs a task rejected. Tasks derive from it and report through fail().
class error_counter {
 public:
  /// Inputs rejected since construction.
  std::uint64_t errors() const noexcept { return errors_; }

 protected:
  /// Counts one rejected input and returns its error, prefixed with the task's name.
  task_error fail(const char* task, std::string what) {
    ++errors_;
    return task_error{std::string(task) + ": " + what};
  }

 private:
  std::uint64_t errors_ = 0;
};

}  // namespace tidemark::riot
