// Open-addressing hash map for keyed operator state: one probe sequence over a flat array of
// slots, lookups by a precomputed hash (key_by hashes each element once), no allocation per key
// beyond the slot array's growth.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

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

/// Grows without a pause. Past 3/4 full the table takes a doubled slot array, and each later
/// insertion moves the entries of a few old slots into it; until all have moved, lookups search
/// both arrays. Slot arrays are zeroed memory (calloc), a slot vacant until an entry is built in
/// it, so a new array is not written at all: the system maps its pages as entries arrive. A keyed
/// operator with millions of keys stalled for a second each time its table doubled when one
/// insertion wrote the whole new array (page faults cost about 11 us per 4 KiB page here) and
/// moved every entry.
template <class K, class V>
class flat_hash_map {
 public:
  flat_hash_map() = default;
  flat_hash_map(const flat_hash_map& other)
      : slots_(other.slots_), old_(other.old_), next_old_(other.next_old_), size_(other.size_) {
    set_shape();
  }
  flat_hash_map& operator=(const flat_hash_map& other) {
    if (this != &other) *this = flat_hash_map(other);
    return *this;
  }
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
  /// std::string keys): it is copied into a K only when added. The reference is valid until the
  /// next find_or_add or erase.
  template <class Q>
  std::pair<V&, bool> find_or_add(std::uint64_t h, const Q& key) {
    if (size_ >=
        limit_) {  // full, or growing (the limit is 0 meanwhile): one test on the fast path
      if (auto* s = grow_step(h, key)) return {s->value(), false};
    }
    const auto mask = mask_;
    for (auto i = h & mask;; i = (i + 1) & mask) {
      auto& s = slots_[i];
      if (s.state != full) {
        s.build(h, as_stored<K>(key));
        ++size_;
        return {s.value(), true};
      }
      if (s.hash == h && s.key() == key) return {s.value(), false};
    }
  }

  /// The value for `key` (hash `h`), or nullptr when absent.
  V* find(std::uint64_t h, const K& key) {
    if (size_ == 0) return nullptr;
    if (auto* s = find_in(slots_, h, key)) return &s->value();
    if (auto* s = find_old(h, key)) return &s->value();
    return nullptr;
  }

  /// Removes `key` (hash `h`) if present. Backward-shift deletion keeps probe sequences intact
  /// without tombstones.
  void erase(std::uint64_t h, const K& key) {
    if (size_ == 0) return;
    if (auto* s = find_old(h, key)) {
      s->destroy();
      s->state = moved;  // later keys of its probe sequence must stay reachable
      --size_;
      return;
    }
    const auto mask = mask_;
    auto i = h & mask;
    for (;; i = (i + 1) & mask) {
      if (slots_[i].state != full) return;
      if (slots_[i].hash == h && slots_[i].key() == key) break;
    }
    slots_[i].destroy();
    for (auto j = (i + 1) & mask; slots_[j].state == full; j = (j + 1) & mask) {
      auto home = slots_[j].hash & mask;
      // Slot j may move into the hole at i when its home is not in the cyclic range (i, j].
      if (((j - home) & mask) >= ((j - i) & mask)) {
        slots_[i].move_in(slots_[j]);
        i = j;
      }
    }
    slots_[i].state = vacant;
    --size_;
  }

  /// Removes every entry but keeps the slot array, so a table can be reused without regrowing.
  void clear() {
    if (!old_.empty()) {
      old_ = {};
      set_shape();
    }
    if (size_ == 0) return;
    slots_.clear();
    size_ = 0;
  }

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  /// Bytes held by the slot arrays (not counting memory owned by keys or values).
  std::size_t memory_bytes() const noexcept { return (slots_.size() + old_.size()) * sizeof(slot); }

  /// Calls f(key, value) for every entry; f may not insert or erase.
  template <class F>
  void for_each(F&& f) {
    for_each_hashed([&](std::uint64_t, const K& k, V& v) { f(k, v); });
  }

  /// Calls f(hash, key, value) for every entry; f may not insert or erase.
  template <class F>
  void for_each_hashed(F&& f) {
    for (auto* table : {&slots_, &old_})
      for (std::size_t i = 0; i < table->size(); ++i)
        if (auto& s = (*table)[i]; s.state == full) f(s.hash, s.key(), s.value());
  }

