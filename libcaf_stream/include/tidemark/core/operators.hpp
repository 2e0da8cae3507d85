// The logic of the built-in operators: typed loops over whole batches. The runtime calls them
// through operator_logic / source_logic; tests may call them directly. Stateful ones save and
// load their state for checkpoints (snapshot/restore) only when asked: no cost per element.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "tidemark/core/detail/flat_hash_map.hpp"
#include "tidemark/core/operator.hpp"
#include "tidemark/core/state.hpp"

namespace tidemark {

/// True while a generator source re-runs its generator to return to a checkpoint's position
/// (see generator_source::restore), on the thread that runs it: a generator that paces itself
/// should not sleep then, and should restart its pacing from its next call.
bool replaying_generator() noexcept;

namespace detail {
/// Makes replaying_generator() true on this thread while it lives.
class replaying_scope {
 public:
  replaying_scope() noexcept;
  ~replaying_scope();
  replaying_scope(const replaying_scope&) = delete;
  replaying_scope& operator=(const replaying_scope&) = delete;

 private:
  bool before_;
};
}  // namespace detail

/// Names a side output: elements of U that an operator emits on output port `port` (>= 1; port 0
/// is its main output) beside its main output. `stream.side_output(tag)` reads it; user functions
/// emit to it with `collector::side(tag, x)`, operator logic with `out.emit(tag.port(), batch)`.
/// Ports are per operator: two tags of one operator need different ports.
template <class U>
class output_tag {
 public:
  using value_type = U;

  explicit output_tag(std::string name, std::uint32_t port = 1)
      : name_(std::move(name)), port_(port) {
    if (port_ == 0)
      throw job_error("output_tag '" + name_ +
                      "': port 0 is the main output; side outputs use ports >= 1");
  }
  const std::string& name() const noexcept { return name_; }
  std::uint32_t port() const noexcept { return port_; }

 private:
  std::string name_;
  std::uint32_t port_;
};

namespace detail {

/// The side-output batches an operator fills while it processes one input batch, one per port.
/// Side elements get the event time of the input element being processed (when it has one).
class side_batches {
 public:
  /// The event time of the element being processed, or nullopt for untimed input.
  void set_time(std::optional<event_time> t) noexcept { time_ = t; }

  template <class U>
  void push(const output_tag<U>& tag, U x) {
    auto& b = of<U>(tag);
    b.values.push_back(std::move(x));
    if (time_) b.times.push_back(*time_);
  }

  /// Sizes of every batch, to undo what an element emitted when its function threw (skip policy).
  std::vector<std::size_t> sizes() const {
    std::vector<std::size_t> n;
    for (const auto& s : slots_) n.push_back(s.b ? s.b->size() : 0);
    return n;
  }
  void truncate(const std::vector<std::size_t>& sizes) {
    for (std::size_t i = 0; i < slots_.size(); ++i)
      if (slots_[i].b) slots_[i].truncate(*slots_[i].b, i < sizes.size() ? sizes[i] : 0);
  }

  /// Emits every non-empty batch on its port.
  void emit(emitter& out) {
    for (auto& s : slots_)
      if (s.b && !s.b->empty()) out.emit(s.port, std::move(s.b));
  }

 private:
  struct slot {
    std::uint32_t port;
    const std::type_info* type;
    batch_ptr b;
    void (*truncate)(batch_base&, std::size_t);
  };

  template <class U>
  batch<U>& of(const output_tag<U>& tag) {
    for (auto& s : slots_)
      if (s.port == tag.port()) {
        if (*s.type != typeid(U))
          throw job_error(
              "side output '" + tag.name() + "': port " + std::to_string(tag.port()) +
              " already carries another type in this operator; give each tag its own port");
        if (!s.b) s.b = std::make_unique<batch<U>>();
        return static_cast<batch<U>&>(*s.b);
      }
    auto truncate = [](batch_base& b, std::size_t n) {
      auto& typed = static_cast<batch<U>&>(b);
      typed.values.erase(typed.values.begin() + static_cast<std::ptrdiff_t>(n), typed.values.end());
      if (!typed.times.empty()) typed.times.resize(n);
    };
    slots_.push_back({tag.port(), &typeid(U), std::make_unique<batch<U>>(), truncate});
    return static_cast<batch<U>&>(*slots_.back().b);
  }

  std::vector<slot> slots_;
  std::optional<event_time> time_;
};

}  // namespace detail

/// Passed to flat_map and process functions: call it once per output element; `side(tag, x)`
/// emits on a side output instead.
template <class U>
class collector {
 public:
  explicit collector(std::vector<U>& out, detail::side_batches* side = nullptr)
      : out_(out), side_(side) {}
  void operator()(U x) { out_.push_back(std::move(x)); }

