// The typed dataflow API: a job is built from sources, transformed as stream<T>, partitioned
// with key_by / rebalance / broadcast, and ended by sinks. Building only records the logical
// graph; tidemark::run (tidemark/runtime/runtime.hpp) validates and executes it.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "tidemark/core/async.hpp"
#include "tidemark/core/codec.hpp"
#include "tidemark/core/event_time.hpp"
#include "tidemark/core/graph.hpp"
#include "tidemark/core/operators.hpp"
#include "tidemark/core/lines_sink.hpp"
#include "tidemark/core/tiered_state.hpp"
#include "tidemark/core/window_operators.hpp"

namespace tidemark {

template <class T>
class stream;
template <class K, class T, class KeyFn>
class keyed_stream;
template <class K, class T, class KeyFn, class Assigner>
class windowed_stream;
template <class K, class R, class T>
class window_streams;
template <class T>
class feedback_loop;

namespace detail {

struct job_state {
  std::string name;
  logical_graph graph;
  std::uint32_t default_parallelism = 1;
};

template <class T, class = void>
struct is_printable : std::false_type {};
template <class T>
struct is_printable<T, std::void_t<decltype(std::declval<std::ostream&>() << std::declval<const T&>())>>
    : std::true_type {};

template <class Agg, class T, class = void>
struct is_aggregate_for : std::false_type {};
template <class Agg, class T>
struct is_aggregate_for<
    Agg, T,
    std::void_t<decltype(std::declval<const Agg&>().add(
        std::declval<typename Agg::template acc_type<T>&>(), std::declval<const T&>()))>>
    : std::true_type {};

template <class T>
std::string to_line(const T& x) {
  std::ostringstream out;
  out << x;
  return out.str();
}

}  // namespace detail

/// Filled by a collect() sink when the job has run. Copies share the same result.
template <class T>
class collected {
 public:
  collected() : state_(std::make_shared<ops::collected_state<T>>()) {}
  /// Every element that reached the sink (instances' results concatenated, in no fixed order).
  const std::vector<T>& values() const noexcept { return state_->values; }
  std::shared_ptr<ops::collected_state<T>> state() const { return state_; }

 private:
  std::shared_ptr<ops::collected_state<T>> state_;
};

/// Filled by a count() sink when the job has run.
class counted {
 public:
  counted() : total_(std::make_shared<std::atomic<std::uint64_t>>(0)) {}
  std::uint64_t value() const noexcept { return total_->load(); }
  std::shared_ptr<std::atomic<std::uint64_t>> state() const { return total_; }

 private:
  std::shared_ptr<std::atomic<std::uint64_t>> total_;
};

class job {
 public:
  explicit job(std::string name = "job") : state_(std::make_shared<detail::job_state>()) {
    state_->name = std::move(name);
  }

  const std::string& name() const noexcept { return state_->name; }
  const logical_graph& graph() const noexcept { return state_->graph; }
  /// The graph itself, for tools that build or rewrite plans directly.
  logical_graph& graph() noexcept { return state_->graph; }

  /// Parallelism of operators that do not set their own (default 1).
  job& default_parallelism(std::uint32_t n) {
    state_->default_parallelism = n;
    return *this;
  }

  /// Emits the elements of `xs`; instance k of p emits the k-th slice.
  template <class T>
  stream<T> from_container(std::vector<T> xs, std::string name = "") {
    auto shared = std::make_shared<const std::vector<T>>(std::move(xs));
    return add_source<T>("from_container", std::move(name), [shared](const instance_info& info) {
      return std::make_unique<ops::container_source<T>>(shared, info);
    });
  }

  /// Calls `f()` (returning std::optional<T>) until it returns nullopt. Every instance runs its
  /// own copy of `f`.
  template <class F>
  auto from_generator(F f, std::string name = "") {
    static_assert(std::is_invocable_v<F&>, "from_generator(f): f must be callable as f()");
    using R = std::decay_t<std::invoke_result_t<F&>>;
    static_assert(is_optional<R>::value,
                  "from_generator(f): f must return std::optional<T>; nullopt ends the stream");
    using T = typename R::value_type;
    return add_source<T>("generator", std::move(name), [f](const instance_info&) {
      return std::make_unique<ops::generator_source<T, F>>(f);
    });
  }

  /// Emits what a custom source produces: `make(info)` returns a std::unique_ptr to a
  /// source_logic that emits batch<T> (for sources that pace themselves, poll a broker or a clock).
  template <class T, class Make>
  stream<T> from_source(Make make, std::string name = "") {
    static_assert(std::is_invocable_v<Make&, const instance_info&>,
                  "from_source<T>(make): make must be callable as make(const tidemark::instance_info&)");
    return add_source<T>("source", std::move(name),
                         [make](const instance_info& info) -> std::unique_ptr<source_logic> { return make(info); });
  }

