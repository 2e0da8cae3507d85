// Bytes of window-state blocks: the small serializer a tiered window store uses to write events to
// its p-buckets and read them back. Trivially copyable types are copied, strings, vectors and pairs
// are length-prefixed; applications specialize block_codec<T> for their own event types.
// (When the wire codec tidemark::codec<T> is merged, block_codec<T> forwards to it.)
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace tidemark {

template <class T, class Enable = void>
struct block_codec {
  static_assert(sizeof(T) == 0,
                "tiered window state needs tidemark::block_codec<T>: T is not trivially copyable; "
                "specialize block_codec<T> with static void write(byte_writer&, const T&), "
                "static bool read(byte_reader&, T&) and static std::size_t footprint(const T&)");
};

/// Appends bytes to a string.
class byte_writer {
 public:
  explicit byte_writer(std::string& out) : out_(out) {}
  void raw(const void* p, std::size_t n) { out_.append(static_cast<const char*>(p), n); }
  template <class T>
  void put(const T& x) {
    block_codec<T>::write(*this, x);
  }

 private:
  std::string& out_;
};

/// Reads bytes written by byte_writer; every read checks the remaining length.
class byte_reader {
 public:
  explicit byte_reader(std::string_view in) : in_(in) {}
  /// False (and nothing read) when fewer than n bytes remain.
  bool raw(void* p, std::size_t n) {
    if (n > in_.size()) return false;
    std::memcpy(p, in_.data(), n);
    in_.remove_prefix(n);
    return true;
  }
  template <class T>
  bool get(T& x) {
    return block_codec<T>::read(*this, x);
  }
  std::size_t remaining() const noexcept { return in_.size(); }

 private:
  std::string_view in_;
};

/// Trivially copyable values: their bytes (pointers inside them would be meaningless on disk).
template <class T>
struct block_codec<T, std::enable_if_t<std::is_trivially_copyable_v<T>>> {
  static void write(byte_writer& w, const T& x) { w.raw(&x, sizeof(T)); }
  static bool read(byte_reader& r, T& x) { return r.raw(&x, sizeof(T)); }
  static std::size_t footprint(const T&) { return sizeof(T); }
};

template <>
struct block_codec<std::string> {
  static void write(byte_writer& w, const std::string& x) {
    const auto n = static_cast<std::uint32_t>(x.size());
    w.raw(&n, sizeof n);
    w.raw(x.data(), x.size());
  }
  static bool read(byte_reader& r, std::string& x) {
    std::uint32_t n = 0;
    if (!r.raw(&n, sizeof n) || n > r.remaining()) return false;
    x.resize(n);
    return r.raw(x.data(), n);
  }
  /// The object plus its heap buffer when the string outgrew the small-string buffer.
  static std::size_t footprint(const std::string& x) {
    return sizeof(std::string) + (x.capacity() > 15 ? x.capacity() + 1 : 0);
  }
};

template <class U>
struct block_codec<std::vector<U>> {
  static void write(byte_writer& w, const std::vector<U>& xs) {
    const auto n = static_cast<std::uint32_t>(xs.size());
    w.raw(&n, sizeof n);
    for (const auto& x : xs) w.put(x);
  }
  static bool read(byte_reader& r, std::vector<U>& xs) {
    std::uint32_t n = 0;
    if (!r.raw(&n, sizeof n)) return false;
    xs.clear();
    xs.reserve(std::min<std::size_t>(n, r.remaining()));
    for (std::uint32_t i = 0; i < n; ++i)
      if (!r.get(xs.emplace_back())) return false;
    return true;
  }
  static std::size_t footprint(const std::vector<U>& xs) {
    std::size_t n = sizeof(xs) + (xs.capacity() - xs.size()) * sizeof(U);
    for (const auto& x : xs) n += block_codec<U>::footprint(x);
    return n;
  }
};

template <class A, class B>
struct block_codec<std::pair<A, B>, std::enable_if_t<!std::is_trivially_copyable_v<std::pair<A, B>>>> {
  static void write(byte_writer& w, const std::pair<A, B>& x) {
    w.put(x.first);
    w.put(x.second);
  }
  static bool read(byte_reader& r, std::pair<A, B>& x) { return r.get(x.first) && r.get(x.second); }
  static std::size_t footprint(const std::pair<A, B>& x) {
    return block_codec<A>::footprint(x.first) + block_codec<B>::footprint(x.second) +
           sizeof(x) - sizeof(A) - sizeof(B);
  }
};

/// Bytes of memory one event holds (the object and what it owns).
template <class T>
std::size_t event_footprint(const T& x) {
  return block_codec<T>::footprint(x);
}

/// The payload of a block of `n` events: the count, then each event.
template <class T>
std::string encode_block(const T* events, std::size_t n) {
  std::string out;
  byte_writer w{out};
  const auto count = static_cast<std::uint32_t>(n);
  w.raw(&count, sizeof count);
  for (std::size_t i = 0; i < n; ++i) w.put(events[i]);
  return out;
}

/// Decodes a payload written by encode_block; false when it is truncated, has trailing bytes or
/// holds another number of events than `expected`.
template <class T>
bool decode_block(std::string_view payload, std::size_t expected, std::vector<T>& out) {
  byte_reader r{payload};
  std::uint32_t count = 0;
  if (!r.raw(&count, sizeof count) || count != expected) return false;
  out.clear();
  out.reserve(count);
  for (std::uint32_t i = 0; i < count; ++i)
    if (!r.get(out.emplace_back())) return false;
  return r.remaining() == 0;
}

}  // namespace tidemark
