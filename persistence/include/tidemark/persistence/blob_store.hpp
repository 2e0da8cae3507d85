// Named blobs (model files, zipped charts) in WiredTiger, split into fixed-size chunks so a
// multi-megabyte blob never becomes one huge value. Stands in for RIoTBench's cloud blob storage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tidemark/persistence/durability.hpp"
#include "tidemark/persistence/wiredtiger.hpp"

namespace tidemark::persistence {

struct blob_info {
  std::string name;
  std::uint64_t size = 0;
  friend bool operator==(const blob_info& a, const blob_info& b) {
    return a.name == b.name && a.size == b.size;
  }
};

/// A handle on blob store `name` (tables `<name>.catalog` and `<name>.chunks`), with its own
/// session: one thread at a time, one handle per thread. A put replaces the whole blob in one
/// transaction, so readers see the old or the new blob, never a mix. A blob must fit in the
/// connection's cache (cache_size) while it is written.
class blob_store {
 public:
  static constexpr std::size_t default_chunk_size = std::size_t{256} * 1024;

  /// Opens store `name` (letters, digits, '_', '-', '.'), creating it with `level` if missing;
  /// new blobs are cut into `chunk_size`-byte chunks. Throws std::invalid_argument as
  /// table_store does.
  blob_store(std::shared_ptr<wt_connection> conn, std::string name,
             durability level = durability::process_crash, std::size_t chunk_size = default_chunk_size);

  const std::string& name() const noexcept { return name_; }

  /// Stores `bytes` as blob `blob` (any non-empty name without NUL bytes), replacing it.
  void put(std::string_view blob, std::string_view bytes);
  /// The blob's bytes, or nullopt when there is none. Throws storage_error when chunks are
  /// missing or have the wrong size.
  std::optional<std::string> get(std::string_view blob);
  std::optional<std::uint64_t> size(std::string_view blob);
  /// Blobs whose name starts with `prefix`, ordered by name.
  std::vector<blob_info> list(std::string_view prefix = {});
  /// Removes the blob; false when there was none.
  bool remove(std::string_view blob);
  /// Writes a checkpoint: afterwards every write so far survives a crash, whatever the level.
  void checkpoint();

 private:
  struct entry {
    std::uint64_t size;
    std::uint64_t chunks;
  };
  entry decode(std::string_view blob, std::string_view catalog_value) const;
  std::optional<entry> find(std::string_view blob);
  void remove_chunks(std::string_view blob, std::uint64_t from, std::uint64_t to);

  std::string name_;
  durability level_;
  std::size_t chunk_size_;
  wt_session session_;
  wt_cursor catalog_;
  wt_cursor chunks_;
  std::string key_;  // scratch buffer for chunk keys
};

}  // namespace tidemark::persistence