  /// Lines of a text file, without their newline; a missing file fails the job at run.
  stream<std::string> from_text_file(std::string path, std::string name = "");

  /// Starts a loop: `loop.feedback()` carries what is later passed to `loop.close(s)`, over a
  /// feedback edge (the only kind of edge a cycle may use). Timezone analysis and plans handle
  /// loops; the embedded runtime does not run them yet (run() says so).
  template <class T>
  feedback_loop<T> iterate(std::string name = "");

 private:
  template <class T>
  friend class stream;
  template <class K, class T, class KeyFn>
  friend class keyed_stream;
  template <class T>
  friend class feedback_loop;

  template <class R>
  struct is_optional : std::false_type {};
  template <class U>
  struct is_optional<std::optional<U>> : std::true_type {};

  template <class T, class Make>
  stream<T> add_source(std::string op, std::string name, Make make);

  node_id add_node(std::string op, std::string name, node_kind kind, std::vector<logical_edge> in,
                   std::function<std::unique_ptr<operator_logic>(const instance_info&)> make) {
    logical_node n;
    n.op = std::move(op);
    n.kind = kind;
    n.parallelism = state_->default_parallelism;
    n.inputs = std::move(in);
    n.make_operator = std::move(make);
    return finish_node(std::move(n), std::move(name));
  }

  node_id finish_node(logical_node n, std::string name) {
    auto id = state_->graph.add(std::move(n));
    auto& added = state_->graph.node(id);
    added.name = name.empty() ? added.op + "_" + std::to_string(id) : std::move(name);
    return id;
  }

  std::shared_ptr<detail::job_state> state_;
};

/// A stream of T produced by one operator. Methods add operators downstream of it.
template <class T>
class stream {
 public:
  using value_type = T;

  /// Names the operator that produces this stream (names appear in plans, errors and metrics).
  stream& name(std::string n) {
    node().name = std::move(n);
    return *this;
  }
  /// Number of parallel instances of the operator that produces this stream.
  stream& parallelism(std::uint32_t n) {
    node().parallelism = n;
    return *this;
  }
  /// What the producing operator does when its user function throws.
  stream& on_error(error_policy p) {
    node().on_error = p;
    return *this;
  }
  /// Declares the producing operator potentially delayed (it may emit elements late and out of
  /// order, up to `concurrency` at once): what follows it becomes a timezone guarded by a
  /// synchronizer (docs/timezones.md). Async operators declare themselves.
  stream& delayed(std::uint32_t concurrency = 1) {
    node().delayed = true;
    node().concurrency = concurrency;
    return *this;
  }

  /// Adds a user operator: `make(const tidemark::instance_info&)` returns the
  /// std::unique_ptr<tidemark::operator_logic> of one instance, which emits batch<U>.
  template <class U, class Make>
  stream<U> transform(std::string op, Make make, std::string name = "") const {
    static_assert(std::is_convertible_v<std::invoke_result_t<Make&, const instance_info&>,
                                        std::unique_ptr<operator_logic>>,
                  "transform<U>(op, make): make must be callable as make(const instance_info&) "
                  "and return std::unique_ptr<tidemark::operator_logic>");
    return then<U>(std::move(op), std::move(name), std::move(make));
  }

  /// Adds a user operator with two inputs: this stream is input 0 and `other` input 1 of
  /// operator_logic::process.
  template <class U, class V, class Make>
  stream<U> transform_with(const stream<V>& other, std::string op, Make make,
                           std::string name = "") const {
    static_assert(std::is_convertible_v<std::invoke_result_t<Make&, const instance_info&>,
                                        std::unique_ptr<operator_logic>>,
                  "transform_with<U>(other, op, make): make must be callable as "
                  "make(const instance_info&) and return std::unique_ptr<tidemark::operator_logic>");
    auto id = job_.add_node(std::move(op), std::move(name), node_kind::transform,
                            {edge(), other.edge()}, std::move(make));
    return stream<U>{job_, id};
  }

  /// Asynchronous map: `f(const T&, tidemark::async_result<U>)` starts the work for one element
  /// and returns at once; the result is completed later from any thread (complete, complete_empty
  /// or fail). Up to `concurrency` elements per instance are in flight; results leave in
  /// completion order, so the operator is delayed and the rest of the job is synchronized.
  template <class U, class F>
  stream<U> async_map(F f, std::uint32_t concurrency, std::string name = "") const {
    static_assert(std::is_invocable_v<F&, const T&, async_result<U>>,
                  "async_map<U>(f, concurrency): f must be callable as "
                  "f(const T&, tidemark::async_result<U>)");
    auto s = then<U>("async_map", std::move(name), [f, concurrency](const instance_info&) {
      return std::make_unique<ops::async_logic<T, U, F>>(f, concurrency);
    });
    s.delayed(concurrency);
    return s;
  }

