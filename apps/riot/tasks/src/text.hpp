// Small text helpers shared by the task implementations: strict number parsing, the sample
// data's schema files, JSON strings (lines and fields come from lines.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tidemark/riot/lines.hpp"
#include "tidemark/riot/observation.hpp"

namespace tidemark::riot::detail {

/// The whole of `text` (trimmed) as a finite double, or nullopt.
std::optional<double> parse_double(std::string_view text) noexcept;

/// The whole of `text` (trimmed) as an integer, or nullopt.
std::optional<std::int64_t> parse_int(std::string_view text) noexcept;

/// A RIoTBench schema file: names, units and value kinds ("v" or "sv"), one CSV line each.
struct schema {
  std::vector<std::string> names;
  std::vector<std::string> units;
  std::vector<std::string> kinds;
};

/// Reads a schema file; throws std::runtime_error naming the file and line when malformed.
schema read_schema(const std::string& path);

/// `text` quoted as a JSON string (with escapes).
void append_json_string(std::string& out, std::string_view text);

/// The shortest text that reads back as `x`.
std::string format_double(double x);
/// Appends format_double(x) to `out` (no string of its own: one is an allocation past 15 digits).
void append_double(std::string& out, double x);

/// Replaces an observation's meta with "<meta>,<field>" (what AVG and SLR observations carry: the
/// meta of their input and the field they were computed from); the input's meta is shared.
void append_field(shared_text& meta, std::string_view field);

}  // namespace tidemark::riot::detail
