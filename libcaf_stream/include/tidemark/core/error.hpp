// Error reporting without exceptions on the per-element path: a library call that can fail on its
// input returns expected<T> (the value, or an error saying what was wrong, where, and what to do),
// and whoever keeps going after a failure reports it to an error_sink (counts, first messages).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace tidemark {

/// Why one input or call failed, as one readable message: "<where>: <what was wrong>[; <what to
/// do>]", e.g. "senml_parse: entry 3: 'v' is not a number: \"abc\"".
struct error {
  std::string message;
};

/// Either a T or the error that replaced it (C++17 stand-in for std::expected<T, error>).
template <class T>
class expected {
 public:
  expected(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  expected(tidemark::error e) : v_(std::move(e)) {}  // NOLINT(google-explicit-constructor)

  bool has_value() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  /// The value; only valid when has_value().
  T& operator*() & { return std::get<0>(v_); }
  const T& operator*() const& { return std::get<0>(v_); }
  T&& operator*() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }

  /// The error; only valid when !has_value().
  const tidemark::error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, tidemark::error> v_;
};

/// Collects the errors of the tasks and operators it is handed to: counts all of them, keeps the
/// first `keep` messages and the last one. Copies share one state; every member is thread-safe.
class error_sink {
 public:
  explicit error_sink(std::size_t keep = 100);

  /// Counts `e` and keeps its message if fewer than `keep` are kept.
  void report(const error& e) const;
  /// Counts and returns the error "<where>: <what>", for a task that rejects an input.
  error fail(const char* where, std::string what) const;

  /// Errors reported since construction.
  std::uint64_t count() const noexcept;
  /// The first messages, in the order they were reported (at most `keep`).
  std::vector<std::string> messages() const;
  /// The most recent message, empty when nothing was reported.
  std::string last() const;

 private:
  struct state;
  std::shared_ptr<state> state_;
};

}  // namespace tidemark