  /// Runs a blocking `f(const T&) -> U` on `concurrency` threads per instance (a slow user
  /// function, a synchronous client); results leave in completion order, as with async_map.
  template <class F>
  auto async_map(F f, std::uint32_t concurrency, std::string name = "") const {
    static_assert(std::is_invocable_v<F&, const T&>,
                  "async_map(f, concurrency): f must be callable as f(const T&) (or as "
                  "f(const T&, tidemark::async_result<U>) with async_map<U>)");
    using U = std::decay_t<std::invoke_result_t<F&, const T&>>;
    static_assert(!std::is_void_v<U>, "async_map(f, concurrency): f must return the new element");
    auto call = [f](const T& x, std::size_t) mutable { return std::optional<U>{f(x)}; };
    auto s = then<U>("async_map", std::move(name), [call, concurrency](const instance_info&) {
      return ops::make_pooled<T, U>(call, concurrency);
    });
    s.delayed(concurrency);
    return s;
  }

  /// Adds `f(const T&) -> U` per element. `f` may be per_instance(make): each instance runs the
  /// function object its make(info) returns.
  template <class F>
  auto map(F f, std::string name = "") const {
    using Fn = detail::instance_fn_t<F>;
    static_assert(std::is_invocable_v<Fn&, const T&>,
                  "map(f): f (or what per_instance's make returns) must be callable as f(const T&) "
                  "with the stream's element type T");
    using U = std::decay_t<std::invoke_result_t<Fn&, const T&>>;
    static_assert(!std::is_void_v<U>,
                  "map(f): f must return the new element; use a sink for side effects");
    return then<U>("map", std::move(name), [f](const instance_info& info) {
      return std::make_unique<ops::map_logic<T, U, Fn>>(detail::instance_fn<F>::make(f, info));
    });
  }

  /// Keeps the elements for which `f(const T&)` is true (f may be per_instance(make)).
  template <class F>
  stream<T> filter(F f, std::string name = "") const {
    using Fn = detail::instance_fn_t<F>;
    static_assert(std::is_invocable_v<Fn&, const T&>,
                  "filter(f): f (or what per_instance's make returns) must be callable as "
                  "f(const T&) with the stream's element type T");
    static_assert(std::is_convertible_v<std::invoke_result_t<Fn&, const T&>, bool>,
                  "filter(f): f must return bool (true keeps the element)");
    return then<T>("filter", std::move(name), [f](const instance_info& info) {
      return std::make_unique<ops::filter_logic<T, Fn>>(detail::instance_fn<F>::make(f, info));
    });
  }

  /// `f(const T&, collector<U>&)` emits any number of U per element, and side outputs with
  /// `collector::side(tag, x)` (read them with side_output(tag)). f may be per_instance(make).
  template <class U, class F>
  stream<U> flat_map(F f, std::string name = "") const {
    using Fn = detail::instance_fn_t<F>;
    static_assert(std::is_invocable_v<Fn&, const T&, collector<U>&>,
                  "flat_map<U>(f): f (or what per_instance's make returns) must be callable as "
                  "f(const T&, tidemark::collector<U>&)");
    return then<U>("flat_map", std::move(name), [f](const instance_info& info) {
      return std::make_unique<ops::flat_map_logic<T, U, Fn>>(detail::instance_fn<F>::make(f, info));
    });
  }

  /// The side output `tag` of the operator that produces this stream: what its function emitted
  /// with `collector::side(tag, x)` (or its logic on port tag.port()), with event times.
  template <class U>
  stream<U> side_output(const output_tag<U>& tag) const {
    return stream<U>{job_, id_, partitioning::forward, tag.port(), tag.name()};
  }

  /// Sets each element's event time to `ts(const T&)` and generates watermarks per `strategy`
  /// (see watermark_strategy; by default bounded_out_of_orderness(0).every_ms(200)).
  template <class TsFn, class P = no_punctuation>
  stream<T> assign_timestamps(TsFn ts, watermark_strategy<P> strategy = ascending_timestamps().every_ms(200),
                              std::string name = "") const {
    static_assert(std::is_invocable_r_v<event_time, TsFn&, const T&>,
                  "assign_timestamps(f, s): f must be callable as f(const T&) and return the event "
                  "time (tidemark::event_time)");
    static_assert(std::is_invocable_r_v<bool, P&, const T&>,
                  "assign_timestamps(f, s): the punctuation predicate must be callable as "
                  "p(const T&) and return bool");
    if (strategy.period_ms <= 0 && strategy.period_events == 0 && std::is_same_v<P, no_punctuation>)
      throw job_error("assign_timestamps: the watermark strategy never emits a watermark: add "
                      "every_ms(p), every_events(n) or punctuated(pred)");
    return then<T>("assign_timestamps", std::move(name), [ts, strategy](const instance_info&) {
      return std::make_unique<ops::timestamp_logic<T, TsFn, P>>(ts, strategy);
    });
  }

