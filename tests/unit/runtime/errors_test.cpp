// Invalid graphs fail at run with a message naming the operator; a throwing user function fails
// the job with the operator's name and the exception's message, or is skipped and counted.
#define BOOST_TEST_MODULE runtime errors
#include <boost/test/unit_test.hpp>

#include "tidemark/runtime/runtime.hpp"

using namespace tidemark;

namespace {

std::string run_error(const job& j, const run_options& o = {}) {
  try {
    run(j, o);
  } catch (const job_error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

BOOST_AUTO_TEST_CASE(dangling_stream) {
  job j{"dangling"};
  auto s = j.from_container(std::vector<int>{1, 2});
  s.map([](int x) { return x; }, "orphan");
  s.count();
  BOOST_TEST(run_error(j) ==
             "job 'dangling': the stream of operator 'orphan' is never consumed: end it with a sink "
             "or remove it");
}

BOOST_AUTO_TEST_CASE(no_sink) {
  job j{"nosink"};
  j.from_container(std::vector<int>{1}, "numbers");
  BOOST_TEST(run_error(j) ==
             "job 'nosink': the job has no sink: end each stream with a sink such as collect or count");
}

BOOST_AUTO_TEST_CASE(empty_job) {
  job j{"empty"};
  BOOST_TEST(run_error(j) == "job 'empty': the job has no operators: add a source and a sink");
}

BOOST_AUTO_TEST_CASE(cycle) {
  job j{"cycle"};
  auto s = j.from_container(std::vector<int>{1});
  auto a = s.map([](int x) { return x; }, "a");
  auto b = a.map([](int x) { return x; }, "b");
  b.count();
  // close a loop b -> a through the graph API, without the feedback edge job::iterate would add
  j.graph().node(a.id()).inputs.push_back({b.id(), partitioning::forward});
  BOOST_TEST(run_error(j) == "job 'cycle': the job has a cycle: 'a' -> 'b' -> 'a'; close loops "
                             "with job::iterate (a feedback edge)");
}

BOOST_AUTO_TEST_CASE(a_loop_with_the_deterministic_merge) {
  job j{"loop"};
  auto loop = j.iterate<int>("back");
  auto s = j.from_container(std::vector<int>{1}).merge(loop.feedback()).map([](int x) { return x + 1; });
  loop.close(s.filter([](int x) { return x < 3; }));
  s.count();
  run_options o;
  o.deterministic_merge = true;
  BOOST_TEST(run_error(j, o) ==
             "job 'loop': the loop closed at 'back' cannot run with the deterministic merge (its "
             "order would wait for the loop's own watermark)");
}

BOOST_AUTO_TEST_CASE(missing_input_file) {
  job j{"file"};
  j.from_text_file("/nonexistent/readings.csv", "readings").count();
  BOOST_TEST(run_error(j) ==
             "job 'file' failed: operator 'readings' (instance 0 of 1) failed: cannot open "
             "'/nonexistent/readings.csv': No such file or directory (check the path; relative "
             "paths start in the working directory)");
}

BOOST_AUTO_TEST_CASE(user_function_throws) {
  job j{"throws"};
  j.from_container(std::vector<int>{1, 2, 3, 4})
      .map(
          [](int x) {
            if (x == 3) throw std::runtime_error("bad reading 3");
            return x;
          },
          "parse")
      .count();
  BOOST_TEST(run_error(j) ==
             "job 'throws' failed: operator 'parse' (instance 0 of 1) failed: bad reading 3");
}

BOOST_AUTO_TEST_CASE(user_function_throws_and_is_skipped) {
  job j{"skips"};
  auto parsed = j.from_container(std::vector<std::string>{"1", "x", "3", "y"})
                    .map([](const std::string& s) { return std::stoi(s); }, "parse")
                    .on_error(error_policy::skip);
  auto out = parsed.collect();
  auto result = run(j);
  BOOST_TEST(out.values() == (std::vector<int>{1, 3}));
  auto ops = result.per_operator();
  auto parse = std::find_if(ops.begin(), ops.end(), [](auto& m) { return m.name == "parse"; });
  BOOST_TEST(parse->skipped == 2u);
}

BOOST_AUTO_TEST_CASE(bad_options) {
  job j{"opts"};
  j.from_container(std::vector<int>{1}).count();
  run_options o;
  o.batch_size = 0;
  BOOST_CHECK_THROW(run(j, o), job_error);
}