  // ---- the slot layout, for checkpoints: iteration order depends on it, and operators emit in
  // iteration order, so a restored table must have the same layout, not just the same entries.
  // Reading it finishes a growth first: that moves entries but changes none.

  /// Slots of the table: 0 or a power of two.
  std::size_t slot_count() const {
    finish_growing();
    return slots_.size();
  }

  /// Calls f(index, hash, key, value) for every entry, in slot order.
  template <class F>
  void for_each_slot(F&& f) const {
    finish_growing();
    for (std::size_t i = 0; i < slots_.size(); ++i)
      if (const auto& s = slots_[i]; s.state == full) f(i, s.hash, s.key(), s.value());
  }

  /// Empties the table and gives it `n` slots (0 or a power of two).
  void reset(std::size_t n) {
    slots_ = slot_array(n);
    old_ = {};
    size_ = 0;
    set_shape();
  }

  /// Puts `key` (hash `h`) into slot `i` of a table being rebuilt from for_each_slot; returns its
  /// (default-constructed) value, or nullptr when `i` is out of range or taken, or when the entry
  /// would fill the last free slot (lookups need one).
  V* put_at(std::size_t i, std::uint64_t h, const K& key) {
    if (i >= slots_.size() || slots_[i].state == full || size_ + 1 >= slots_.size()) return nullptr;
    slots_[i].build(h, key);
    ++size_;
    return &slots_[i].value();
  }

 private:
  /// Slot states. A slot of the old array whose entry went to the new one (or was erased) is
  /// `moved`, not vacant, so that the probe sequences passing it still reach the entries behind.
  enum : std::uint8_t { vacant = 0, full = 1, moved = 2 };

  /// Storage for one entry, which exists only while the slot is full (all zero bytes: vacant).
  struct slot {
    std::uint64_t hash;
    std::uint8_t state;
    alignas(K) unsigned char key_bytes[sizeof(K)];
    alignas(V) unsigned char value_bytes[sizeof(V)];

    K& key() noexcept { return *std::launder(reinterpret_cast<K*>(key_bytes)); }
    const K& key() const noexcept { return *std::launder(reinterpret_cast<const K*>(key_bytes)); }
    V& value() noexcept { return *std::launder(reinterpret_cast<V*>(value_bytes)); }
    const V& value() const noexcept {
      return *std::launder(reinterpret_cast<const V*>(value_bytes));
    }

    /// Builds the entry `key` -> V{} (or -> `value`) in this vacant slot.
    template <class KeyArg, class... ValueArg>
    void build(std::uint64_t h, KeyArg&& key, ValueArg&&... value) {
      new (key_bytes) K(std::forward<KeyArg>(key));
      try {
        new (value_bytes) V(std::forward<ValueArg>(value)...);
      } catch (...) {
        this->key().~K();
        throw;
      }
      hash = h;
      state = full;
    }
    /// Moves the entry of full slot `from` into this vacant slot; `from` keeps no entry and its
    /// state is the caller's to set.
    void move_in(slot& from) noexcept {
      new (key_bytes) K(std::move(from.key()));
      new (value_bytes) V(std::move(from.value()));
      hash = from.hash;
      state = full;
      from.destroy();
    }
    /// Ends the entry's life; the state is the caller's to set.
    void destroy() noexcept {
      key().~K();
      value().~V();
    }
  };
  static_assert(alignof(slot) <= alignof(std::max_align_t),
                "calloc's alignment must do for a slot");
  static_assert(std::is_nothrow_move_constructible_v<K> && std::is_nothrow_move_constructible_v<V>,
                "entries move between slots where nothing may throw");

  /// An array of slots in zeroed memory, which destroys the entries it holds.
  class slot_array {
   public:
    slot_array() = default;
    /// calloc maps a large array afresh (zero pages, nothing written) and clears a small one.
    explicit slot_array(std::size_t n) : n_(n) {
      if (n == 0) return;
      slots_ = static_cast<slot*>(std::calloc(n, sizeof(slot)));
      if (!slots_) throw std::bad_alloc();
    }
    slot_array(const slot_array& other) : slot_array(other.n_) {
      for (std::size_t i = 0; i < n_; ++i) {
        const auto& s = other.slots_[i];
        if (s.state == full)
          slots_[i].build(s.hash, s.key(), s.value());
        else
          slots_[i].state = s.state;
      }
    }
    slot_array(slot_array&& other) noexcept
        : n_(std::exchange(other.n_, 0)), slots_(std::exchange(other.slots_, nullptr)) {}
    slot_array& operator=(slot_array&& other) noexcept {
      std::swap(n_, other.n_);
      std::swap(slots_, other.slots_);
      return *this;
    }
    slot_array& operator=(const slot_array&) = delete;
    ~slot_array() {
      clear();
      std::free(slots_);
    }