  /// Partitions by `key(const T&)`: equal keys meet in the same instance downstream. A key
  /// composed per element may be returned as a std::string_view into a buffer the (mutable) key
  /// function owns: keyed state is looked up by the view and stores a std::string per key, so no
  /// element pays for an allocation.
  template <class KeyFn>
  auto key_by(KeyFn key, std::string name = "") const {
    static_assert(std::is_invocable_v<KeyFn&, const T&>,
                  "key_by(f): f must be callable as f(const T&) and return the key");
    // a key returned as a std::string_view is stored as a std::string (detail::stored_key_t)
    using K = detail::stored_key_t<std::decay_t<std::invoke_result_t<KeyFn&, const T&>>>;
    static_assert(std::is_default_constructible_v<std::hash<K>>,
                  "key_by(f): the key type needs a std::hash specialization");
    static_assert(std::is_default_constructible_v<K> && std::is_copy_assignable_v<K>,
                  "key_by(f): the key type must be default-constructible and copyable");
    auto keyed = then<T>("key_by", std::move(name), [key](const instance_info&) {
      return std::make_unique<ops::key_by_logic<T, KeyFn>>(key);
    });
    // hashing runs in its input's instances (fused), so per-key order survives up to the shuffle
    inherit_parallelism(keyed.id_);
    return keyed_stream<K, T, KeyFn>{keyed, key};
  }

  /// The same elements, partitioned by `key(const T&)` for the next operator: equal keys meet in
  /// one of its instances, in the order the instance producing them sent them. A stateless
  /// operator fed this way keeps the per-key order that a stateful one after it relies on.
  template <class KeyFn>
  stream<T> partition_by(KeyFn key, std::string name = "") const {
    static_assert(std::is_invocable_v<KeyFn&, const T&>,
                  "partition_by(f): f must be callable as f(const T&) and return the key");
    using K = std::decay_t<std::invoke_result_t<KeyFn&, const T&>>;
    static_assert(std::is_default_constructible_v<std::hash<K>>,
                  "partition_by(f): the key type needs a std::hash specialization");
    auto keyed = then<T>("key_by", std::move(name), [key](const instance_info&) {
      return std::make_unique<ops::key_by_logic<T, KeyFn>>(key);
    });
    inherit_parallelism(keyed.id_);  // hashing runs in the producer's instances (fused)
    return keyed.with_partitioning(partitioning::key_hash);
  }

  /// Merges this stream with others of the same type.
  template <class... Streams>
  stream<T> merge(const Streams&... others) const {
    static_assert((std::is_same_v<Streams, stream<T>> && ...),
                  "merge(s...): every stream must have the same element type");
    std::vector<logical_edge> in{edge()};
    (in.push_back(others.edge()), ...);
    auto id = job_.add_node("union", "", node_kind::transform, std::move(in),
                            [](const instance_info&) { return std::make_unique<ops::union_logic>(); });
    return stream<T>{job_, id};
  }

  /// The next operator receives whole batches round robin over its instances.
  stream<T> rebalance() const { return with_partitioning(partitioning::rebalance); }
  /// The next operator's every instance receives every element.
  stream<T> broadcast() const { return with_partitioning(partitioning::broadcast); }

  // ---- sinks ----

  collected<T> collect(std::string name = "") const {
    collected<T> result;
    then_sink("collect", std::move(name), [s = result.state()](const instance_info&) {
      return std::make_unique<ops::collect_sink<T>>(s);
    });
    return result;
  }

  counted count(std::string name = "") const {
    counted result;
    then_sink("count", std::move(name), [s = result.state()](const instance_info&) {
      return std::make_unique<ops::count_sink>(s);
    });
    return result;
  }

  /// Calls `f(const T&)` for every element (f may be per_instance(make); instances run in
  /// parallel, so a shared f must be thread-safe).
  template <class F>
  void for_each(F f, std::string name = "") const {
    using Fn = detail::instance_fn_t<F>;
    static_assert(
        std::is_invocable_v<Fn&, const T&>,
        "for_each(f): f (or what per_instance's make returns) must be callable as f(const T&)");
    then_sink("for_each", std::move(name), [f](const instance_info& info) {
      return std::make_unique<ops::for_each_sink<T, Fn>>(detail::instance_fn<F>::make(f, info));
    });
  }

