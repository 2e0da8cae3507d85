// The one reader of the apps' text inputs (schemas, metadata, id lists, CSV and ARFF files, SenML
// samples, training batches): text -> lines -> fields, and every error names the line (and the
// file, when the text came from one).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tidemark::riot {

/// Splits `line` at `sep` into `out` (cleared first); the fields are views into `line`.
void split_fields(std::string_view line, char sep, std::vector<std::string_view>& out);

/// `text` without leading and trailing spaces, tabs and line ends.
std::string_view trim(std::string_view text) noexcept;

/// Calls `f(number, line)` for each line of `text` that is not blank, trimmed, numbered from 1.
/// `f` returns std::nullopt to go on, or a message to stop: the message comes back as
/// "line <number>: <message>".
template <class F>
std::optional<std::string> for_each_line(std::string_view text, F f) {
  std::size_t number = 0, start = 0;
  while (start <= text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    ++number;
    auto line = trim(text.substr(start, end - start));
    if (!line.empty())
      if (std::optional<std::string> e = f(number, line)) return "line " + std::to_string(number) + ": " + *e;
    start = end + 1;
  }
  return std::nullopt;
}

/// A text file read whole.
class text_file {
 public:
  /// Throws std::runtime_error "cannot open '<path>'; check the data directory
  /// (TIDEMARK_DATA_DIR)" when the file cannot be read.
  explicit text_file(std::string path);

  const std::string& path() const noexcept { return path_; }
  const std::string& text() const noexcept { return text_; }

  /// riot::for_each_line over the file; the first message `f` returns is thrown as
  /// std::runtime_error "'<path>': line <number>: <message>".
  template <class F>
  void for_each_line(F f) const {
    if (auto e = riot::for_each_line(text_, f)) fail(*e);
  }

  /// The file's lines that are not blank, trimmed.
  std::vector<std::string> lines() const;

  /// Throws std::runtime_error "'<path>': <what>".
  [[noreturn]] void fail(const std::string& what) const;

 private:
  std::string path_;
  std::string text_;
};

}  // namespace tidemark::riot
