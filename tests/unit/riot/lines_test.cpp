// The apps' one text reader: lines numbered as in the file (blank lines counted, CRLF trimmed),
// fields split exactly, and every error naming the file and the line (metadata, labelled CSV).
#define BOOST_TEST_MODULE riot_lines
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "../../support/thrown.hpp"
#include "tidemark/riot/lines.hpp"
#include "tidemark/riot/parse.hpp"
#include "tidemark/riot/prediction.hpp"

using namespace tidemark::riot;

namespace {

// A file with `text` that is removed at the end of the test.
struct temp_file {
  explicit temp_file(const std::string& text)
      : path("/tmp/riot_lines_" + std::to_string(::getpid()) + "_" + std::to_string(counter++)) {
    std::ofstream(path, std::ios::binary) << text;
  }
  ~temp_file() { std::remove(path.c_str()); }
  std::string path;
  static inline int counter = 0;
};

// The message of the std::runtime_error that `f` throws, or "" when it does not throw.
template <class F>
std::string thrown(F f) {
  return tidemark::test::thrown<std::runtime_error>(f);
}

}  // namespace

BOOST_AUTO_TEST_CASE(lines_are_numbered_as_in_the_text_and_blank_ones_are_skipped) {
  std::vector<std::pair<std::size_t, std::string>> seen;
  auto err = for_each_line(" a \r\n\n\t\r\nb,c\nd", [&](std::size_t n, std::string_view line) -> std::optional<std::string> {
    seen.emplace_back(n, std::string(line));
    return std::nullopt;
  });
  BOOST_TEST(!err);
  BOOST_TEST((seen == std::vector<std::pair<std::size_t, std::string>>{{1, "a"}, {4, "b,c"}, {5, "d"}}));
  auto stop = for_each_line("x\n\ny\nz", [](std::size_t, std::string_view line) -> std::optional<std::string> {
    if (line == "y") return std::string("y is not allowed");
    return std::nullopt;
  });
  BOOST_TEST(stop.value_or("") == "line 3: y is not allowed");
}

BOOST_AUTO_TEST_CASE(fields_keep_empty_ones_at_either_end) {
  std::vector<std::string_view> fields;
  split_fields(",a,,b,", ',', fields);
  BOOST_TEST((fields == std::vector<std::string_view>{"", "a", "", "b", ""}));
  split_fields("", ',', fields);
  BOOST_TEST(fields.size() == 1u);
  BOOST_TEST(trim(" \t x y \r\n") == "x y");
}

BOOST_AUTO_TEST_CASE(a_file_error_names_the_file_and_the_line) {
  temp_file f("k1:one\r\n\nk2:two:three\n  \n:no key\n");
  BOOST_TEST((text_file(f.path).lines() == std::vector<std::string>{"k1:one", "k2:two:three", ":no key"}));
  BOOST_TEST(thrown([&] { read_metadata(f.path); }) == "'" + f.path + "': line 5: expected key:annotation");
  temp_file good("k1:one\nk2:two:three\n");
  auto entries = read_metadata(good.path);
  BOOST_TEST((entries == std::vector<std::pair<std::string, std::string>>{{"k1", "one"}, {"k2", "two:three"}}));
  BOOST_TEST(thrown([] { text_file("/nonexistent/riot/x.csv"); }) ==
             "cannot open '/nonexistent/riot/x.csv'; point --data or TIDEMARK_DATA_DIR at the sample data");
  temp_file csv("1,2,BAD\n1,x,GOOD\n");
  BOOST_TEST(thrown([&] { read_labelled_csv(csv.path, {"a", "b"}); }) ==
             "'" + csv.path + "': line 2: column 2: not a number");
}