  /// Ends the stream in a user sink named by `op` (plans and metrics show it). `make(const
  /// instance_info&)` is called once per instance and returns either a std::unique_ptr to an
  /// operator_logic (process() gets batch<T>; finish() runs when the input ended; add_metrics()
  /// reports), or a function object called as f(const T&) per element.
  template <class Make>
  void sink(std::string op, Make make, std::string name = "") const {
    static_assert(std::is_invocable_v<const Make&, const instance_info&>,
                  "sink(op, make): make must be callable as make(const tidemark::instance_info&)");
    using R = std::invoke_result_t<const Make&, const instance_info&>;
    if constexpr (std::is_convertible_v<R, std::unique_ptr<operator_logic>>) {
      then_sink(std::move(op), std::move(name),
                [make](const instance_info& info) -> std::unique_ptr<operator_logic> {
                  return make(info);
                });
    } else {
      using Fn = std::decay_t<R>;
      static_assert(
          std::is_invocable_v<Fn&, const T&>,
          "sink(op, make): make must return std::unique_ptr<tidemark::operator_logic> or a "
          "function object callable as f(const T&) with the stream's element type T");
      then_sink(std::move(op), std::move(name), [make](const instance_info& info) {
        return std::make_unique<ops::for_each_sink<T, Fn>>(make(info));
      });
    }
  }

  /// Prints one line per element to standard output (needs operator<<).
  void print(std::string name = "") const {
    static_assert(detail::is_printable<T>::value, "print(): T needs an operator<<(std::ostream&, const T&)");
    auto writer = ops::line_writer::to_stdout();
    then_sink("print", std::move(name), [writer](const instance_info&) {
      return std::make_unique<ops::lines_sink<T, std::string (*)(const T&)>>(writer, &detail::to_line<T>);
    });
  }

  /// Writes one line per element to `path`, formatted by `format(const T&) -> std::string`.
  /// (A string second argument is the sink's name: see the overload below.)
  template <class Format, std::enable_if_t<!std::is_convertible_v<Format, std::string>, int> = 0>
  void write_lines(std::string path, Format format, std::string name = "") const {
    static_assert(std::is_invocable_r_v<std::string, Format&, const T&>,
                  "write_lines(path, f): f must be callable as f(const T&) and return std::string");
    auto writer = std::make_shared<ops::line_writer>();
    then_sink("write_lines", std::move(name), [writer, path, format](const instance_info& info) {
      writer->open(path, info.name);
      return std::make_unique<ops::lines_sink<T, Format>>(writer, format, info);
    });
  }

  /// Writes one line per element (operator<<) to `path`.
  void write_lines(std::string path, std::string name = "") const {
    static_assert(detail::is_printable<T>::value, "write_lines(path): T needs an operator<<");
    write_lines(std::move(path), &detail::to_line<T>, std::move(name));
  }

  /// The operator that produces this stream.
  node_id id() const noexcept { return id_; }

 private:
  friend class job;
  template <class>
  friend class stream;
  template <class, class, class>
  friend class keyed_stream;
  template <class, class, class, class>
  friend class windowed_stream;
  template <class, class, class>
  friend class window_streams;
  template <class>
  friend class feedback_loop;

  /// The stream on output `port` of operator `id`; `port_name` names a side output (port >= 1).
  stream(job j, node_id id, partitioning next = partitioning::forward, std::uint32_t port = 0,
         std::string port_name = "main")
      : job_(std::move(j)), id_(id), next_(next), port_(port) {
    // whether this stream crosses a process boundary is decided at deployment (placement comes
    // from the cluster file), so the codec is looked up here and checked there
    auto& outputs = node().outputs;
    if (outputs.size() <= port) outputs.resize(port + 1, output_port{"unused", nullptr, ""});
    auto& out = outputs[port];
    auto type = detail::demangle(typeid(T).name());
    if (out.value_type.empty()) {
      out.name = std::move(port_name);
      out.codec = batch_codec_for<T>();
      out.value_type = std::move(type);
    } else if (out.value_type != type || (port > 0 && out.name != port_name)) {
      throw job_error("operator '" + node().name + "': output port " + std::to_string(port) +
                      " is '" + out.name + "' carrying " + out.value_type + ", not '" + port_name +
                      "' carrying " + type + ": give each side output of an operator its own port");
    }
  }

