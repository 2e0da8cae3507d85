// tidemark::codec<T>: the one customization point that turns a value into bytes and back, used
// whenever values cross a process boundary. Ready codecs cover arithmetic types and enums,
// strings, vectors, arrays, maps, optionals, shared pointers, pairs, tuples and aggregates that
// list their fields with TIDEMARK_FIELDS(a, b, c). Other types specialize codec<T> with
// encode/decode.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tidemark/core/batch.hpp"
#include "tidemark/core/windows.hpp"

namespace tidemark {

/// Bytes that could not be decoded (truncated, a length past the end, a bad value).
class wire_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Appends bytes to a growing buffer (little-endian host layout; every supported host is one).
class byte_writer {
 public:
  explicit byte_writer(std::vector<std::uint8_t>& out) noexcept : out_(out) {}
  void write(const void* p, std::size_t n) {
    auto at = out_.size();
    out_.resize(at + n);
    if (n) std::memcpy(out_.data() + at, p, n);
  }
  void write_size(std::size_t n) {
    auto v = static_cast<std::uint32_t>(n);
    write(&v, sizeof v);
  }

 private:
  std::vector<std::uint8_t>& out_;
};

/// Reads bytes written by byte_writer; every read checks the remaining length and throws
/// wire_error instead of reading past the end.
class byte_reader {
 public:
  byte_reader(const std::uint8_t* p, std::size_t n) noexcept : p_(p), end_(p + n) {}
  void read(void* dst, std::size_t n) {
    if (n > remaining()) throw wire_error("truncated value: need " + std::to_string(n) +
                                          " bytes, " + std::to_string(remaining()) + " left");
    if (n) std::memcpy(dst, p_, n);
    p_ += n;
  }
  /// A count of elements that each take at least `min_bytes`; rejects counts the rest cannot hold.
  std::size_t read_size(std::size_t min_bytes = 1) {
    std::uint32_t v = 0;
    read(&v, sizeof v);
    if (min_bytes && v > remaining() / min_bytes)
      throw wire_error("length " + std::to_string(v) + " exceeds the " +
                       std::to_string(remaining()) + " bytes left");
    return v;
  }
  std::size_t remaining() const noexcept { return static_cast<std::size_t>(end_ - p_); }

 private:
  const std::uint8_t* p_;
  const std::uint8_t* end_;
};

/// Specialize for your type: `static void encode(byte_writer&, const T&)` and
/// `static void decode(byte_reader&, T&)`. Left undefined for types without a codec.
template <class T, class = void>
struct codec;

template <class T, class = void>
struct has_codec : std::false_type {};
template <class T>
struct has_codec<T, std::void_t<decltype(codec<T>::encode(std::declval<byte_writer&>(),
                                                           std::declval<const T&>()))>>
    : std::true_type {};
/// True when values of T can cross a process boundary.
template <class T>
inline constexpr bool has_codec_v = has_codec<T>::value;

/// Lists the fields of an aggregate so that it gets a codec: `TIDEMARK_FIELDS(sensor, value)`
/// inside the struct. Fields are encoded in the listed order.
#define TIDEMARK_FIELDS(...)                                                   \
  auto tidemark_fields() noexcept { return std::tie(__VA_ARGS__); }           \
  auto tidemark_fields() const noexcept { return std::tie(__VA_ARGS__); }

namespace detail {
template <class Tuple>
struct all_have_codec;
template <class... Ts>
struct all_have_codec<std::tuple<Ts...>>
    : std::bool_constant<(has_codec_v<std::decay_t<Ts>> && ...)> {};

template <class T, class = void>
struct has_fields : std::false_type {};
template <class T>
struct has_fields<T, std::void_t<decltype(std::declval<const T&>().tidemark_fields())>>
    : all_have_codec<decltype(std::declval<const T&>().tidemark_fields())> {};

template <class Tuple>
void encode_each(byte_writer& w, const Tuple& t) {
  std::apply([&](const auto&... x) { (codec<std::decay_t<decltype(x)>>::encode(w, x), ...); }, t);
}
template <class Tuple>
void decode_each(byte_reader& r, Tuple&& t) {
  std::apply([&](auto&... x) { (codec<std::decay_t<decltype(x)>>::decode(r, x), ...); }, t);
}
}  // namespace detail

template <class T>
struct codec<T, std::enable_if_t<std::is_arithmetic_v<T> || std::is_enum_v<T>>> {
  static void encode(byte_writer& w, const T& x) { w.write(&x, sizeof x); }
  static void decode(byte_reader& r, T& x) {
    if constexpr (std::is_same_v<T, bool>) {
      std::uint8_t b = 0;
      r.read(&b, 1);
      if (b > 1) throw wire_error("bad bool value " + std::to_string(b));
      x = b != 0;
    } else {
      r.read(&x, sizeof x);
    }
  }
};

template <>
struct codec<std::string> {
  static void encode(byte_writer& w, const std::string& s) {
    w.write_size(s.size());
    w.write(s.data(), s.size());
  }
  static void decode(byte_reader& r, std::string& s) {
    s.resize(r.read_size());
    r.read(s.data(), s.size());
  }
};

template <class T>
struct codec<std::vector<T>, std::enable_if_t<has_codec_v<T>>> {
  static void encode(byte_writer& w, const std::vector<T>& xs) {
    w.write_size(xs.size());
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>)
      w.write(xs.data(), xs.size() * sizeof(T));
    else
      for (const auto& x : xs) codec<T>::encode(w, x);
  }
  static void decode(byte_reader& r, std::vector<T>& xs) {
    // an element takes at least one byte (a bool, or an empty string's length is 4)
    xs.resize(r.read_size(std::is_arithmetic_v<T> ? sizeof(T) : 1));
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>)
      r.read(xs.data(), xs.size() * sizeof(T));
    else
      for (std::size_t i = 0; i < xs.size(); ++i) {  // not a range-for: vector<bool>
        T v{};
        codec<T>::decode(r, v);
        xs[i] = std::move(v);
      }
  }
};

