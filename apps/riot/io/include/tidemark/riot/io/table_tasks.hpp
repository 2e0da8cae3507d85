// RIoTBench's table tasks (insert, lookup, range query) over a WiredTiger table store instead of
// a cloud table. Rows are CSV lines; the row key is built from chosen columns, numeric columns
// encoded so that keys sort in numeric order and a range query over them is a key range.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tidemark/persistence/table_store.hpp"
#include "tidemark/core/error.hpp"

namespace tidemark::riot::io {

/// How a CSV column becomes part of a key.
enum class key_encoding {
  text,     ///< the field's bytes as they are
  integer,  ///< a signed 64-bit integer, encoded so keys sort numerically (ordered_integer_key)
};

/// One CSV column (0-based) that is part of the row key.
struct key_part {
  std::size_t column = 0;
  key_encoding encoding = key_encoding::text;
};

/// A 20-digit decimal string that sorts bytewise in the numeric order of `value`.
std::string ordered_integer_key(std::int64_t value);

/// Builds row keys from CSV lines: the parts' encoded fields joined by '/'.
class row_key {
 public:
  explicit row_key(std::vector<key_part> parts);
  /// The key of `csv_row`, or an error when a column is missing or an integer column does not
  /// hold an integer.
  expected<std::string> of(std::string_view csv_row) const;

 private:
  std::vector<key_part> parts_;
};

struct table_insert_config {
  std::string table;                      ///< table store name
  std::vector<key_part> key{key_part{}};  ///< columns of the row key (default: column 0 as text)
  std::size_t batch_size = 100;           ///< rows per transaction (IO.AZURE_TABLE.INSERTBATCHSIZE)
  persistence::durability level = persistence::durability::process_crash;
};

/// Stores each CSV row (the whole line as value) under its key, batch_size rows per transaction.
/// Rows are durable once their batch is written: when the batch fills, or on flush().
class table_insert {
 public:
  table_insert(std::shared_ptr<persistence::wt_connection> conn, table_insert_config config);
  /// Flushes what is buffered; a failure then is counted, not thrown.
  ~table_insert();
  table_insert(const table_insert&) = delete;
  table_insert& operator=(const table_insert&) = delete;

  /// Buffers `csv_row`; false (counted in errors()) when it has no valid key.
  bool process(std::string_view csv_row);
  /// Writes the buffered rows in one transaction.
  void flush();

  std::uint64_t rows_written() const noexcept { return written_; }
  const error_sink& errors() const noexcept { return errors_; }

 private:
  table_insert_config config_;
  row_key key_;
  persistence::table_store store_;
  std::vector<persistence::row> pending_;
  std::uint64_t written_ = 0;
  error_sink errors_;
};

struct table_lookup_config {
  std::string table;
  std::vector<key_part> key{key_part{}};  ///< columns of the probe row that form the key
  persistence::durability level = persistence::durability::process_crash;  ///< as the table was created
};

/// Looks up the stored row whose key matches the probe row's key columns.
class table_lookup {
 public:
  table_lookup(std::shared_ptr<persistence::wt_connection> conn, table_lookup_config config);
  /// The stored value, or nullopt when absent (counted in misses()) or when the probe row has
  /// no valid key (counted in errors()).
  std::optional<std::string> process(std::string_view probe_row);

  std::uint64_t misses() const noexcept { return misses_; }
  const error_sink& errors() const noexcept { return errors_; }

 private:
  row_key key_;
  persistence::table_store store_;
  std::uint64_t misses_ = 0;
  error_sink errors_;
};

struct table_range_scan_config {
  std::string table;
  std::size_t limit = persistence::table_store::unlimited;  ///< rows per query at most (> 0)
  persistence::durability level = persistence::durability::process_crash;  ///< as the table was created
};

/// A range query: the values of rows whose key lies in [first, end), in key order, joined by
/// '\n' (the CSV batch that RIoTBench's TRAIN range query hands to model training).
class table_range_scan {
 public:
  table_range_scan(std::shared_ptr<persistence::wt_connection> conn, table_range_scan_config config);
  std::string process(std::string_view first, std::string_view end);
  /// The same over keys whose first part is an integer column: start <= value < end.
  std::string process(std::int64_t start, std::int64_t end);
  /// The same rows one at a time, not joined: `row` sees each value, valid during the call.
  void for_each(std::int64_t start, std::int64_t end,
                const std::function<void(std::string_view)>& row);

  std::uint64_t rows_returned() const noexcept { return returned_; }

 private:
  void visit(std::string_view first, std::string_view end,
             const std::function<void(std::string_view)>& row);

  table_range_scan_config config_;
  persistence::table_store store_;
  std::uint64_t returned_ = 0;
};

}  // namespace tidemark::riot::io