  logical_node& node() { return job_.state_->graph.node(id_); }
  logical_edge edge() const { return {id_, next_, false, port_}; }
  stream with_partitioning(partitioning p) const {
    stream s{*this};
    s.next_ = p;
    return s;
  }

  template <class U, class Make>
  stream<U> then(std::string op, std::string name, Make make) const {
    auto id = job_.add_node(std::move(op), std::move(name), node_kind::transform, {edge()},
                            std::move(make));
    return stream<U>{job_, id};
  }

  /// Sinks take the parallelism of the operator they end, so they fuse with it.
  template <class Make>
  void then_sink(std::string op, std::string name, Make make) const {
    inherit_parallelism(
        job_.add_node(std::move(op), std::move(name), node_kind::sink, {edge()}, std::move(make)));
  }

  /// Gives the operator `id` this stream's parallelism, so that it fuses with its producer.
  void inherit_parallelism(node_id id) const {
    auto& g = job_.state_->graph;
    g.node(id).parallelism = g.node(id_).parallelism;
  }

  mutable job job_;  // shares the job's state
  node_id id_;
  partitioning next_;
  std::uint32_t port_ = 0;  // the output port of id_ this stream reads
};

/// A stream partitioned by key K (computed by KeyFn); keyed operators keep state per key.
template <class K, class T, class KeyFn>
class keyed_stream {
 public:
  /// Running reduce per key: emits `acc = f(acc, x)` for each element; the first element of a key
  /// starts its accumulator.
  template <class F>
  stream<T> reduce(F f, std::string name = "") const {
    static_assert(std::is_invocable_r_v<T, F&, T, const T&>,
                  "reduce(f): f must be callable as f(T accumulator, const T& element) and return T");
    static_assert(std::is_default_constructible_v<T>,
                  "reduce(f): T must be default-constructible (keyed state stores it)");
    auto project = [](const K&, const T& acc) { return acc; };
    return keyed_then<T>("reduce", std::move(name), [key = key_, f, project](const instance_info&) {
      return std::make_unique<ops::fold_logic<T, K, T, KeyFn, F, decltype(project)>>(
          key, std::nullopt, f, project);
    });
  }

  /// Windows per key: `a` is tumbling, sliding, session or a count window (windows.hpp).
  template <class Assigner>
  windowed_stream<K, T, KeyFn, Assigner> window(Assigner a) const {
    static_assert(std::is_same_v<Assigner, tumbling> || std::is_same_v<Assigner, sliding> ||
                      std::is_same_v<Assigner, session> || std::is_same_v<Assigner, count_window>,
                  "window(a): a must be tumbling(...), sliding(...), session(...), "
                  "count_tumbling(...) or count_sliding(...)");
    return {*this, std::move(a)};
  }

  /// Per-key state: `f(State& state, const T& x, collector<Out>& out)` runs for every element with
  /// its key's state, made by `make_state()` or `make_state(const K&)` on the key's first element,
  /// and emits any number of Out (and side outputs). f may be per_instance(make). The state stays
  /// in the instance that owns the key, in place: no allocation per element. The element is the
  /// operator's own: f may take it as `T&` and move it into `out` instead of copying it.
  template <class Out, class MakeState, class F>
  stream<Out> process(MakeState make_state, F f, std::string name = "") const {
    constexpr bool by_key = std::is_invocable_v<const MakeState&, const K&>;
    static_assert(by_key || std::is_invocable_v<const MakeState&>,
                  "process<Out>(make_state, f): make_state must be callable as make_state() or "
                  "make_state(const K& key) and return the initial state of a key");
    using State = std::decay_t<
        typename std::conditional_t<by_key, std::invoke_result<const MakeState&, const K&>,
                                    std::invoke_result<const MakeState&>>::type>;
    static_assert(!std::is_void_v<State> && std::is_default_constructible_v<State> &&
                      std::is_move_assignable_v<State>,
                  "process<Out>(make_state, f): the state type must be default-constructible and "
                  "move-assignable (keyed state lives in a table of slots)");
    using Fn = detail::instance_fn_t<F>;
    static_assert(std::is_invocable_v<Fn&, State&, T&, collector<Out>&>,
                  "process<Out>(make_state, f): f (or what per_instance's make returns) must be "
                  "callable as f(State& state, const T& element, tidemark::collector<Out>& out) "
                  "(or with T& element)");
    return keyed_then<Out>(
        "keyed_process", std::move(name), [key = key_, make_state, f](const instance_info& info) {
          return std::make_unique<ops::keyed_process_logic<T, K, Out, KeyFn, State, MakeState, Fn>>(
              key, make_state, detail::instance_fn<F>::make(f, info));
        });
  }