template <class T>
struct codec<std::optional<T>, std::enable_if_t<has_codec_v<T>>> {
  static void encode(byte_writer& w, const std::optional<T>& x) {
    codec<bool>::encode(w, x.has_value());
    if (x) codec<T>::encode(w, *x);
  }
  static void decode(byte_reader& r, std::optional<T>& x) {
    bool present = false;
    codec<bool>::decode(r, present);
    x.reset();
    if (present) codec<T>::decode(r, x.emplace());
  }
};

template <class T, std::size_t N>
struct codec<std::array<T, N>, std::enable_if_t<has_codec_v<T>>> {
  static void encode(byte_writer& w, const std::array<T, N>& xs) {
    for (const auto& x : xs) codec<T>::encode(w, x);
  }
  static void decode(byte_reader& r, std::array<T, N>& xs) {
    for (auto& x : xs) codec<T>::decode(r, x);
  }
};

/// Entries in key order; decoding rejects a key that appears twice.
template <class K, class V, class Compare, class Alloc>
struct codec<std::map<K, V, Compare, Alloc>, std::enable_if_t<has_codec_v<K> && has_codec_v<V>>> {
  static void encode(byte_writer& w, const std::map<K, V, Compare, Alloc>& m) {
    w.write_size(m.size());
    for (const auto& [k, v] : m) {
      codec<K>::encode(w, k);
      codec<V>::encode(w, v);
    }
  }
  static void decode(byte_reader& r, std::map<K, V, Compare, Alloc>& m) {
    m.clear();
    for (auto n = r.read_size(); n > 0; --n) {
      K k{};
      V v{};
      codec<K>::decode(r, k);
      codec<V>::decode(r, v);
      if (!m.emplace(std::move(k), std::move(v)).second) throw wire_error("duplicate map key");
    }
  }
};

/// The value pointed to (or its absence); the receiver gets its own copy, so pointers that
/// shared one value in the sender no longer share it.
template <class T>
struct codec<std::shared_ptr<T>, std::enable_if_t<has_codec_v<std::remove_const_t<T>>>> {
  using value_type = std::remove_const_t<T>;
  static void encode(byte_writer& w, const std::shared_ptr<T>& p) {
    codec<bool>::encode(w, p != nullptr);
    if (p) codec<value_type>::encode(w, *p);
  }
  static void decode(byte_reader& r, std::shared_ptr<T>& p) {
    bool present = false;
    codec<bool>::decode(r, present);
    p.reset();
    if (!present) return;
    auto v = std::make_shared<value_type>();
    codec<value_type>::decode(r, *v);
    p = std::move(v);
  }
};

template <class A, class B>
struct codec<std::pair<A, B>, std::enable_if_t<has_codec_v<A> && has_codec_v<B>>> {
  static void encode(byte_writer& w, const std::pair<A, B>& p) {
    codec<A>::encode(w, p.first);
    codec<B>::encode(w, p.second);
  }
  static void decode(byte_reader& r, std::pair<A, B>& p) {
    codec<A>::decode(r, p.first);
    codec<B>::decode(r, p.second);
  }
};

template <class... Ts>
struct codec<std::tuple<Ts...>, std::enable_if_t<(has_codec_v<Ts> && ...)>> {
  static void encode(byte_writer& w, const std::tuple<Ts...>& t) { detail::encode_each(w, t); }
  static void decode(byte_reader& r, std::tuple<Ts...>& t) { detail::decode_each(r, t); }
};

/// Aggregates that declare TIDEMARK_FIELDS(...) and whose fields all have codecs.
template <class T>
struct codec<T, std::enable_if_t<detail::has_fields<T>::value>> {
  static void encode(byte_writer& w, const T& x) { detail::encode_each(w, x.tidemark_fields()); }
  static void decode(byte_reader& r, T& x) { detail::decode_each(r, x.tidemark_fields()); }
};

