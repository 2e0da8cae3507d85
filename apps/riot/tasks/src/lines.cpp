// The line reader of the apps' text inputs (see lines.hpp).
#include "tidemark/riot/lines.hpp"

#include <fstream>
#include <iterator>
#include <stdexcept>

namespace tidemark::riot {

void split_fields(std::string_view line, char sep, std::vector<std::string_view>& out) {
  out.clear();
  std::size_t start = 0;
  for (;;) {
    auto pos = line.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(line.substr(start));
      return;
    }
    out.push_back(line.substr(start, pos - start));
    start = pos + 1;
  }
}

std::string_view trim(std::string_view text) noexcept {
  constexpr std::string_view blanks = " \t\r\n";
  auto first = text.find_first_not_of(blanks);
  if (first == std::string_view::npos) return {};
  auto last = text.find_last_not_of(blanks);
  return text.substr(first, last - first + 1);
}

text_file::text_file(std::string path) : path_(std::move(path)) {
  std::ifstream in(path_, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot open '" + path_ +
                             "'; point --data or TIDEMARK_DATA_DIR at the sample data");
  text_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<std::string> text_file::lines() const {
  std::vector<std::string> out;
  riot::for_each_line(text_, [&](std::size_t, std::string_view line) -> std::optional<std::string> {
    out.emplace_back(line);
    return std::nullopt;
  });
  return out;
}

void text_file::fail(const std::string& what) const { throw std::runtime_error("'" + path_ + "': " + what); }

}  // namespace tidemark::riot
