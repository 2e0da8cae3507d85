// Window-state blocks of a tiered store: events encoded with the one value codec,
// tidemark::codec<T> (trivially copyable types without one are copied as bytes), and the memory
// footprint of an event, which a store uses to bound its m-buckets by bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tidemark/core/codec.hpp"

namespace tidemark {

/// Bytes of memory one event holds: the object and what it owns. Specialize for event types
/// that own memory other than strings and vectors (`static std::size_t of(const T&)`).
template <class T, class = void>
struct state_footprint {
  static std::size_t of(const T&) { return sizeof(T); }
};

template <>
struct state_footprint<std::string> {
  /// The object plus its heap buffer when the string outgrew the small-string buffer.
  static std::size_t of(const std::string& x) {
    return sizeof(std::string) + (x.capacity() > 15 ? x.capacity() + 1 : 0);
  }
};

template <class U>
struct state_footprint<std::vector<U>> {
  static std::size_t of(const std::vector<U>& xs) {
    std::size_t n = sizeof(xs) + (xs.capacity() - xs.size()) * sizeof(U);
    for (const auto& x : xs) n += state_footprint<U>::of(x);
    return n;
  }
};

template <class A, class B>
struct state_footprint<std::pair<A, B>> {
  static std::size_t of(const std::pair<A, B>& x) {
    return state_footprint<A>::of(x.first) + state_footprint<B>::of(x.second) + sizeof(x) -
           sizeof(A) - sizeof(B);
  }
};

/// Aggregates that list their fields (TIDEMARK_FIELDS): the sum over the fields plus padding.
template <class T>
struct state_footprint<T, std::enable_if_t<detail::has_fields<T>::value>> {
  static std::size_t of(const T& x) {
    std::size_t owned = 0;
    std::apply(
        [&](const auto&... f) {
          ((owned += state_footprint<std::decay_t<decltype(f)>>::of(f) - sizeof(f)), ...);
        },
        x.tidemark_fields());
    return sizeof(T) + owned;
  }
};

template <class T>
std::size_t event_footprint(const T& x) {
  return state_footprint<T>::of(x);
}

namespace detail {

template <class T>
void encode_event(byte_writer& w, const T& x) {
  if constexpr (has_codec_v<T>) {
    codec<T>::encode(w, x);
  } else {
    static_assert(std::is_trivially_copyable_v<T>,
                  "tiered window state needs a tidemark::codec<T> for this event type: add "
                  "TIDEMARK_FIELDS(field1, field2, ...) to the struct, or specialize codec<T>");
    w.write(&x, sizeof x);
  }
}

template <class T>
void decode_event(byte_reader& r, T& x) {
  if constexpr (has_codec_v<T>)
    codec<T>::decode(r, x);
  else
    r.read(&x, sizeof x);
}

}  // namespace detail

/// The payload of a block of `n` events: the count, then each event.
template <class T>
std::string encode_block(const T* events, std::size_t n) {
  std::size_t footprint = sizeof(std::uint32_t);  // about the encoded size: one allocation
  for (std::size_t i = 0; i < n; ++i) footprint += event_footprint(events[i]);
  std::vector<std::uint8_t> bytes;
  bytes.reserve(footprint);
  byte_writer w{bytes};
  w.write_size(n);
  for (std::size_t i = 0; i < n; ++i) detail::encode_event(w, events[i]);
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

/// Decodes a payload written by encode_block; false when it is truncated, malformed, has
/// trailing bytes or holds another number of events than `expected`.
template <class T>
bool decode_block(std::string_view payload, std::size_t expected, std::vector<T>& out) {
  byte_reader r{reinterpret_cast<const std::uint8_t*>(payload.data()), payload.size()};
  try {
    if (r.read_size(0) != expected) return false;
    out.clear();
    out.reserve(expected);
    for (std::size_t i = 0; i < expected; ++i) detail::decode_event(r, out.emplace_back());
  } catch (const wire_error&) {
    return false;
  }
  return r.remaining() == 0;
}

}  // namespace tidemark