template <>
struct codec<window_id> {
  static void encode(byte_writer& w, const window_id& x) { w.write(&x, sizeof x); }
  static void decode(byte_reader& r, window_id& x) { r.read(&x, sizeof x); }
};

template <class K, class R>
struct codec<window_result<K, R>, std::enable_if_t<has_codec_v<K> && has_codec_v<R>>> {
  static void encode(byte_writer& w, const window_result<K, R>& x) {
    detail::encode_each(w, std::tie(x.window, x.key, x.revision, x.final, x.timing, x.value));
  }
  static void decode(byte_reader& r, window_result<K, R>& x) {
    detail::decode_each(r, std::tie(x.window, x.key, x.revision, x.final, x.timing, x.value));
  }
};

// Window state in checkpoints: the late trigger's state of a (window, key) and the accumulators
// of the built-in aggregates (sum and count accumulate plain numbers, which have codecs).

template <>
struct codec<fire_state> {
  static void encode(byte_writer& w, const fire_state& x) {
    detail::encode_each(w, std::tie(x.revision, x.pending, x.last_fire_ms, x.expired_ms, x.plan));
  }
  static void decode(byte_reader& r, fire_state& x) {
    detail::decode_each(r, std::tie(x.revision, x.pending, x.last_fire_ms, x.expired_ms, x.plan));
  }
};

template <class V>
struct codec<agg::first_and_rest<V>, std::enable_if_t<has_codec_v<V>>> {
  static void encode(byte_writer& w, const agg::first_and_rest<V>& x) {
    detail::encode_each(w, std::tie(x.value, x.any));
  }
  static void decode(byte_reader& r, agg::first_and_rest<V>& x) {
    detail::decode_each(r, std::tie(x.value, x.any));
  }
};

template <>
struct codec<agg::mean_acc> {
  static void encode(byte_writer& w, const agg::mean_acc& x) {
    detail::encode_each(w, std::tie(x.sum, x.n));
  }
  static void decode(byte_reader& r, agg::mean_acc& x) { detail::decode_each(r, std::tie(x.sum, x.n)); }
};

/// Fails to compile, with a message naming the remedy, when T has no codec.
template <class T>
constexpr void require_codec() {
  static_assert(has_codec_v<T>,
                "tidemark::codec<T> is missing for a type that must cross a process boundary: "
                "list its fields with TIDEMARK_FIELDS(a, b, ...) inside the struct, or specialize "
                "tidemark::codec<T> with static encode(byte_writer&, const T&) and "
                "decode(byte_reader&, T&)");
}

/// Appends the encoding of `x` to `out`.
template <class T>
void encode(const T& x, std::vector<std::uint8_t>& out) {
  require_codec<T>();
  byte_writer w{out};
  codec<T>::encode(w, x);
}

/// Decodes a T from exactly `n` bytes; throws wire_error on truncated or trailing bytes.
template <class T>
T decode(const std::uint8_t* p, std::size_t n) {
  require_codec<T>();
  byte_reader r{p, n};
  T x{};
  codec<T>::decode(r, x);
  if (r.remaining()) throw wire_error(std::to_string(r.remaining()) + " trailing bytes");
  return x;
}

/// Encodes and decodes the values of batches of one type, for the runtime that only sees
/// batch_base. Event times and key hashes travel beside the values (see the wire schema).
class batch_codec {
 public:
  virtual ~batch_codec() = default;
  virtual void encode_values(const batch_base& b, std::vector<std::uint8_t>& out) const = 0;
  /// A batch holding the decoded values; throws wire_error on malformed bytes.
  virtual batch_ptr decode_values(const std::uint8_t* p, std::size_t n) const = 0;
};

namespace detail {
template <class T>
class typed_batch_codec final : public batch_codec {
 public:
  void encode_values(const batch_base& b, std::vector<std::uint8_t>& out) const override {
    byte_writer w{out};
    codec<std::vector<T>>::encode(w, static_cast<const batch<T>&>(b).values);
  }
  batch_ptr decode_values(const std::uint8_t* p, std::size_t n) const override {
    auto result = std::make_unique<batch<T>>();
    result->values = decode<std::vector<T>>(p, n);
    return result;
  }
};

/// The readable name of T, for error messages.
std::string demangle(const char* mangled);
}  // namespace detail

/// The batch codec of T, or null when T has no codec (such a stream can run embedded, and a
/// deployment that would send it between nodes is refused before it starts).
template <class T>
const batch_codec* batch_codec_for() noexcept {
  if constexpr (has_codec_v<T>) {
    static const detail::typed_batch_codec<T> instance;
    return &instance;
  } else {
    return nullptr;
  }
}

}  // namespace tidemark
