// Asynchronous operators: up to `concurrency` elements in flight per instance, completed out of
// order from any thread. The runtime wakes the operator on its own thread to emit completions
// (operator_logic::on_wakeup). The output watermark waits for every element that is still in
// flight, so a synchronizer downstream knows when a time slice is complete (docs/timezones.md).
// A checkpoint saves the elements not emitted yet; restore starts them again.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tidemark/core/operator.hpp"
#include "tidemark/core/state.hpp"

namespace tidemark {

/// A fixed set of threads that run tasks in submission order; task k may run on any thread.
/// Each task learns the index of the thread it runs on (for per-thread resources such as
/// database sessions). Joins its threads on destruction.
class worker_pool {
 public:
  explicit worker_pool(std::size_t threads);
  ~worker_pool();
  worker_pool(const worker_pool&) = delete;
  worker_pool& operator=(const worker_pool&) = delete;

  void submit(std::function<void(std::size_t worker)> task);

 private:
  struct state;
  std::unique_ptr<state> s_;
};

namespace detail {

/// Completions shared between an async operator and the threads that complete its elements.
template <class U>
struct async_core {
  struct done {
    std::uint64_t seq;
    std::optional<U> value;  // nullopt: the element produced no output
    std::string error;       // non-empty: the element failed
  };
  std::mutex mutex;
  std::vector<done> completed;
  std::function<void()> wake;
  std::atomic<bool> wake_sent{false};

  void push(done d) {
    {
      std::lock_guard<std::mutex> lock{mutex};
      completed.push_back(std::move(d));
    }
    // one wakeup message until the operator has taken the completions
    if (!wake_sent.exchange(true) && wake) wake();
  }
};

}  // namespace detail

/// Completes one element of an async operator. Call exactly one of the methods once, from any
/// thread; later calls are ignored. Dropping it without a call leaves the element in flight and
/// the job waits for it forever.
template <class U>
class async_result {
 public:
  async_result(std::shared_ptr<detail::async_core<U>> core, std::uint64_t seq)
      : core_(std::move(core)), seq_(seq) {}
  /// The element's output.
  void complete(U value) { finish(std::optional<U>{std::move(value)}, {}); }
  /// The element produces no output (e.g. an inner join without a match).
  void complete_empty() { finish(std::nullopt, {}); }
  /// The element failed: the job fails, or under error_policy::skip the element is dropped.
  void fail(std::string what) { finish(std::nullopt, what.empty() ? "failed" : std::move(what)); }

 private:
  void finish(std::optional<U> v, std::string error) {
    if (auto core = std::exchange(core_, nullptr)) core->push({seq_, std::move(v), std::move(error)});
  }
  std::shared_ptr<detail::async_core<U>> core_;
  std::uint64_t seq_;
};

namespace ops {

/// The async operator: `start(const T&, async_result<U>)` begins the work of one element and
/// returns; the result may be completed on any thread, in any order. Elements keep their event
/// time; key hashes are dropped (the result may have another key). A checkpoint saves, in arrival
/// order, every element whose result was not emitted yet (in flight, completed but not taken, or
/// waiting; T needs a codec then); restore starts them again, so `start` may see an element twice
/// across a crash (its side effects are at-least-once, its outputs exactly-once).
template <class T, class U, class Start>
class async_logic final : public operator_logic {
 public:
  async_logic(Start start, std::uint32_t concurrency)
      : start_(std::move(start)), concurrency_(concurrency < 1 ? 1 : concurrency),
        core_(std::make_shared<detail::async_core<U>>()) {}

  void set_wakeup(std::function<void()> wake) override { core_->wake = std::move(wake); }

  void process(std::size_t, batch_ptr in, emitter& out) override {
    auto& b = static_cast<batch<T>&>(*in);
    for (std::size_t i = 0; i < b.values.size(); ++i) {
      auto t = b.times.empty() ? start_of_time : b.times[i];
      waiting_.push_back({std::move(b.values[i]), t});
      unfinished_.insert(t);
    }
    start_more();
    // results completed synchronously by `start` go out now
    on_wakeup(out);
  }

  void on_watermark(event_time wm, emitter& out) override {
    input_wm_ = wm;
    advance_watermark(out);
  }

  void on_wakeup(emitter& out) override {
    std::vector<typename detail::async_core<U>::done> done;
    {
      std::lock_guard<std::mutex> lock{core_->mutex};
      done.swap(core_->completed);
      core_->wake_sent = false;
    }
    if (!done.empty()) {
      auto result = std::make_unique<batch<U>>();
      const auto now = std::chrono::steady_clock::now();
      for (auto& d : done) {
        auto it = in_flight_.find(d.seq);
        if (it == in_flight_.end()) continue;
        const auto t = it->second.time;
        const auto started = it->second.started;
        in_flight_.erase(it);
        unfinished_.erase(unfinished_.find(t));
        ++completed_;
        auto latency = std::chrono::duration<double, std::milli>(now - started).count();
        latency_sum_ms_ += latency;
        latency_max_ms_ = std::max(latency_max_ms_, latency);
        if (!d.error.empty()) {
          if (on_error == error_policy::fail) throw job_error(d.error);
          ++skipped;
          continue;
        }
        if (!d.value) continue;
        result->values.push_back(std::move(*d.value));
        if (t != start_of_time) result->times.push_back(t);
      }
      if (result->times.size() != result->values.size()) result->times.clear();
      if (!result->values.empty()) out.emit(std::move(result));
      start_more();
    }
    advance_watermark(out);
  }

