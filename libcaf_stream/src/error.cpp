// The shared state behind error_sink (see error.hpp); kept here so the header stays free of
// <mutex> and <atomic>.
#include "tidemark/core/error.hpp"

#include <atomic>
#include <mutex>

namespace tidemark {

struct error_sink::state {
  explicit state(std::size_t k) : keep(k) {}
  const std::size_t keep;
  std::atomic<std::uint64_t> count{0};
  std::mutex mutex;
  std::vector<std::string> first;
  std::string last;
};

error_sink::error_sink(std::size_t keep) : state_(std::make_shared<state>(keep)) {}

void error_sink::report(const error& e) const {
  state_->count.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (state_->first.size() < state_->keep) state_->first.push_back(e.message);
  state_->last = e.message;
}

error error_sink::fail(const char* where, std::string what) const {
  error e{std::string(where) + ": " + std::move(what)};
  report(e);
  return e;
}

std::uint64_t error_sink::count() const noexcept { return state_->count.load(std::memory_order_relaxed); }

std::vector<std::string> error_sink::messages() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->first;
}

std::string error_sink::last() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->last;
}

}  // namespace tidemark
