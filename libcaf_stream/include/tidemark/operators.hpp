// The logic of the built-in operators: typed loops over whole batches. The runtime calls them
// through operator_logic / source_logic; tests may call them directly.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tidemark/detail/flat_hash_map.hpp"
#include "tidemark/operator.hpp"

namespace tidemark {

/// Passed to flat_map functions: call it once per output element.
template <class U>
class collector {
 public:
  explicit collector(std::vector<U>& out) : out_(out) {}
  void operator()(U x) { out_.push_back(std::move(x)); }

 private:
  std::vector<U>& out_;
};

namespace ops {

/// Keeps the columns of the elements that a filter-like operator kept: keep[i] says whether
/// element i survives; survivors are compacted to the front.
inline void compact_columns(batch_base& b, const std::vector<std::uint8_t>& keep) {
  auto compact = [&](auto& column) {
    if (column.empty()) return;
    std::size_t j = 0;
    for (std::size_t i = 0; i < column.size(); ++i)
      if (keep[i]) column[j++] = column[i];
    column.resize(j);
  };
  compact(b.times);
  compact(b.hashes);
}

template <class T, class U, class F>
class map_logic final : public operator_logic {
 public:
  explicit map_logic(F f) : f_(std::move(f)) {}

  void process(std::size_t, batch_ptr in, emitter& out) override {
    auto& src = static_cast<batch<T>&>(*in);
    src.hashes.clear();  // a map may change the key
    if constexpr (std::is_same_v<T, U>) {
      if (on_error == error_policy::fail) {
        for (auto& x : src.values) x = f_(x);
        out.emit(std::move(in));
        return;
      }
    }
    auto result = std::make_unique<batch<U>>();
    result->values.reserve(src.values.size());
    std::vector<std::uint8_t> keep(src.values.size(), 1);
    for (std::size_t i = 0; i < src.values.size(); ++i)
      keep[i] = guarded([&] { result->values.push_back(f_(src.values[i])); });
    if (result->values.size() != src.values.size()) compact_columns(src, keep);
    result->times = std::move(src.times);
    out.emit(std::move(result));
  }

 private:
  F f_;
};

template <class T, class F>
class filter_logic final : public operator_logic {
 public:
  explicit filter_logic(F f) : f_(std::move(f)) {}

  void process(std::size_t, batch_ptr in, emitter& out) override {
    auto& b = static_cast<batch<T>&>(*in);
    auto& xs = b.values;
    const bool columns = !b.times.empty() || !b.hashes.empty();
    std::vector<std::uint8_t> keep(columns ? xs.size() : 0);
    std::size_t j = 0;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      bool pass = false;
      if (on_error == error_policy::fail)
        pass = static_cast<bool>(f_(xs[i]));
      else
        guarded([&] { pass = static_cast<bool>(f_(xs[i])); });
      if (columns) keep[i] = pass;
      if (pass) {
        if (j != i) xs[j] = std::move(xs[i]);
        ++j;
      }
    }
    xs.resize(j);
    if (columns) compact_columns(b, keep);
    if (!xs.empty()) out.emit(std::move(in));
  }

 private:
  F f_;
};

template <class T, class U, class F>
class flat_map_logic final : public operator_logic {
 public:
  explicit flat_map_logic(F f) : f_(std::move(f)) {}

  void process(std::size_t, batch_ptr in, emitter& out) override {
    auto& src = static_cast<batch<T>&>(*in);
    auto result = std::make_unique<batch<U>>();
    result->values.reserve(src.values.size());
    collector<U> c{result->values};
    const bool timed = !src.times.empty();
    for (std::size_t i = 0; i < src.values.size(); ++i) {
      auto before = result->values.size();
      if (!guarded([&] { f_(src.values[i], c); })) result->values.resize(before);
      if (timed) result->times.resize(result->values.size(), src.times[i]);
    }
    if (!result->values.empty()) out.emit(std::move(result));
  }

 private:
  F f_;
};

/// Computes each element's key hash once; the edge after it partitions by that hash.
template <class T, class KeyFn>
class key_by_logic final : public operator_logic {
 public:
  explicit key_by_logic(KeyFn f) : f_(std::move(f)) {}

  void process(std::size_t, batch_ptr in, emitter& out) override {
    auto& b = static_cast<batch<T>&>(*in);
    using K = std::decay_t<std::invoke_result_t<KeyFn&, const T&>>;
    std::hash<K> h;
    b.hashes.resize(b.values.size());
    for (std::size_t i = 0; i < b.values.size(); ++i)
      b.hashes[i] = detail::mix_hash(h(f_(b.values[i])));
    out.emit(std::move(in));
  }

 private:
  KeyFn f_;
};

/// Running per-key fold: for every element, `acc = f(acc, x)` on its key's accumulator, then emits
/// `project(key, acc)`. The accumulator starts at `init`, or, without one (reduce), at the key's
/// first element. Lookups use the hash key_by computed.
template <class T, class K, class A, class KeyFn, class F, class Project>
class fold_logic final : public operator_logic {
 public:
  using out_type = std::decay_t<std::invoke_result_t<Project&, const K&, const A&>>;

  fold_logic(KeyFn key, std::optional<A> init, F f, Project project)
      : key_(std::move(key)), init_(std::move(init)), f_(std::move(f)), project_(std::move(project)) {}

