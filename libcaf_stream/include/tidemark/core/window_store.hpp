// window_store: where window operators keep the events of full-window (process) functions, per
// (window, key). The interface is what the tiered Aion store (memory + WiredTiger) implements;
// memory_window_store is the all-in-memory baseline. window_events is the lazy, block-wise view a
// process function iterates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tidemark/core/detail/flat_hash_map.hpp"
#include "tidemark/core/state.hpp"
#include "tidemark/core/windows.hpp"

namespace tidemark {

namespace detail {

/// A count of entries written before them in a checkpoint; each entry takes at least one byte, so
/// a count beyond the bytes left is corrupt (rejected before anything is allocated for it).
inline std::size_t read_count(state_reader& in) {
  const auto n = in.read<std::uint64_t>();
  if (n > in.remaining())
    throw wire_error("window state: " + std::to_string(n) + " entries in " +
                     std::to_string(in.remaining()) + " bytes");
  return static_cast<std::size_t>(n);
}

/// Writes table `t` for a checkpoint with its slot layout (so that the restored table iterates in
/// the same order): slot count, entries, then per entry its slot, hash, key and what
/// `value(out, v)` writes.
template <class K, class V, class WriteValue>
void snapshot_table(state_writer& out, const flat_hash_map<K, V>& t, WriteValue&& value) {
  out.write(static_cast<std::uint64_t>(t.slot_count()));
  out.write(static_cast<std::uint64_t>(t.size()));
  t.for_each_slot([&](std::size_t i, std::uint64_t h, const K& k, const V& v) {
    out.write(static_cast<std::uint64_t>(i));
    out.write(h);
    out.write(k);
    value(out, v);
  });
}

/// Rebuilds a table snapshot_table wrote; `value(in, v)` reads each value. Throws wire_error when
/// the layout is impossible.
template <class K, class V, class ReadValue>
void restore_table(state_reader& in, flat_hash_map<K, V>& t, ReadValue&& value) {
  const auto slots = in.read<std::uint64_t>();
  const auto n = read_count(in);
  if ((slots & (slots - 1)) != 0 || (slots > 0 && n >= slots) || (slots == 0 && n > 0))
    throw wire_error("window state: a table of " + std::to_string(n) + " entries in " +
                     std::to_string(slots) + " slots");
  t.reset(static_cast<std::size_t>(slots));
  for (std::size_t e = 0; e < n; ++e) {
    const auto i = in.read<std::uint64_t>();
    const auto h = in.read<std::uint64_t>();
    const auto k = in.read<K>();
    V* v = t.put_at(static_cast<std::size_t>(i), h, k);
    if (!v) throw wire_error("window state: slot " + std::to_string(i) + " taken or out of range");
    value(in, *v);
  }
}

}  // namespace detail

/// A contiguous run of events handed out by a cursor.
template <class T>
struct event_block {
  const T* data = nullptr;
  std::size_t size = 0;
};

/// Lazy iteration over the events of one (window, key): blocks in arrival order. A tiered store
/// returns the memory-resident block first and stages the rest behind it.
template <class T>
class event_cursor {
 public:
  virtual ~event_cursor() = default;
  /// The next block; an empty block ends the iteration.
  virtual event_block<T> next() = 0;
  /// False when events could not be read (a lost or corrupt block of a tiered store).
  virtual bool complete() const { return true; }
};

/// Stores the events of full-window functions per (window, key). Keys come with the hash key_by
/// computed. The window operator calls, for each (window, key): append while the window collects
/// events; events() when it fires; expire() once when the window passed its end (later events are
/// late; a tiered store destages); purge() when the allowed lateness ended.
template <class K, class T>
class window_store {
 public:
  virtual ~window_store() = default;
  /// Appends `x` to the events of key `k` (hash `h`) in window `w`.
  virtual void append(const window_id& w, std::uint64_t h, const K& k, T x) = 0;
  /// The events of (w, k) in arrival order; valid until the next append, merge or purge.
  virtual std::unique_ptr<event_cursor<T>> events(const window_id& w, std::uint64_t h, const K& k) = 0;
  /// Moves the events of (from, k) behind those of (into, k): sessions that merged.
  virtual void merge(const window_id& from, const window_id& into, std::uint64_t h, const K& k) = 0;
  /// (w, k) passed its end: from now on it is read only when it re-fires with late events.
  virtual void expire(const window_id& w, std::uint64_t h, const K& k) = 0;
  /// Drops every event of (w, k).
  virtual void purge(const window_id& w, std::uint64_t h, const K& k) = 0;
  /// Events held in memory.
  virtual std::uint64_t memory_events() const = 0;
  /// Bytes of memory held (sizeof(T) per event plus bookkeeping, not memory owned by T).
  virtual std::uint64_t memory_bytes() const = 0;
  /// Store-specific metrics (bytes per tier, I/O) added to the operator's report.
  virtual void add_metrics(std::map<std::string, double>& out) const {}

