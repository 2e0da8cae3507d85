// Side outputs without actors: a flat_map or keyed process function emits to an output_tag with
// collector::side, the batches leave on the tag's port with their elements' event times (and
// nothing of a skipped element), and stream::side_output(tag) reads that port of the operator.
#define BOOST_TEST_MODULE side_outputs
#include <boost/test/unit_test.hpp>

#include <string>

#include "../event_time/harness.hpp"
#include "tidemark/core/job.hpp"

using namespace tidemark;
using tidemark::test::make_batch;
using tidemark::test::recording_emitter;

namespace {

const output_tag<std::string> bad{"bad-records", 2};

/// Parses "<int>" lines; others go to `bad`; "boom" throws.
struct parse {
  void operator()(const std::string& line, collector<int>& out) const {
    if (line == "boom") {
      out.side(bad, "about to throw");
      throw std::runtime_error("boom");
    }
    if (!line.empty() && line.find_first_not_of("0123456789") == std::string::npos)
      out(std::stoi(line));
    else
      out.side(bad, line);
  }
};

std::vector<event_time> times_on(const recording_emitter& out, std::uint32_t port) {
  std::vector<event_time> ts;
  for (const auto& e : out.log)
    if (e.k == test::emitted::kind::batch && e.port == port)
      ts.insert(ts.end(), e.b->times.begin(), e.b->times.end());
  return ts;
}

}  // namespace

BOOST_AUTO_TEST_CASE(flat_map_emits_side_records_on_the_tag_port_with_their_event_times) {
  ops::flat_map_logic<std::string, int, parse> op{parse{}};
  recording_emitter out;
  op.process(0, make_batch<std::string>({"1", "x", "22", "", "3"}, {10, 11, 12, 13, 14}), out);
  BOOST_TEST(out.values<int>(0) == (std::vector<int>{1, 22, 3}));
  BOOST_TEST(times_on(out, 0) == (std::vector<event_time>{10, 12, 14}));
  BOOST_TEST(out.values<std::string>(bad.port()) == (std::vector<std::string>{"x", ""}));
  BOOST_TEST(times_on(out, bad.port()) == (std::vector<event_time>{11, 13}));
  // the next batch starts new side batches
  out.log.clear();
  op.process(0, make_batch<std::string>({"y"}), out);
  BOOST_TEST(out.values<std::string>(bad.port()) == std::vector<std::string>{"y"});
  BOOST_TEST(out.values<int>(0).empty());
}

BOOST_AUTO_TEST_CASE(a_skipped_element_leaves_nothing_on_any_port) {
  ops::flat_map_logic<std::string, int, parse> op{parse{}};
  op.on_error = error_policy::skip;
  recording_emitter out;
  op.process(0, make_batch<std::string>({"z", "boom", "5"}), out);
  BOOST_TEST(op.skipped == 1u);
  BOOST_TEST(out.values<int>(0) == std::vector<int>{5});
  BOOST_TEST(out.values<std::string>(bad.port()) == std::vector<std::string>{"z"});
}

BOOST_AUTO_TEST_CASE(keyed_process_functions_emit_side_records_too) {
  const output_tag<int> negative{"negative"};
  auto step = [&](int& seen, const int& x, collector<int>& out) {
    ++seen;
    if (x < 0) return out.side(negative, x);
    out(seen);
  };
  auto identity = [](int x) { return x; };
  ops::keyed_process_logic<int, int, int, decltype(identity), int, int (*)(), decltype(step)> op{
      identity, [] { return 0; }, step};
  std::vector<std::uint64_t> hashes;
  for (int x : {1, -1, 1}) hashes.push_back(detail::mix_hash(std::hash<int>{}(x)));
  recording_emitter out;
  op.process(0, make_batch<int>({1, -1, 1}, {}, hashes), out);
  BOOST_TEST(out.values<int>(0) == (std::vector<int>{1, 2}));
  BOOST_TEST(out.values<int>(negative.port()) == std::vector<int>{-1});
}

BOOST_AUTO_TEST_CASE(side_output_streams_read_the_tag_port_of_the_operator) {
  job j{"side"};
  auto numbers =
      j.from_container(std::vector<std::string>{"1", "x"}, "lines").flat_map<int>(parse{}, "parse");
  auto rejected = numbers.side_output(bad);
  numbers.count("numbers");
  rejected.count("rejected");
  BOOST_TEST(rejected.id() == numbers.id());
  const auto& g = j.graph();
  const auto& parser = g.node(numbers.id());
  BOOST_REQUIRE_EQUAL(parser.outputs.size(), 3u);
  BOOST_TEST(parser.outputs[2].name == "bad-records");
  BOOST_TEST(parser.outputs[2].value_type.find("string") != std::string::npos);
  BOOST_TEST(parser.outputs[2].codec != nullptr);    // std::string has a codec
  BOOST_TEST(parser.outputs[1].value_type.empty());  // no tag on port 1
  for (const auto& n : g.nodes())
    if (n.name == "rejected")
      BOOST_TEST(n.inputs.at(0).port == 2u);
    else if (n.name == "numbers")
      BOOST_TEST(n.inputs.at(0).port == 0u);
  BOOST_TEST(!validate(g));
}

BOOST_AUTO_TEST_CASE(conflicting_tags_on_one_port_and_port_0_tags_are_refused) {
  job j{"conflict"};
  auto numbers = j.from_container(std::vector<std::string>{"1"}).flat_map<int>(parse{}, "parse");
  numbers.side_output(bad);
  numbers.side_output(bad);  // the same tag again is fine
  BOOST_CHECK_THROW(numbers.side_output(output_tag<std::string>{"other", 2}), job_error);
  BOOST_CHECK_THROW(numbers.side_output(output_tag<int>{"bad-records", 2}), job_error);
  BOOST_CHECK_THROW(output_tag<int>("main again", 0), job_error);
}

BOOST_AUTO_TEST_CASE(two_tags_of_one_function_on_one_port_fail_when_emitted) {
  const output_tag<int> a{"a", 1};
  const output_tag<std::string> b{"b", 1};
  auto f = [&](const int& x, collector<int>& out) {
    out.side(a, x);
    out.side(b, std::to_string(x));
  };
  ops::flat_map_logic<int, int, decltype(f)> op{f};
  recording_emitter out;
  BOOST_CHECK_THROW(op.process(0, make_batch<int>({1}), out), job_error);
}