    std::size_t size() const noexcept { return n_; }
    bool empty() const noexcept { return n_ == 0; }
    slot& operator[](std::size_t i) noexcept { return slots_[i]; }
    const slot& operator[](std::size_t i) const noexcept { return slots_[i]; }
    /// Frees the array without visiting its slots (which reads every page): none may be full.
    void discard() noexcept {
      std::free(std::exchange(slots_, nullptr));
      n_ = 0;
    }
    /// Destroys every entry; all slots vacant.
    void clear() noexcept {
      for (std::size_t i = 0; i < n_; ++i) {
        if (slots_[i].state == full) slots_[i].destroy();
        slots_[i].state = vacant;
      }
    }

   private:
    std::size_t n_ = 0;
    slot* slots_ = nullptr;
  };

  /// Old slots that each find_or_add moves on: a growth from n slots is done after n / 8
  /// insertions, long before the 3n / 4 that fill the new array.
  static constexpr std::size_t slots_per_step = 8;

  template <class Q>
  static slot* find_in(slot_array& table, std::uint64_t h, const Q& key) {
    const auto mask = table.size() - 1;
    for (auto i = h & mask;; i = (i + 1) & mask) {
      auto& s = table[i];
      if (s.state == vacant) return nullptr;
      if (s.state == full && s.hash == h && s.key() == key) return &s;
    }
  }

  template <class Q>
  slot* find_old(std::uint64_t h, const Q& key) {
    return old_.empty() ? nullptr : find_in(old_, h, key);
  }

  /// find_or_add's slow path, out of line so that the fast path stays small enough to inline:
  /// starts a growth when the table is full, moves the next old slots on, and returns the entry
  /// of `key` when it is still in the old array.
  template <class Q>
  [[gnu::noinline]] slot* grow_step(std::uint64_t h, const Q& key) {
    if (old_.empty()) grow();
    move_some();
    return find_old(h, key);
  }

  void grow() {
    if (size_ > 0) old_ = std::move(slots_);
    slots_ = slot_array(slots_.size() + old_.size() == 0 ? 16 : 2 * (slots_.size() + old_.size()));
    next_old_ = 0;
    set_shape();
  }

  /// Moves the entries of the next slots_per_step old slots into the new array; frees the old one
  /// after its last slot.
  void move_some() const {
    const auto end = std::min(next_old_ + slots_per_step, old_.size());
    const auto mask = mask_;
    for (; next_old_ < end; ++next_old_) {
      auto& s = old_[next_old_];
      if (s.state != full) continue;
      auto i = s.hash & mask;
      while (slots_[i].state == full) i = (i + 1) & mask;
      slots_[i].move_in(s);
      s.state = moved;
    }
    if (next_old_ < old_.size()) return;
    old_.discard();
    set_shape();
  }

  void finish_growing() const {
    while (!old_.empty()) move_some();
  }

  void take(flat_hash_map& other) noexcept {
    slots_ = std::exchange(other.slots_, {});
    old_ = std::exchange(other.old_, {});
    next_old_ = std::exchange(other.next_old_, 0);
    size_ = std::exchange(other.size_, 0);
    mask_ = std::exchange(other.mask_, 0);
    limit_ = std::exchange(other.limit_, 0);
  }

  /// The probe mask and the size at which find_or_add leaves its fast path: 3/4 full, or 0
  /// while growing. Kept beside the slots so that a lookup does not divide by the slot size.
  void set_shape() const noexcept {
    mask_ = slots_.empty() ? 0 : slots_.size() - 1;
    limit_ = old_.empty() ? slots_.size() / 4 * 3 : 0;
  }

  // Mutable because reading the layout (const, for a checkpoint) finishes a growth first.
  mutable slot_array slots_;
  mutable slot_array old_;  ///< while growing: the previous array, moved on from next_old_
  mutable std::size_t next_old_ = 0;
  std::size_t size_ = 0;  ///< entries in both arrays
  mutable std::size_t mask_ = 0;
  mutable std::size_t limit_ = 0;
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