  // Hints for stores that move events between memory and disk (the memory store ignores them).
  /// (w, k) of an expired window got a late event and will re-fire in about `delay_ms` of
  /// processing time (0: at once or unknown).
  virtual void expect_fire(const window_id& w, std::uint64_t h, const K& k, std::int64_t delay_ms) {}
  /// The operator's watermark advanced to `wm`.
  virtual void on_watermark(event_time wm) {}
  /// Period in ms of the tick() calls the store wants (0: none).
  virtual std::int64_t tick_ms() const { return 0; }
  /// Processing time passed (the operator's timer).
  virtual void tick() {}

  // Checkpoints (see operator_logic::snapshot): called between two calls of the others.
  /// Writes the events of every (window, key) and whatever later calls depend on. The default
  /// throws job_error: a store written for a job without checkpoints need not support them.
  virtual void snapshot(state_writer& out) {
    throw job_error("this window store cannot be checkpointed: implement window_store::snapshot "
                    "and restore, or use memory_window_store or the tiered store");
  }
  /// What snapshot would write now, for writing later on another thread while the store goes on
  /// (operator_logic::capture). The default writes the snapshot now.
  virtual state_capture capture(std::uint64_t checkpoint) {
    return capture_now(checkpoint, [&](state_writer& out) { snapshot(out); });
  }
  /// Loads what snapshot wrote into an empty store constructed like the one that wrote it, so
  /// that later calls behave as they would have on that one.
  virtual void restore(state_reader& in) {
    throw job_error("this window store cannot be restored from a checkpoint");
  }
};

/// The all-in-memory store: per window an open-addressing table of keys to their events, kept in
/// chunks. A capture for an asynchronous snapshot copies the tables and shares the chunks (no
/// event is copied); a chunk started before a capture is never written again: the next append to
/// its key starts a new chunk.
template <class K, class T>
class memory_window_store final : public window_store<K, T> {
 public:
  void append(const window_id& w, std::uint64_t h, const K& k, T x) override {
    auto& events = table(w).find_or_insert(h, k, [] { return event_list{}; });
    auto& tail = writable_tail(events);
    const auto before = tail.capacity();
    tail.push_back(std::move(x));
    bytes_ += (tail.capacity() - before) * sizeof(T);
    ++events.size;
    ++events_;
  }

  std::unique_ptr<event_cursor<T>> events(const window_id& w, std::uint64_t h, const K& k) override {
    const event_list* events = nullptr;
    if (auto it = windows_.find(w); it != windows_.end()) events = it->second.find(h, k);
    return std::make_unique<chunk_cursor>(events);
  }

  void merge(const window_id& from, const window_id& into, std::uint64_t h, const K& k) override {
    auto it = windows_.find(from);
    if (it == windows_.end()) return;
    auto* src = it->second.find(h, k);
    if (!src) return;
    event_list moved = std::move(*src);
    it->second.erase(h, k);
    if (it->second.empty()) windows_.erase(it);
    auto& dst = table(into).find_or_insert(h, k, [] { return event_list{}; });
    dst.chunks.insert(dst.chunks.end(), std::make_move_iterator(moved.chunks.begin()),
                      std::make_move_iterator(moved.chunks.end()));
    dst.size += moved.size;
    if (!moved.chunks.empty()) dst.tail_since = moved.tail_since;
  }

  void expire(const window_id&, std::uint64_t, const K&) override {}

  void purge(const window_id& w, std::uint64_t h, const K& k) override {
    if (auto it = windows_.find(w); it != windows_.end()) forget(it, h, k);
  }

  std::uint64_t memory_events() const override { return events_; }
  std::uint64_t memory_bytes() const override {
    std::uint64_t tables = 0;
    for (const auto& [w, t] : windows_) tables += t.memory_bytes();
    return bytes_ + tables;
  }

  /// Every window with its key table; events through codec<T> (a job_error names T if it has none).
  void snapshot(state_writer& out) override { write(out, windows_); }

  /// O(windows and keys): the tables are copied, the events shared.
  state_capture capture(std::uint64_t) override {
    ++captures_;  // no chunk it shares is written again
    auto tables = std::make_shared<const window_tables>(windows_);
    return [tables](state_writer& out) { write(out, *tables); };
  }

