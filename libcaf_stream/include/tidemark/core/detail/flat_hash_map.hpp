// Open-addressing hash map for keyed operator state: one probe sequence over a flat array of
// slots, lookups by a precomputed hash (key_by hashes each element once), no allocation per key
// beyond the slot array's growth.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace tidemark::detail {

/// The key a keyed operator stores for the key `Q` a key function returns. A key function may
/// return a std::string_view (into its element, or into a buffer it owns, valid until its next
/// call): operators look their state up by the view and store a std::string only for a new key,
/// so a composed key costs no allocation per element. std::hash gives a view and the string
/// holding its characters the same hash, so partitioning and lookups agree.
template <class Q>
struct stored_key {
  using type = Q;
};
template <>
struct stored_key<std::string_view> {
  using type = std::string;
};
template <class Q>
using stored_key_t = typename stored_key<Q>::type;

/// `q` as the stored key type K: itself when it is one, else a K made from it.
template <class K, class Q>
decltype(auto) as_stored(const Q& q) {
  if constexpr (std::is_same_v<K, Q>)
    return (q);
  else
    return K(q);
}

template <class K, class V>
class flat_hash_map {
 public:
  struct slot {
    std::uint64_t hash = 0;
    bool used = false;
    K key{};
    V value{};
  };

  flat_hash_map() = default;
  flat_hash_map(const flat_hash_map&) = default;
  flat_hash_map& operator=(const flat_hash_map&) = default;
  /// A table moved from is empty (tables are handed on between windows and reused).
  flat_hash_map(flat_hash_map&& other) noexcept { take(other); }
  flat_hash_map& operator=(flat_hash_map&& other) noexcept {
    if (this != &other) take(other);
    return *this;
  }

  /// Returns the value for `key` (whose hash is `h`), inserting `make()` when absent.
  template <class Make>
  V& find_or_insert(std::uint64_t h, const K& key, Make&& make) {
    auto [value, inserted] = find_or_add(h, key);
    if (inserted) value = make();
    return value;
  }

  /// Returns the value slot for `key` and whether it was just added (default-constructed). `key`
  /// may be any type comparable with K and from which a K can be made (a std::string_view for
  /// std::string keys): it is copied into a K only when added.
  template <class Q>
  std::pair<V&, bool> find_or_add(std::uint64_t h, const Q& key) {
    if (size_ >= limit_) grow();
    const auto mask = mask_;
    for (auto i = h & mask;; i = (i + 1) & mask) {
      auto& s = slots_[i];
      if (!s.used) {
        s.used = true;
        s.hash = h;
        s.key = as_stored<K>(key);
        ++size_;
        return {s.value, true};
      }
      if (s.hash == h && s.key == key) return {s.value, false};
    }
  }

  /// The value for `key` (hash `h`), or nullptr when absent.
  V* find(std::uint64_t h, const K& key) {
    if (size_ == 0) return nullptr;
    const auto mask = mask_;
    for (auto i = h & mask;; i = (i + 1) & mask) {
      auto& s = slots_[i];
      if (!s.used) return nullptr;
      if (s.hash == h && s.key == key) return &s.value;
    }
  }

  /// Removes `key` (hash `h`) if present. Backward-shift deletion keeps probe sequences intact
  /// without tombstones.
  void erase(std::uint64_t h, const K& key) {
    if (size_ == 0) return;
    const auto mask = mask_;
    auto i = h & mask;
    for (;; i = (i + 1) & mask) {
      if (!slots_[i].used) return;
      if (slots_[i].hash == h && slots_[i].key == key) break;
    }
    for (auto j = (i + 1) & mask; slots_[j].used; j = (j + 1) & mask) {
      auto home = slots_[j].hash & mask;
      // Slot j may move into the hole at i when its home is not in the cyclic range (i, j].
      if (((j - home) & mask) >= ((j - i) & mask)) {
        slots_[i] = std::move(slots_[j]);
        i = j;
      }
    }
    slots_[i] = slot{};
    --size_;
  }

  /// Removes every entry but keeps the slot array, so a table can be reused without regrowing.
  void clear() {
    if (size_ == 0) return;
    for (auto& s : slots_)
      if (s.used) s = slot{};
    size_ = 0;
  }

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  /// Bytes held by the slot array (not counting memory owned by keys or values).
  std::size_t memory_bytes() const noexcept { return slots_.capacity() * sizeof(slot); }

  /// Calls f(key, value) for every entry; f may not insert or erase.
  template <class F>
  void for_each(F&& f) {
    for (auto& s : slots_)
      if (s.used) f(s.key, s.value);
  }

  /// Calls f(hash, key, value) for every entry; f may not insert or erase.
  template <class F>
  void for_each_hashed(F&& f) {
    for (auto& s : slots_)
      if (s.used) f(s.hash, s.key, s.value);
  }

  // ---- the slot layout, for checkpoints: iteration order depends on it, and operators emit in
  // iteration order, so a restored table must have the same layout, not just the same entries.

  /// Slots of the table: 0 or a power of two.
  std::size_t slot_count() const noexcept { return slots_.size(); }

  /// Calls f(index, hash, key, value) for every entry, in slot order.
  template <class F>
  void for_each_slot(F&& f) const {
    for (std::size_t i = 0; i < slots_.size(); ++i)
      if (slots_[i].used) f(i, slots_[i].hash, slots_[i].key, slots_[i].value);
  }

  /// Empties the table and gives it `n` slots (0 or a power of two).
  void reset(std::size_t n) {
    slots_ = std::vector<slot>(n);
    size_ = 0;
    set_shape();
  }

  /// Puts `key` (hash `h`) into slot `i` of a table being rebuilt from for_each_slot; returns its
  /// (default-constructed) value, or nullptr when `i` is out of range or taken, or when the entry
  /// would fill the last free slot (lookups need one).
  V* put_at(std::size_t i, std::uint64_t h, const K& key) {
    if (i >= slots_.size() || slots_[i].used || size_ + 1 >= slots_.size()) return nullptr;
    auto& s = slots_[i];
    s.used = true;
    s.hash = h;
    s.key = key;
    ++size_;
    return &s.value;
  }

 private:
  void grow() {
    std::vector<slot> old(slots_.empty() ? 16 : slots_.size() * 2);
    old.swap(slots_);
    set_shape();
    const auto mask = mask_;
    for (auto& s : old)
      if (s.used) {
        auto i = s.hash & mask;
        while (slots_[i].used) i = (i + 1) & mask;
        slots_[i] = std::move(s);
      }
  }

  void take(flat_hash_map& other) noexcept {
    slots_ = std::move(other.slots_);
    other.slots_.clear();
    size_ = std::exchange(other.size_, 0);
    mask_ = std::exchange(other.mask_, 0);
    limit_ = std::exchange(other.limit_, 0);
  }

  /// The probe mask and the size at which the table grows (3/4 full), kept beside the slots so
  /// that a lookup does not divide by the slot size to count them.
  void set_shape() noexcept {
    mask_ = slots_.empty() ? 0 : slots_.size() - 1;
    limit_ = slots_.size() / 4 * 3;
  }

  std::vector<slot> slots_;
  std::size_t size_ = 0;
  std::size_t mask_ = 0;
  std::size_t limit_ = 0;
};

/// Mixes a std::hash result so that low bits are usable for partitioning and probing.
inline std::uint64_t mix_hash(std::uint64_t x) noexcept {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

}  // namespace tidemark::detail
