// Table insert / lookup / range scan over persistence::table_store.
#include "tidemark/riot/io/table_tasks.hpp"

#include <charconv>
#include <stdexcept>

namespace tidemark::riot::io {

namespace {

// Field `index` (0-based) of a comma-separated line, or nullopt when the line has fewer fields.
std::optional<std::string_view> csv_field(std::string_view line, std::size_t index) {
  std::size_t start = 0;
  for (std::size_t i = 0; i < index; ++i) {
    auto comma = line.find(',', start);
    if (comma == std::string_view::npos) return std::nullopt;
    start = comma + 1;
  }
  auto end = line.find(',', start);
  return line.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
}

}  // namespace

std::string ordered_integer_key(std::int64_t value) {
  // Flipping the sign bit maps int64 order onto uint64 order; fixed width keeps it bytewise.
  auto biased = static_cast<std::uint64_t>(value) ^ (std::uint64_t{1} << 63);
  std::string digits = std::to_string(biased);
  return std::string(20 - digits.size(), '0') + digits;
}

row_key::row_key(std::vector<key_part> parts) : parts_(std::move(parts)) {
  if (parts_.empty()) throw std::invalid_argument("row key: give at least one key column");
}

expected<std::string> row_key::of(std::string_view csv_row) const {
  std::string key;
  for (std::size_t i = 0; i < parts_.size(); ++i) {
    const auto& part = parts_[i];
    auto field = csv_field(csv_row, part.column);
    if (!field)
      return error{"row has no key column " + std::to_string(part.column) + ": " + persistence::quote_bytes(csv_row)};
    if (i > 0) key += '/';
    if (part.encoding == key_encoding::text) {
      key += *field;
      continue;
    }
    std::int64_t value = 0;
    auto [end, ec] = std::from_chars(field->data(), field->data() + field->size(), value);
    if (ec != std::errc{} || end != field->data() + field->size())
      return error{"key column " + std::to_string(part.column) + " is not an integer: " +
                   persistence::quote_bytes(*field) + " in row " + persistence::quote_bytes(csv_row)};
    key += ordered_integer_key(value);
  }
  return key;
}

// ---- table_insert ----

table_insert::table_insert(std::shared_ptr<persistence::wt_connection> conn, table_insert_config config)
    : config_(std::move(config)), key_(config_.key), store_(std::move(conn), config_.table, config_.level) {
  if (config_.batch_size == 0) throw std::invalid_argument("table_insert: batch_size must be > 0");
  pending_.reserve(config_.batch_size);
}

table_insert::~table_insert() {
  try {
    flush();
  } catch (const std::exception& e) {
    errors_.report({std::string{"table_insert into "} + config_.table + ": final flush failed: " + e.what()});
  }
}

bool table_insert::process(std::string_view csv_row) {
  auto key = key_.of(csv_row);
  if (!key) {
    errors_.report({"table_insert into " + config_.table + ": " + key.error().message});
    return false;
  }
  pending_.push_back(persistence::row{std::move(*key), std::string{csv_row}});
  if (pending_.size() >= config_.batch_size) flush();
  return true;
}

void table_insert::flush() {
  if (pending_.empty()) return;
  store_.insert_batch(pending_);
  written_ += pending_.size();
  pending_.clear();
}

// ---- table_lookup ----

table_lookup::table_lookup(std::shared_ptr<persistence::wt_connection> conn, table_lookup_config config)
    : key_(std::move(config.key)), store_(std::move(conn), config.table, config.level) {}

std::optional<std::string> table_lookup::process(std::string_view probe_row) {
  auto key = key_.of(probe_row);
  if (!key) {
    errors_.report({"table_lookup in " + store_.name() + ": " + key.error().message});
    return std::nullopt;
  }
  auto value = store_.lookup(*key);
  if (!value) ++misses_;
  return value;
}

// ---- table_range_scan ----

table_range_scan::table_range_scan(std::shared_ptr<persistence::wt_connection> conn,
                                   table_range_scan_config config)
    : config_(std::move(config)), store_(std::move(conn), config_.table, config_.level) {
  if (config_.limit == 0) throw std::invalid_argument("table_range_scan: limit must be > 0");
}

void table_range_scan::visit(std::string_view first, std::string_view end,
                             const std::function<void(std::string_view)>& row) {
  std::size_t rows = 0;
  if (first < end)
    store_.scan(first, end, [&](std::string_view, std::string_view value) {
      row(value);
      return ++rows < config_.limit;
    });
  returned_ += rows;
}

std::string table_range_scan::process(std::string_view first, std::string_view end) {
  std::string batch;
  bool first_row = true;
  visit(first, end, [&](std::string_view value) {
    if (!first_row) batch += '\n';
    first_row = false;
    batch += value;
  });
  return batch;
}

std::string table_range_scan::process(std::int64_t start, std::int64_t end) {
  return process(ordered_integer_key(start), ordered_integer_key(end));
}

void table_range_scan::for_each(std::int64_t start, std::int64_t end,
                                const std::function<void(std::string_view)>& row) {
  visit(ordered_integer_key(start), ordered_integer_key(end), row);
}

}  // namespace tidemark::riot::io