  void snapshot(state_writer& out) override {
    out.write(static_cast<std::uint64_t>(in_flight_.size() + waiting_.size()));
    // in flight first: they were started in arrival order, before every waiting element
    for (const auto& [seq, f] : in_flight_) {
      out.write(f.value);
      out.write(f.time);
    }
    for (const auto& w : waiting_) {
      out.write(w.value);
      out.write(w.time);
    }
    out.write(input_wm_);
    out.write(emitted_wm_);
  }

  void restore(state_reader& in) override {
    for (auto n = in.read<std::uint64_t>(); n > 0; --n) {
      waiting w{in.read<T>(), start_of_time};
      in.read(w.time);
      unfinished_.insert(w.time);
      waiting_.push_back(std::move(w));
    }
    in.read(input_wm_);
    in.read(emitted_wm_);
    start_more();  // completions wake the operator (set_wakeup came first)
  }

  bool pending() const override { return !unfinished_.empty(); }
  bool saturated() const override { return waiting_.size() >= concurrency_; }

  void add_metrics(std::map<std::string, double>& out) const override {
    out["concurrency"] = concurrency_;
    out["max_in_flight"] = static_cast<double>(max_in_flight_);
    out["async_completed"] = static_cast<double>(completed_);
    out["async_latency_mean_ms"] = completed_ ? latency_sum_ms_ / static_cast<double>(completed_) : 0.0;
    out["async_latency_max_ms"] = latency_max_ms_;
  }

 private:
  struct waiting {
    T value;
    event_time time;
  };
  /// An element started and not emitted; its value is kept (moved, not copied) for checkpoints.
  struct in_flight {
    event_time time;
    std::chrono::steady_clock::time_point started;
    T value;
  };

  void start_more() {
    while (in_flight_.size() < concurrency_ && !waiting_.empty()) {
      auto w = std::move(waiting_.front());
      waiting_.pop_front();
      auto seq = next_seq_++;
      auto& f = in_flight_
                    .emplace(seq, in_flight{w.time, std::chrono::steady_clock::now(), std::move(w.value)})
                    .first->second;
      max_in_flight_ = std::max(max_in_flight_, in_flight_.size());
      async_result<U> r{core_, seq};
      try {
        start_(f.value, r);
      } catch (const std::exception& e) {
        r.fail(e.what());
      } catch (...) {
        r.fail("unknown exception");
      }
    }
  }

  /// No element below the lowest event time still waiting or in flight can follow.
  void advance_watermark(emitter& out) {
    auto wm = unfinished_.empty() ? input_wm_ : std::min(input_wm_, *unfinished_.begin());
    if (wm > emitted_wm_) out.emit_watermark(emitted_wm_ = wm);
  }

  Start start_;
  std::size_t concurrency_;
  std::shared_ptr<detail::async_core<U>> core_;
  std::deque<waiting> waiting_;
  std::map<std::uint64_t, in_flight> in_flight_;
  std::multiset<event_time> unfinished_;  // times of waiting and in-flight elements
  std::uint64_t next_seq_ = 0;
  event_time input_wm_ = start_of_time;
  event_time emitted_wm_ = start_of_time;
  std::size_t max_in_flight_ = 0;
  std::uint64_t completed_ = 0;
  double latency_sum_ms_ = 0;
  double latency_max_ms_ = 0;
};

/// Runs a blocking `f(const T&, std::size_t worker) -> std::optional<U>` on a pool of
/// `concurrency` threads: the start function of async_logic for slow user functions and
/// lookups. nullopt means no output for the element.
template <class T, class U, class F>
class pooled_call {
 public:
  pooled_call(F f, std::uint32_t concurrency)
      : f_(std::make_shared<F>(std::move(f))), pool_(std::make_shared<worker_pool>(concurrency)) {}

  void operator()(const T& x, async_result<U> r) {
    pool_->submit([f = f_, x, r](std::size_t worker) mutable {
      try {
        std::optional<U> out = (*f)(x, worker);
        if (out)
          r.complete(std::move(*out));
        else
          r.complete_empty();
      } catch (const std::exception& e) {
        r.fail(e.what());
      } catch (...) {
        r.fail("unknown exception");
      }
    });
  }

 private:
  std::shared_ptr<F> f_;
  std::shared_ptr<worker_pool> pool_;
};

/// The async operator over a blocking per-element function run by a worker pool.
template <class T, class U, class F>
std::unique_ptr<operator_logic> make_pooled(F f, std::uint32_t concurrency) {
  using call = pooled_call<T, U, F>;
  return std::make_unique<async_logic<T, U, call>>(call{std::move(f), concurrency}, concurrency);
}

}  // namespace ops
}  // namespace tidemark
