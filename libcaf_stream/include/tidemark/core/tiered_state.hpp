// The narrow interface between tiered (Aion) window state and the node's storage service: the
// configuration a window asks for with `.state(tiered{...})`, and `block_storage`, the byte-level,
// asynchronous, prioritized block I/O the runtime supplies (persistence/ implements it on
// WiredTiger). libcaf_stream never sees WiredTiger.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>

#include "tidemark/core/windows.hpp"

namespace tidemark {

/// `.state(in_memory{})`: window events stay in memory (the default; like Flink's heap backend).
struct in_memory {};

/// Which open windows a tiered store destages first under moderate memory pressure.
enum class pressure_order : std::uint8_t {
  largest_first,        ///< most bytes in memory first (fastest savings)
  least_active_first,   ///< longest without events first (least processing delay)
};

/// Configuration of a tiered window store (`.state(tiered{...})`). Every (window, key) keeps an
/// m-bucket in memory and a p-bucket on disk; operators only read memory.
struct tiered {
  /// m-bucket capacity per (window, key) in events; later events go to the p-bucket (0: no cap).
  std::uint64_t memory_events = 100'000;
  /// m-bucket capacity per (window, key) in bytes of event footprint (0: no cap).
  std::uint64_t memory_bytes = 0;
  /// Events per p-bucket block: the unit of serialization and of one I/O step.
  std::uint32_t block_events = 2048;
  /// ρ_min: fraction of a destaged m-bucket kept in memory as a bootstrap set.
  double bootstrap_fraction = 0.0;
  /// τ: destage a window that got neither events nor watermarks for this long (0: off).
  std::int64_t idle_destage_ms = 0;
  /// Late events of a past window collect in its open block for up to this long (or until the
  /// block is full) before they are written: every tick would make blocks of one or two events
  /// per key.
  std::int64_t late_flush_ms = 1000;
  /// Pre-stage p-buckets before late re-executions (off: they are staged on demand).
  bool prestage = true;
  /// Destage a window's m-bucket when it expires (the Aion paper's standard policy). Off: an
  /// expired window stays in memory, late events included, until memory pressure under the
  /// node's budget moves it out (expired windows before open ones), so a job whose windows fit
  /// the budget does no I/O; without a budget it then keeps everything in memory.
  bool destage_on_expiry = true;
  /// Open windows' order under moderate pressure (expired go first, the latest window first).
  pressure_order order = pressure_order::largest_first;
};

/// The window store that keeps a window's events as `tiered` configures (defined in
/// tidemark/core/tiered_window_store.hpp, which jobs using `.state(tiered{...})` include).
template <class K, class T>
class tiered_window_store;

namespace detail {

/// Whether T is complete where this is first asked (tiered_window_store is, once its header is in).
template <class T, class = void>
struct is_complete : std::false_type {};
template <class T>
struct is_complete<T, std::void_t<decltype(sizeof(T))>> : std::true_type {};

}  // namespace detail

/// Priority classes of the storage actor's queues, highest first.
enum class io_class : std::uint8_t { prestage = 0, write = 1, destage = 2 };

const char* to_string(io_class c) noexcept;

/// Node memory pressure as the storage service sees it under its memory budget.
enum class memory_pressure : std::uint8_t { none, moderate, severe };

/// Where one (window, key)'s p-bucket lives: store (operator instance), window, key hash, and a
/// serial that tells apart keys with the same hash.
struct bucket_address {
  std::uint64_t store = 0;
  window_id window;
  std::uint64_t key_hash = 0;
  std::uint64_t serial = 0;
};

/// Asynchronous, prioritized block I/O of one node, shared by every tiered store of the node.
/// Thread-safe. Callbacks run on the service's threads, never on the caller's.
class block_storage {
 public:
  /// Called with each staged block on a serialization worker: its position, the payload, and
  /// whether the record was intact (false: corrupt, payload empty).
  using block_fn = std::function<void(std::uint64_t position, std::string_view payload, bool intact)>;

  virtual ~block_storage() = default;
  /// A new store id (one per operator instance).
  virtual std::uint64_t register_store() = 0;
  /// Serializes on a worker (`encode` returns the payload of `events` events), then writes the
  /// block at `position` of the bucket with priority `cls`; `done(ok, bytes)` runs afterwards.
  virtual void write(const bucket_address& b, std::uint64_t position, std::uint32_t events,
                     io_class cls, std::function<std::string()> encode,
                     std::function<void(bool ok, std::uint64_t bytes)> done) = 0;
  /// Reads the bucket's blocks in position order, one block per I/O step with priority `cls`
  /// (pre-staging; a checkpoint reading window state uses a lower class), hands each to
  /// `on_block` on a worker, then calls `done` once every block was handed over.
  virtual void stage(const bucket_address& b, block_fn on_block, std::function<void()> done,
                     io_class cls) = 0;
  /// Removes every block of the bucket (lowest priority).
  virtual void erase(const bucket_address& b) = 0;
  /// Adds `delta` bytes to the node's window-state memory.
  virtual void account(std::int64_t delta) = 0;
  virtual memory_pressure pressure() const = 0;
  /// Bytes that can still be accounted before pressure turns severe (the largest value without a
  /// budget): a pre-stage that would not fit does not start.
  virtual std::int64_t headroom() const = 0;
  /// Monotonic processing time of the service in ms.
  virtual std::int64_t now_ms() const = 0;
  /// Why the last write that reported `ok == false` failed (directory and error), for messages.
  virtual std::string last_write_error() const { return {}; }
};

}  // namespace tidemark