  /// Emits `x` on the side output `tag` (read it with stream::side_output(tag)); it keeps the
  /// event time of the element being processed.
  template <class V>
  void side(const output_tag<V>& tag, typename output_tag<V>::value_type x) {
    if (!side_)
      throw job_error("side output '" + tag.name() + "': this collector has no side outputs");
    side_->push(tag, std::move(x));
  }

 private:
  std::vector<U>& out_;
  detail::side_batches* side_;
};

/// Wraps `make(const instance_info&)`, which returns the function object of one operator instance:
/// pass `per_instance(make)` instead of a function to map, filter, flat_map, for_each or a keyed
/// or window process, so that each parallel instance builds its own state (a parser, a client,
/// a model) once, from its own instance_info. `make` runs once per instance before the instance
/// starts, maybe on another thread and beside the make of other instances: it should only read
/// what it captured (or synchronize).
template <class Make>
struct instance_factory {
  Make make;
};

template <class Make>
instance_factory<Make> per_instance(Make make) {
  static_assert(std::is_invocable_v<const Make&, const instance_info&>,
                "per_instance(make): make must be callable as make(const tidemark::instance_info&) "
                "(and not be a mutable lambda) and return the function object of one instance");
  static_assert(!std::is_void_v<std::invoke_result_t<const Make&, const instance_info&>>,
                "per_instance(make): make must return the function object of one instance");
  return {std::move(make)};
}

namespace detail {

/// The function object an operator instance runs: a copy of `f`, or what per_instance's make
/// returns for the instance.
template <class F>
struct instance_fn {
  using type = F;
  static F make(const F& f, const instance_info&) { return f; }
};
template <class Make>
struct instance_fn<instance_factory<Make>> {
  using type = std::decay_t<std::invoke_result_t<const Make&, const instance_info&>>;
  static type make(const instance_factory<Make>& f, const instance_info& info) {
    return f.make(info);
  }
};
template <class F>
using instance_fn_t = typename instance_fn<F>::type;

/// Writes a keyed state table: its size, then hash, key and value of every entry. Keys and values
/// need a codec (state_writer throws naming the type otherwise).
template <class K, class V>
void write_table(state_writer& out, flat_hash_map<K, V>& table) {
  out.write(static_cast<std::uint64_t>(table.size()));
  table.for_each_hashed([&](std::uint64_t h, const K& k, const V& v) {
    out.write(h);
    out.write(k);
    out.write(v);
  });
}

/// Replaces `table` with what write_table wrote. The hashes are kept as written: they are the
/// ones key_by computes for the key (same binary, same hash).
template <class K, class V>
void read_table(state_reader& in, flat_hash_map<K, V>& table) {
  table.clear();
  for (auto n = in.read<std::uint64_t>(); n > 0; --n) {
    const auto h = in.read<std::uint64_t>();
    auto k = in.read<K>();
    auto [v, added] = table.find_or_add(h, k);
    if (!added) throw wire_error("keyed state: a key appears twice in the checkpoint");
    in.read(v);
  }
}

}  // namespace detail

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

/// Base of operators whose user function emits through a collector (flat_map, keyed process).
class collecting_logic : public operator_logic {
 protected:
  /// Runs `f` for one element under the error policy; when the element is skipped, what it
  /// emitted to `main` and `side` is dropped too.
  template <class U, class F>
  void emit_guarded(std::vector<U>& main, detail::side_batches& side, F&& f) {
    if (on_error == error_policy::fail) {
      f();
      return;
    }
    const auto before = main.size();
    const auto side_before = side.sizes();
    if (!guarded(f)) {
      main.erase(main.begin() + static_cast<std::ptrdiff_t>(before), main.end());
      side.truncate(side_before);
    }
  }
};

template <class T, class U, class F>
class map_logic final : public operator_logic {
 public:
  explicit map_logic(F f) : f_(std::move(f)) {}

  void process(std::size_t, batch_ptr in, emitter& out) override {
    auto& src = static_cast<batch<T>&>(*in);
    src.hashes.clear();  // a map may change the key
    if constexpr (std::is_same_v<T, U>) {
      if (on_error == error_policy::fail) {
        for (auto& x : src.values) x = f_(std::move(x));  // the batch is this operator's
        out.emit(std::move(in));
        return;
      }
    }
    auto result = std::make_unique<batch<U>>();
    result->values.reserve(src.values.size());
    std::vector<std::uint8_t> keep(src.values.size(), 1);
    for (std::size_t i = 0; i < src.values.size(); ++i)
      keep[i] = guarded([&] { result->values.push_back(f_(std::move(src.values[i]))); });
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
    // the columns move with their elements in the same pass: no mask to allocate per batch
    const bool times = !b.times.empty();
    const bool hashes = !b.hashes.empty();
    std::size_t j = 0;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      bool pass = false;
      if (on_error == error_policy::fail)
        pass = static_cast<bool>(f_(xs[i]));
      else
        guarded([&] { pass = static_cast<bool>(f_(xs[i])); });
      if (!pass) continue;
      if (j != i) {
        xs[j] = std::move(xs[i]);
        if (times) b.times[j] = b.times[i];
        if (hashes) b.hashes[j] = b.hashes[i];
      }
      ++j;
    }
    xs.resize(j);
    if (times) b.times.resize(j);
    if (hashes) b.hashes.resize(j);
    if (!xs.empty()) out.emit(std::move(in));
  }