  /// Running fold per key: emits (key, acc = f(acc, x)) for each element; acc starts at `init`.
  template <class A, class F>
  stream<std::pair<K, A>> fold(A init, F f, std::string name = "") const {
    static_assert(std::is_invocable_r_v<A, F&, A, const T&>,
                  "fold(init, f): f must be callable as f(A accumulator, const T& element) and return A");
    auto project = [](const K& k, const A& acc) { return std::pair<K, A>{k, acc}; };
    return keyed_then<std::pair<K, A>>(
        "fold", std::move(name), [key = key_, init, f, project](const instance_info&) {
          return std::make_unique<ops::fold_logic<T, K, A, KeyFn, F, decltype(project)>>(
              key, init, f, project);
        });
  }

 private:
  template <class>
  friend class stream;
  template <class, class, class, class>
  friend class windowed_stream;

  keyed_stream(stream<T> s, KeyFn key) : stream_(std::move(s)), key_(std::move(key)) {}

  template <class U, class Make>
  stream<U> keyed_then(std::string op, std::string name, Make make) const {
    auto id = stream_.job_.add_node(std::move(op), std::move(name), node_kind::transform,
                                    {{stream_.id_, partitioning::key_hash}}, std::move(make));
    return stream<U>{stream_.job_, id};
  }

  stream<T> stream_;
  KeyFn key_;
};

/// A keyed stream cut into windows; aggregate() or process() adds the window operator.
template <class K, class T, class KeyFn, class Assigner>
class windowed_stream {
  static constexpr bool timed = !std::is_same_v<Assigner, count_window>;

 public:
  windowed_stream(keyed_stream<K, T, KeyFn> in, Assigner a) : in_(std::move(in)), a_(std::move(a)) {}

  /// Late events up to `ms` behind a window's end update it (default 0: late events are dropped
  /// to the late output).
  windowed_stream& allowed_lateness(event_time ms) {
    static_assert(timed, "allowed_lateness: count windows have no event time");
    if (ms < 0) throw job_error("allowed_lateness(ms): ms must be >= 0, got " + std::to_string(ms));
    cfg_.allowed_lateness = ms;
    cfg_.predictive_lateness.reset();
    return *this;
  }
  /// How long windows accept late events: `lateness::fixed{ms}` (as allowed_lateness) or
  /// `lateness::predictive{coverage, confidence, initial, min, max}`.
  windowed_stream& lateness(const tidemark::lateness& l) {
    static_assert(timed, "lateness: count windows have no event time");
    if (const auto* f = l.as_fixed()) return allowed_lateness(f->ms);
    cfg_.predictive_lateness = *l.as_predictive();
    return *this;
  }
  /// Early results before the watermark passes a window's end (the on-time result always comes).
  windowed_stream& trigger(tidemark::trigger t) {
    static_assert(timed, "trigger: count windows fire when full");
    cfg_.early = t;
    return *this;
  }
  /// When windows re-fire with late events within the allowed lateness.
  windowed_stream& late_trigger(tidemark::late_trigger t) {
    static_assert(timed, "late_trigger: count windows have no late events");
    cfg_.late = std::move(t);
    return *this;
  }
  /// Whether a watermark's on-time results leave before the late re-executions it also triggers
  /// (default true: a past window read back from disk never delays the current one; false:
  /// windows fire in window order).
  windowed_stream& on_time_first(bool on) {
    static_assert(timed, "on_time_first: count windows have no late events");
    cfg_.on_time_first = on;
    return *this;
  }
  /// Where process() functions keep window events (default: memory_window_store).
  windowed_stream& store(std::function<std::unique_ptr<window_store<K, T>>()> make) {
    make_store_ = [make](const instance_info&, event_time) { return make(); };
    return *this;
  }
  /// Keeps process() functions' events in memory only (the default).
  windowed_stream& state(in_memory) {
    make_store_ = nullptr;
    return *this;
  }
  /// Keeps process() functions' events in the tiered (Aion) store on the node's storage service:
  /// m-buckets in memory, p-buckets on disk, pre-staged before late re-executions. The caller
  /// includes tidemark/core/tiered_window_store.hpp (only jobs that use it pay for compiling it).
  windowed_stream& state(tiered t) {
    static_assert(detail::is_complete<tiered_window_store<K, T>>::value,
                  "state(tiered): include \"tidemark/core/tiered_window_store.hpp\" (the tiered store)");
    make_store_ = [t](const instance_info& info, event_time lateness) {
      return std::make_unique<tiered_window_store<K, T>>(t, info.storage, lateness);
    };
    return *this;
  }

