// A key-value table in WiredTiger: byte-string keys in bytewise order, byte-string values.
// It stands in for RIoTBench's cloud tables (insert, lookup, range query) and serves any
// component that needs an ordered durable map.
#pragma once

#include <cstddef>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tidemark/persistence/durability.hpp"
#include "tidemark/persistence/wiredtiger.hpp"

namespace tidemark::persistence {

/// One key-value pair read from a table.
struct row {
  std::string key;
  std::string value;
  friend bool operator==(const row& a, const row& b) { return a.key == b.key && a.value == b.value; }
};

/// A handle on table `name`, with its own session: use it from one thread at a time and give
/// each thread its own handle on the shared connection. Failed storage calls throw
/// storage_error naming the table and key.
class table_store {
 public:
  static constexpr std::size_t unlimited = std::numeric_limits<std::size_t>::max();

  /// Opens table `name` (letters, digits, '_', '-', '.'), creating it with `level` if missing.
  /// Throws std::invalid_argument for a bad name, for a level that needs the log on a
  /// connection without one, or for an existing table created with another level or format.
  table_store(std::shared_ptr<wt_connection> conn, std::string name,
              durability level = durability::process_crash);

  const std::string& name() const noexcept { return name_; }
  durability level() const noexcept { return level_; }

  /// Inserts or overwrites one row.
  void insert(std::string_view key, std::string_view value);
  /// Inserts or overwrites all rows in one transaction: all become durable together or none.
  void insert_batch(const std::vector<row>& rows);
  std::optional<std::string> lookup(std::string_view key);
  /// Removes `key`; false when it was absent.
  bool remove(std::string_view key);

  /// Rows with first <= key < end, in ascending key order, at most `limit`.
  std::vector<row> range(std::string_view first, std::string_view end, std::size_t limit = unlimited);
  /// Rows whose key starts with `prefix`, in ascending key order, at most `limit`.
  std::vector<row> prefix(std::string_view prefix, std::size_t limit = unlimited);
  /// Calls visit(key, value) on rows with first <= key < end (no upper bound when `end` is
  /// nullopt), ascending, until visit returns false; one consistent snapshot. The views are valid
  /// during the call only, and visit must not use this store.
  void scan(std::string_view first, std::optional<std::string_view> end,
            const std::function<bool(std::string_view key, std::string_view value)>& visit);

  /// Writes a checkpoint: afterwards every write so far survives a crash, whatever the level.
  void checkpoint();

 private:
  std::string name_;
  durability level_;
  wt_session session_;
  wt_cursor cursor_;
};

/// The smallest key greater than every key starting with `prefix`, or nullopt when there is
/// none (the prefix is empty or all 0xff bytes).
std::optional<std::string> prefix_end(std::string_view prefix);

}  // namespace tidemark::persistence