 private:
  F f_;
};

/// Runs `f(const T&, collector<U>&)` per element; what an element emits (main and side outputs)
/// keeps its event time. Under the skip policy, a throwing element's outputs are dropped.
template <class T, class U, class F>
class flat_map_logic final : public collecting_logic {
 public:
  explicit flat_map_logic(F f) : f_(std::move(f)) {}

  void process(std::size_t, batch_ptr in, emitter& out) override {
    auto& src = static_cast<batch<T>&>(*in);
    auto result = std::make_unique<batch<U>>();
    result->values.reserve(src.values.size());
    collector<U> c{result->values, &side_};
    const bool timed = !src.times.empty();
    for (std::size_t i = 0; i < src.values.size(); ++i) {
      side_.set_time(timed ? std::optional<event_time>{src.times[i]} : std::nullopt);
      emit_guarded(result->values, side_, [&] { f_(src.values[i], c); });
      if (timed) result->times.resize(result->values.size(), src.times[i]);
    }
    if (!result->values.empty()) out.emit(std::move(result));
    side_.emit(out);
  }

 private:
  F f_;
  detail::side_batches side_;
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
/// first element. Lookups use the hash key_by computed. A checkpoint saves every key's
/// accumulator (K and A need a codec then).
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

  void snapshot(state_writer& out) override { detail::write_table(out, state_); }
  void restore(state_reader& in) override { detail::read_table(in, state_); }

 private:
  out_type step(std::uint64_t hash, const T& x) {
    const auto k = key_(x);  // a K, or a view of one (detail::stored_key_t)
    auto [acc, added] = state_.find_or_add(hash, k);
    if (!added)
      acc = f_(std::move(acc), x);
    else if constexpr (std::is_same_v<A, T>)
      acc = init_ ? f_(*init_, x) : x;
    else
      acc = f_(*init_, x);
    return project_(detail::as_stored<K>(k), acc);
  }

  KeyFn key_;
  std::optional<A> init_;
  F f_;
  Project project_;
  detail::flat_hash_map<K, A> state_;
};

/// Per-key stateful process: for every element, `f(state, x, out)` with the state of its key
/// (made by `make_state()` or `make_state(key)` on the key's first element), emitting any number
/// of Out and side outputs. State lives in one open-addressing table per instance, looked up by
/// the hash key_by computed; outputs keep their element's event time. A checkpoint saves every
/// key's state (K and State need a codec then).
template <class T, class K, class Out, class KeyFn, class State, class MakeState, class F>
class keyed_process_logic final : public collecting_logic {
 public:
  keyed_process_logic(KeyFn key, MakeState make_state, F f)
      : key_(std::move(key)), make_state_(std::move(make_state)), f_(std::move(f)) {}

  void process(std::size_t, batch_ptr in, emitter& out) override {
    auto& b = static_cast<batch<T>&>(*in);
    auto result = std::make_unique<batch<Out>>();
    result->values.reserve(b.values.size());
    collector<Out> c{result->values, &side_};
    const bool timed = !b.times.empty();
    for (std::size_t i = 0; i < b.values.size(); ++i) {
      side_.set_time(timed ? std::optional<event_time>{b.times[i]} : std::nullopt);
      emit_guarded(result->values, side_, [&] {
        const auto k = key_(b.values[i]);  // a K, or a view of one (detail::stored_key_t)
        auto [state, added] = states_.find_or_add(b.hashes[i], k);
        if (added) {
          if constexpr (std::is_invocable_v<MakeState&, const K&>)
            state = make_state_(detail::as_stored<K>(k));
          else
            state = make_state_();
        }
        f_(state, b.values[i], c);
      });
      if (timed) result->times.resize(result->values.size(), b.times[i]);
    }
    if (!result->values.empty()) out.emit(std::move(result));
    side_.emit(out);
  }

  void add_metrics(std::map<std::string, double>& out) const override {
    out["keyed_states"] = static_cast<double>(states_.size());
  }

  void snapshot(state_writer& out) override { detail::write_table(out, states_); }
  void restore(state_reader& in) override { detail::read_table(in, states_); }

 private:
  KeyFn key_;
  MakeState make_state_;
  F f_;
  detail::flat_hash_map<K, State> states_;
  detail::side_batches side_;
};

