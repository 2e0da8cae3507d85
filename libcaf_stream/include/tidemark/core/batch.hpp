// Batches: the unit of mailbox traffic, backpressure credit, serialization and I/O.
// A batch is a contiguous vector of values plus optional parallel columns of event times and
// key hashes. The runtime moves batches without knowing the value type (batch_base); operators
// work on the typed batch<T> in tight loops.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace tidemark {

/// Event time in milliseconds since the epoch unless the job says otherwise.
using event_time = std::int64_t;

/// Counts batches alive in the process, so tests and metrics can see how much is buffered.
class batch_gauge {
 public:
  static void created() noexcept;
  static void destroyed() noexcept { live_.fetch_sub(1, std::memory_order_relaxed); }
  static std::int64_t live() noexcept { return live_.load(std::memory_order_relaxed); }
  /// Highest number of live batches since the last reset_peak().
  static std::int64_t peak() noexcept { return peak_.load(std::memory_order_relaxed); }
  static void reset_peak() noexcept { peak_.store(live(), std::memory_order_relaxed); }

 private:
  static std::atomic<std::int64_t> live_;
  static std::atomic<std::int64_t> peak_;
};

/// Type-erased batch. Invariant: `times` and `hashes` are either empty or as long as the batch.
class batch_base {
 public:
  batch_base() noexcept { batch_gauge::created(); }
  batch_base(const batch_base& other) : times(other.times), hashes(other.hashes) {
    batch_gauge::created();
  }
  batch_base& operator=(const batch_base&) = delete;
  virtual ~batch_base() { batch_gauge::destroyed(); }

  virtual std::size_t size() const noexcept = 0;
  bool empty() const noexcept { return size() == 0; }
  /// A deep copy (used for broadcast).
  virtual std::unique_ptr<batch_base> clone() const = 0;
  /// An empty batch of the same value type with room for `capacity` elements.
  virtual std::unique_ptr<batch_base> make_empty(std::size_t capacity) const = 0;
  /// Moves every element of `src` (same value type) to the end of this batch; `src` is left empty.
  virtual void append(batch_base& src) = 0;
  /// Moves element i to the end of `outs[target[i]]` (all of the same value type).
  virtual void scatter(const std::uint32_t* target, batch_base* const* outs) = 0;

  /// Event time of each element, or empty when the stream carries no event time.
  std::vector<event_time> times;
  /// Key hash of each element, filled by key_by, or empty on unkeyed streams.
  std::vector<std::uint64_t> hashes;

 protected:
  void append_columns(batch_base& src) {
    times.insert(times.end(), src.times.begin(), src.times.end());
    hashes.insert(hashes.end(), src.hashes.begin(), src.hashes.end());
    src.times.clear();
    src.hashes.clear();
  }
};

using batch_ptr = std::unique_ptr<batch_base>;

template <class T>
class batch final : public batch_base {
 public:
  batch() = default;
  explicit batch(std::vector<T> xs) : values(std::move(xs)) {}

  std::size_t size() const noexcept override { return values.size(); }

  std::unique_ptr<batch_base> clone() const override { return std::make_unique<batch>(*this); }

  std::unique_ptr<batch_base> make_empty(std::size_t capacity) const override {
    auto result = std::make_unique<batch>();
    result->values.reserve(capacity);
    return result;
  }

  void append(batch_base& src) override {
    auto& other = static_cast<batch&>(src);
    if (values.empty() && values.capacity() < other.values.size()) {
      values.swap(other.values);
    } else {
      values.insert(values.end(), std::make_move_iterator(other.values.begin()),
                    std::make_move_iterator(other.values.end()));
    }
    other.values.clear();
    append_columns(src);
  }

  void scatter(const std::uint32_t* target, batch_base* const* outs) override {
    const auto n = values.size();
    for (std::size_t i = 0; i < n; ++i)
      static_cast<batch*>(outs[target[i]])->values.push_back(std::move(values[i]));
    if (!times.empty())
      for (std::size_t i = 0; i < n; ++i) outs[target[i]]->times.push_back(times[i]);
    if (!hashes.empty())
      for (std::size_t i = 0; i < n; ++i) outs[target[i]]->hashes.push_back(hashes[i]);
    values.clear();
    times.clear();
    hashes.clear();
  }

  std::vector<T> values;
};

}  // namespace tidemark