  void process(std::size_t, batch_ptr in, emitter& out) override {
    auto& b = static_cast<batch<T>&>(*in);
    if constexpr (std::is_same_v<out_type, T>) {
      // reduce: each result replaces its element, so the input batch carries the output
      if (on_error == error_policy::fail) {
        for (std::size_t i = 0; i < b.values.size(); ++i) b.values[i] = step(b.hashes[i], b.values[i]);
        b.hashes.clear();
        out.emit(std::move(in));
        return;
      }
    }
    auto result = std::make_unique<batch<out_type>>();
    result->values.reserve(b.values.size());
    std::vector<std::uint8_t> keep(b.values.size(), 1);
    for (std::size_t i = 0; i < b.values.size(); ++i)
      keep[i] = guarded([&] { result->values.push_back(step(b.hashes[i], b.values[i])); });
    if (result->values.size() != b.values.size()) compact_columns(b, keep);
    result->times = std::move(b.times);
    out.emit(std::move(result));
  }

 private:
  out_type step(std::uint64_t hash, const T& x) {
    K k = key_(x);
    auto [acc, added] = state_.find_or_add(hash, k);
    if (!added)
      acc = f_(std::move(acc), x);
    else if constexpr (std::is_same_v<A, T>)
      acc = init_ ? f_(*init_, x) : x;
    else
      acc = f_(*init_, x);
    return project_(k, acc);
  }

  KeyFn key_;
  std::optional<A> init_;
  F f_;
  Project project_;
  detail::flat_hash_map<K, A> state_;
};

// ---- sources ---------------------------------------------------------------------------------

/// Emits a shared vector; instance k of p emits the k-th contiguous slice.
template <class T>
class container_source final : public source_logic {
 public:
  container_source(std::shared_ptr<const std::vector<T>> xs, const instance_info& info)
      : xs_(std::move(xs)),
        pos_(xs_->size() * info.index / info.parallelism),
        end_(xs_->size() * (info.index + 1) / info.parallelism) {}

  bool pull(std::size_t max, emitter& out) override {
    auto n = std::min(max, end_ - pos_);
    if (n > 0) {
      auto b = std::make_unique<batch<T>>();
      b->values.assign(xs_->begin() + pos_, xs_->begin() + pos_ + n);
      pos_ += n;
      out.emit(std::move(b));
    }
    return pos_ < end_;
  }

 private:
  std::shared_ptr<const std::vector<T>> xs_;
  std::size_t pos_;
  std::size_t end_;
};

/// Calls a generator `std::optional<T>()` until it returns nullopt. Each instance runs its own copy.
template <class T, class F>
class generator_source final : public source_logic {
 public:
  explicit generator_source(F f) : f_(std::move(f)) {}

  bool pull(std::size_t max, emitter& out) override {
    auto b = std::make_unique<batch<T>>();
    auto& xs = b->values;
    xs.resize(max);
    std::size_t n = 0;
    bool more = true;
    for (; n < max; ++n) {
      std::optional<T> x = f_();
      if (!x) {
        more = false;
        break;
      }
      xs[n] = std::move(*x);
    }
    xs.resize(n);
    if (n > 0) out.emit(std::move(b));
    return more;
  }

 private:
  F f_;
};

// ---- sinks -----------------------------------------------------------------------------------

/// Calls `f(const T&)` for every element (instances may call it concurrently).
template <class T, class F>
class for_each_sink final : public operator_logic {
 public:
  explicit for_each_sink(F f) : f_(std::move(f)) {}

  void process(std::size_t, batch_ptr in, emitter&) override {
    for (const auto& x : static_cast<batch<T>&>(*in).values) guarded([&] { f_(x); });
  }

 private:
  F f_;
};

/// Shared result of a collect sink, filled when the job ends.
template <class T>
struct collected_state {
  std::mutex mutex;
  std::vector<T> values;
};

template <class T>
class collect_sink final : public operator_logic {
 public:
  explicit collect_sink(std::shared_ptr<collected_state<T>> s) : state_(std::move(s)) {}

  void process(std::size_t, batch_ptr in, emitter&) override {
    auto& xs = static_cast<batch<T>&>(*in).values;
    local_.insert(local_.end(), std::make_move_iterator(xs.begin()),
                  std::make_move_iterator(xs.end()));
  }

  void finish(emitter&) override {
    std::lock_guard<std::mutex> guard{state_->mutex};
    auto& all = state_->values;
    all.insert(all.end(), std::make_move_iterator(local_.begin()),
               std::make_move_iterator(local_.end()));
  }

 private:
  std::shared_ptr<collected_state<T>> state_;
  std::vector<T> local_;
};

class count_sink final : public operator_logic {
 public:
  explicit count_sink(std::shared_ptr<std::atomic<std::uint64_t>> total) : total_(std::move(total)) {}
  void process(std::size_t, batch_ptr in, emitter&) override { n_ += in->size(); }
  void finish(emitter&) override { total_->fetch_add(n_); }

 private:
  std::shared_ptr<std::atomic<std::uint64_t>> total_;
  std::uint64_t n_ = 0;
};

/// Merges several inputs into one stream.
class union_logic final : public operator_logic {
 public:
  void process(std::size_t, batch_ptr in, emitter& out) override { out.emit(std::move(in)); }
};

}  // namespace ops
}  // namespace tidemark