// ---- sources ---------------------------------------------------------------------------------

/// Emits a shared vector; instance k of p emits the k-th contiguous slice. Replayable: a
/// checkpoint saves the position in the slice.
template <class T>
class container_source final : public source_logic {
 public:
  container_source(std::shared_ptr<const std::vector<T>> xs, const instance_info& info)
      : xs_(std::move(xs)),
        begin_(xs_->size() * info.index / info.parallelism),
        pos_(begin_),
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

  bool replayable() const override { return true; }
  void snapshot(state_writer& out) override { out.write(static_cast<std::uint64_t>(pos_)); }
  void restore(state_reader& in) override {
    const auto pos = in.read<std::uint64_t>();
    if (pos < begin_ || pos > end_)
      throw job_error("container source: the checkpoint's position " + std::to_string(pos) +
                      " lies outside this instance's slice [" + std::to_string(begin_) + ", " +
                      std::to_string(end_) + "]; restore needs the same data and parallelism");
    pos_ = static_cast<std::size_t>(pos);
  }

 private:
  std::shared_ptr<const std::vector<T>> xs_;
  std::size_t begin_;
  std::size_t pos_;
  std::size_t end_;
};

/// Calls a generator `std::optional<T>()` until it returns nullopt. Each instance runs its own copy.
/// Replayable when the generator is a deterministic function of how often it was called (a
/// counter, a seeded random engine): a checkpoint saves the number of elements produced, and
/// restore calls the generator that many times and drops the values (replaying_generator() is
/// true meanwhile, so a paced generator skips its sleeps). A generator that reads a clock or
/// the outside world does not replay what it produced.
template <class T, class F>
class generator_source final : public source_logic {
 public:
  /// A pull ends after about this long even with fewer than `max` elements, so that a slow or
  /// paced generator does not hold its actor: credit, signals and live requests wait for the pull.
  /// (Output batches still fill up to the batch size, sealed by the linger time.)
  static constexpr std::chrono::microseconds time_budget{1000};

  explicit generator_source(F f) : f_(std::move(f)) {}

  bool pull(std::size_t max, emitter& out) override {
    auto b = std::make_unique<batch<T>>();
    auto& xs = b->values;
    xs.resize(max);
    std::size_t n = 0;
    bool more = true;
    const auto started = std::chrono::steady_clock::now();
    for (; n < max; ++n) {
      // the clock is read after 1, 2, 4, ... 256 elements, then every 256: a slow generator
      // returns soon, a fast one pays about one read per 256 elements
      if (n > 0 && ((n & (n - 1)) == 0 || (n & 255) == 0) &&
          std::chrono::steady_clock::now() - started > time_budget)
        break;
      std::optional<T> x = f_();
      if (!x) {
        more = false;
        break;
      }
      xs[n] = std::move(*x);
    }
    xs.resize(n);
    produced_ += n;
    if (n > 0) out.emit(std::move(b));
    return more;
  }

  bool replayable() const override { return true; }
  void snapshot(state_writer& out) override { out.write(produced_); }
  void restore(state_reader& in) override {
    const auto n = in.read<std::uint64_t>();
    detail::replaying_scope replaying;
    for (; produced_ < n; ++produced_)
      if (!f_())
        throw job_error("generator source: the generator ended after " +
                        std::to_string(produced_) + " elements, but the checkpoint had " +
                        std::to_string(n) + "; to replay, a generator must return the same " +
                        "elements for the same calls");
  }

 private:
  F f_;
  std::uint64_t produced_ = 0;
};

// ---- sinks -----------------------------------------------------------------------------------

/// Calls `f(const T&)` for every element (instances may call it concurrently). It keeps no state:
/// after a restore, `f` sees again the elements that followed the checkpoint (at-least-once).
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

/// Gathers its instance's elements and appends them to the shared result when the input ends.
/// A checkpoint saves what the instance gathered so far (T needs a codec then): the shared result
/// is only written at the end, so a restored job fills it exactly as an uninterrupted one.
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

  void snapshot(state_writer& out) override { out.write(local_); }
  void restore(state_reader& in) override { in.read(local_); }

 private:
  std::shared_ptr<collected_state<T>> state_;
  std::vector<T> local_;
};

/// Counts its instance's elements and adds the count to the shared total when the input ends;
/// a checkpoint saves the count so far.
class count_sink final : public operator_logic {
 public:
  explicit count_sink(std::shared_ptr<std::atomic<std::uint64_t>> total) : total_(std::move(total)) {}
  void process(std::size_t, batch_ptr in, emitter&) override { n_ += in->size(); }
  void finish(emitter&) override { total_->fetch_add(n_); }
  void snapshot(state_writer& out) override { out.write(n_); }
  void restore(state_reader& in) override { in.read(n_); }

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
