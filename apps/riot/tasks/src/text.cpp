// Text helpers for the RIoTBench tasks (see text.hpp).
#include "text.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace tidemark::riot::detail {

std::optional<double> parse_double(std::string_view text) noexcept {
  text = trim(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return std::nullopt;
  double x = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
  if (ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(x)) return std::nullopt;
  return x;
}

std::optional<std::int64_t> parse_int(std::string_view text) noexcept {
  text = trim(text);
  if (text.empty()) return std::nullopt;
  std::int64_t x = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
  if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return x;
}

schema read_schema(const std::string& path) {
  text_file file(path);
  auto rows = file.lines();
  if (rows.size() < 3)
    file.fail("a schema has 3 lines (names, units, kinds), found " + std::to_string(rows.size()));
  std::vector<std::vector<std::string>> cols(3);
  std::vector<std::string_view> parts;
  for (int i = 0; i < 3; ++i) {
    split_fields(rows[i], ',', parts);
    for (auto p : parts) cols[i].emplace_back(trim(p));
  }
  if (cols[1].size() != cols[0].size() || cols[2].size() != cols[0].size())
    file.fail("schema with " + std::to_string(cols[0].size()) + " names but " + std::to_string(cols[1].size()) +
              " units and " + std::to_string(cols[2].size()) + " kinds");
  for (std::size_t i = 0; i < cols[2].size(); ++i)
    if (cols[2][i] != "v" && cols[2][i] != "sv")
      file.fail("schema line 3, column " + std::to_string(i + 1) + ": kind must be v or sv, not '" + cols[2][i] + "'");
  return {std::move(cols[0]), std::move(cols[1]), std::move(cols[2])};
}

void append_json_string(std::string& out, std::string_view text) {
  out.push_back('"');
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

std::string format_double(double x) {
  std::string out;
  append_double(out, x);
  return out;
}

void append_field(shared_text& meta, std::string_view field) {
  std::string extended;
  extended.reserve(meta.size() + 1 + field.size());
  extended.append(meta.view()).push_back(',');
  extended.append(field);
  meta = shared_text{std::move(extended)};
}

void append_double(std::string& out, double x) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x);
  out.append(buf, end);
}

}  // namespace tidemark::riot::detail

namespace tidemark::riot {

void set_value(observation& o, double x) {
  o.value = x;
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x);
  o.text.assign(buf, end);  // reuses the string's capacity
  o.numeric = true;
  o.missing = false;
}

}  // namespace tidemark::riot