  /// Incremental aggregate per (window, key): agg::sum, count, min, max, mean, reduce, fold.
  template <class Agg>
  auto aggregate(Agg a, std::string name = "") const {
    static_assert(detail::is_aggregate_for<Agg, T>::value,
                  "aggregate(a): a must be an aggregate over the stream's elements, e.g. "
                  "agg::sum(f) with f callable as f(const T&) (see windows.hpp for the interface)");
    using fn = ops::aggregate_function<T, K, Agg>;
    return add(std::move(name), [a](const instance_info&) { return fn{a}; });
  }

  /// Full-window function `f(const K&, const window_id&, window_events<T>&) -> R`, called with
  /// all events of the (window, key) each time it fires (f may be per_instance(make)).
  template <class F>
  auto process(F f, std::string name = "") const {
    using Fn = detail::instance_fn_t<F>;
    static_assert(std::is_invocable_v<Fn&, const K&, const window_id&, window_events<T>&>,
                  "process(f): f (or what per_instance's make returns) must be callable as "
                  "f(const K& key, const tidemark::window_id&, tidemark::window_events<T>& events) "
                  "and return the window's result");
    using fn = ops::process_function<T, K, Fn>;
    static_assert(!std::is_void_v<typename fn::value_type>, "process(f): f must return the result");
    auto make_store = make_store_;
    return add(std::move(name),
               [f, make_store, lateness = cfg_.allowed_lateness](const instance_info& info) {
                 return fn{detail::instance_fn<F>::make(f, info),
                           make_store ? make_store(info, lateness)
                                      : std::make_unique<memory_window_store<K, T>>()};
               });
  }

 private:
  template <class MakeFn>
  auto add(std::string name, MakeFn make_fn) const {
    using fn = std::invoke_result_t<MakeFn&, const instance_info&>;
    using R = typename fn::value_type;
    auto key = in_.key_;
    auto results = in_.template keyed_then<window_result<K, R>>(
        "window", std::move(name), [a = a_, key, cfg = cfg_, make_fn](const instance_info& info) {
          return ops::make_window_logic<T, K>(a, key, make_fn(info), cfg, info.name);
        });
    return window_streams<K, R, T>{results};
  }

  keyed_stream<K, T, KeyFn> in_;
  Assigner a_;
  window_config cfg_;
  std::function<std::unique_ptr<window_store<K, T>>(const instance_info&, event_time)> make_store_;
};

/// The outputs of a window operator: results() on its main port and late() on port late_port,
/// for events that no window took (too late for all their windows, or in a gap between sliding
/// windows; each such event appears there exactly once). Both read the window operator itself, so
/// they fuse with it.
template <class K, class R, class T>
class window_streams {
 public:
  explicit window_streams(stream<window_result<K, R>> results)
      : results_(results),
        late_(results.job_, results.id_, partitioning::forward, late_port, "late") {}

  /// Parallel instances of the window operator (set it before adding sinks to results() or
  /// late(): sinks take the parallelism of what they end).
  window_streams& parallelism(std::uint32_t n) {
    results_.parallelism(n);
    return *this;
  }

  /// One window_result per firing of a (window, key).
  stream<window_result<K, R>> results() const { return results_; }
  /// The dropped events, with their event times.
  stream<T> late() const { return late_; }

 private:
  stream<window_result<K, R>> results_;
  stream<T> late_;
};

/// A loop under construction (job::iterate): read its stream, then close it with the loop's result.
template <class T>
class feedback_loop {
 public:
  /// What the loop feeds back, to be merged with the loop's input.
  stream<T> feedback() const { return {job_, id_}; }
  /// Feeds `s` back into stream() over a feedback edge. Call once.
  void close(const stream<T>& s) {
    auto& n = job_.state_->graph.node(id_);
    if (!n.inputs.empty()) throw job_error("feedback '" + n.name + "' is closed twice");
    n.inputs.push_back({s.id(), partitioning::forward, true});
    n.parallelism = job_.state_->graph.node(s.id()).parallelism;
  }

 private:
  friend class job;
  feedback_loop(job j, node_id id) : job_(std::move(j)), id_(id) {}
  job job_;
  node_id id_;
};

template <class T>
feedback_loop<T> job::iterate(std::string name) {
  auto id = add_node("feedback", std::move(name), node_kind::transform, {},
                     [](const instance_info&) { return std::make_unique<ops::union_logic>(); });
  return feedback_loop<T>{*this, id};
}

template <class T, class Make>
stream<T> job::add_source(std::string op, std::string name, Make make) {
  logical_node n;
  n.op = std::move(op);
  n.kind = node_kind::source;
  n.make_source = std::move(make);
  return stream<T>{*this, finish_node(std::move(n), std::move(name))};
}

}  // namespace tidemark
