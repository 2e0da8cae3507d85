// tidemark::expected and tidemark::error_sink: a value or an error, and one sink that counts every
// report, keeps the first messages in order and the last one, shared by copies across threads.
#define BOOST_TEST_MODULE stream_error
#include <boost/test/unit_test.hpp>

#include <string>
#include <thread>
#include <vector>

#include "tidemark/core/error.hpp"

using tidemark::error;
using tidemark::error_sink;
using tidemark::expected;

namespace {

expected<int> half(int x) {
  if (x % 2) return error{"half: " + std::to_string(x) + " is odd; pass an even number"};
  return x / 2;
}

}  // namespace

BOOST_AUTO_TEST_CASE(expected_holds_either_the_value_or_the_error) {
  auto ok = half(8);
  BOOST_REQUIRE(ok.has_value());
  BOOST_TEST(*ok == 4);
  auto bad = half(3);
  BOOST_TEST(!bad);
  BOOST_TEST(bad.error().message == "half: 3 is odd; pass an even number");
  expected<std::string> s = std::string("abc");
  BOOST_TEST(s->size() == 3u);
}

BOOST_AUTO_TEST_CASE(a_sink_counts_all_keeps_the_first_messages_and_the_last) {
  error_sink sink(2);
  BOOST_TEST(sink.count() == 0u);
  BOOST_TEST(sink.last().empty());
  sink.report({"a"});
  auto e = sink.fail("task", "b went wrong");
  BOOST_TEST(e.message == "task: b went wrong");
  sink.report({"c"});
  BOOST_TEST(sink.count() == 3u);
  BOOST_TEST(sink.messages() == (std::vector<std::string>{"a", "task: b went wrong"}));
  BOOST_TEST(sink.last() == "c");
  error_sink copy = sink;  // shares the state
  copy.report({"d"});
  BOOST_TEST(sink.count() == 4u);
  BOOST_TEST(sink.last() == "d");
  BOOST_TEST(error_sink().count() == 0u);  // a new sink starts empty
}

BOOST_AUTO_TEST_CASE(copies_report_from_many_threads_without_losing_a_count) {
  constexpr int threads = 4, per_thread = 5000;
  error_sink sink(10);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([copy = sink, t] {
      for (int i = 0; i < per_thread; ++i) copy.report({std::to_string(t)});
    });
  for (auto& w : workers) w.join();
  BOOST_TEST(sink.count() == static_cast<std::uint64_t>(threads * per_thread));
  BOOST_TEST(sink.messages().size() == 10u);
  auto last = sink.last();
  BOOST_TEST((last == "0" || last == "1" || last == "2" || last == "3"));
}