  void restore(state_reader& in) override {
    windows_.clear();
    events_ = bytes_ = 0;
    for (auto n = detail::read_count(in); n > 0; --n) {
      const auto w = in.read<window_id>();
      detail::restore_table(in, windows_[w], [&](state_reader& i, event_list& events) {
        auto chunk = std::make_shared<std::vector<T>>();
        i.read(*chunk);
        events.size = chunk->size();
        events_ += chunk->size();
        bytes_ += chunk->capacity() * sizeof(T);
        if (!chunk->empty()) events.chunks.push_back(std::move(chunk));
      });
    }
  }

 private:
  using chunk = std::vector<T>;
  /// The events of one (window, key) in arrival order; no chunk is empty.
  struct event_list {
    std::vector<std::shared_ptr<chunk>> chunks;
    std::size_t size = 0;
    std::uint64_t tail_since = 0;  // captures_ when the last chunk was started
  };
  using key_table = detail::flat_hash_map<K, event_list>;
  using window_tables = std::map<window_id, key_table>;

  class chunk_cursor final : public event_cursor<T> {
   public:
    explicit chunk_cursor(const event_list* events) : events_(events) {}
    event_block<T> next() override {
      if (!events_ || next_ == events_->chunks.size()) return {};
      const auto& c = *events_->chunks[next_++];
      return {c.data(), c.size()};
    }

   private:
    const event_list* events_;
    std::size_t next_ = 0;
  };

  /// The chunk to append to: the last one, unless it was started before the last capture (which
  /// may still be reading it on another thread; once started, a chunk is written by this thread
  /// alone, so no synchronization is needed).
  chunk& writable_tail(event_list& events) {
    if (!events.chunks.empty() && events.tail_since == captures_) return *events.chunks.back();
    events.tail_since = captures_;
    return *events.chunks.emplace_back(std::make_shared<chunk>());
  }

  /// The layout of a std::vector<T> per (window, key), whatever its chunks.
  static void write(state_writer& out, const window_tables& windows) {
    out.write(static_cast<std::uint64_t>(windows.size()));
    for (const auto& [w, t] : windows) {
      out.write(w);
      detail::snapshot_table(out, t, [](state_writer& o, const event_list& events) {
        if constexpr (!has_codec_v<T>) o.write(chunk{});  // throws the job_error naming T
        o.bytes().write_size(events.size);
        for (const auto& c : events.chunks)
          if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>)
            o.bytes().write(c->data(), c->size() * sizeof(T));
          else
            for (const auto& x : *c) o.write(x);
      });
    }
  }

  key_table& table(const window_id& w) { return windows_[w]; }

  void forget(typename window_tables::iterator it, std::uint64_t h, const K& k) {
    if (auto* events = it->second.find(h, k)) {
      for (const auto& c : events->chunks) bytes_ -= c->capacity() * sizeof(T);
      events_ -= events->size;
      it->second.erase(h, k);
    }
    if (it->second.empty()) windows_.erase(it);
  }

  window_tables windows_;
  std::uint64_t events_ = 0;
  std::uint64_t bytes_ = 0;
  std::uint64_t captures_ = 0;  // captures taken so far
};

/// The events of one (window, key) as a process function sees them: an input range read lazily,
/// block by block, from the window store. Iterate it once.
template <class T>
class window_events {
 public:
  explicit window_events(std::unique_ptr<event_cursor<T>> c) : cursor_(std::move(c)) {}

  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = const T*;
    using reference = const T&;

    iterator() = default;
    explicit iterator(window_events* owner) : owner_(owner) { load(); }
    const T& operator*() const { return block_.data[pos_]; }
    const T* operator->() const { return block_.data + pos_; }
    iterator& operator++() {
      if (++pos_ == block_.size) load();
      return *this;
    }
    friend bool operator==(const iterator& a, const iterator& b) { return a.owner_ == b.owner_; }
    friend bool operator!=(const iterator& a, const iterator& b) { return a.owner_ != b.owner_; }

   private:
    void load() {
      pos_ = 0;
      block_ = owner_->cursor_->next();
      if (block_.size == 0) owner_ = nullptr;  // end
    }
    window_events* owner_ = nullptr;
    event_block<T> block_;
    std::size_t pos_ = 0;
  };

  iterator begin() { return iterator{this}; }
  iterator end() { return iterator{}; }
  /// False when some events could not be read (the result is then marked incomplete).
  bool complete() const { return cursor_->complete(); }

 private:
  std::unique_ptr<event_cursor<T>> cursor_;
};

}  // namespace tidemark
