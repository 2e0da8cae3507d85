// write_lines' two-phase commit, driven by hand as the runtime would: lines reach the file when a
// checkpoint covering them completes, a restore cuts the file to what the restored checkpoint
// committed and appends what it staged, once, and print stays a plain (at-least-once) sink.
#define BOOST_TEST_MODULE lines_sink
#include <boost/test/unit_test.hpp>

#include "../checkpoint/checkpoint_harness.hpp"

#include <cstdint>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "../../support/temp_dir.hpp"
#include "tidemark/core/lines_sink.hpp"
#include "tidemark/core/state.hpp"

using namespace tidemark;
using tidemark::test::temp_dir;

namespace {

struct null_emitter final : emitter {
  void emit_watermark(event_time) override {}
  void emit_idle(bool) override {}
  void emit_on(std::uint32_t, batch_ptr) override {}
};

std::string format(const int& x) {
  return "line " + std::to_string(x);
}

using sink_t = ops::lines_sink<int, std::string (*)(const int&)>;

// A sink instance with its own writer, as a process that just started would have.
std::unique_ptr<sink_t> make_sink(const std::string& path, std::uint32_t parallelism = 1) {
  auto writer = std::make_shared<ops::line_writer>();
  writer->open(path, "out");
  instance_info info;
  info.name = "out";
  info.parallelism = parallelism;
  return std::make_unique<sink_t>(writer, &format, info);
}

void feed(sink_t& sink, int from, int to) {
  null_emitter out;
  std::vector<int> xs;
  for (int x = from; x < to; ++x) xs.push_back(x);
  sink.process(0, std::make_unique<batch<int>>(xs), out);
}

void finish(sink_t& sink) {
  null_emitter out;
  sink.finish(out);
}

std::string read_file(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

// The lines of elements [from, to), computed without the sink.
std::string expected_lines(int from, int to) {
  std::ostringstream out;
  for (int x = from; x < to; ++x) out << "line " << x << '\n';
  return out.str();
}

}  // namespace

BOOST_AUTO_TEST_CASE(lines_appear_at_checkpoint_completion_and_once_after_a_crash) {
  temp_dir dir;
  const auto path = dir / "out.txt";
  auto first = make_sink(path);
  test::snapshot_of(*first, 1);  // the first barrier comes before any line
  feed(*first, 0, 10);
  auto snap2 = test::snapshot_of(*first, 2);
  feed(*first, 10, 20);
  auto snap3 = test::snapshot_of(*first, 3);
  feed(*first, 20, 25);
  BOOST_TEST(read_file(path).empty());
  first->on_checkpoint_complete(2);
  BOOST_TEST(read_file(path) == expected_lines(0, 10));

  first.reset();  // crash: checkpoint 3 completed, its notification never arrived
  auto second = make_sink(path);
  test::restore_from(*second, snap3, 3);
  BOOST_TEST(read_file(path) == expected_lines(0, 20));

  second.reset();  // crash again
  auto third = make_sink(path);
  test::restore_from(*third, snap3, 3);
  BOOST_TEST(read_file(path) == expected_lines(0, 20));  // nothing twice

  feed(*third, 20, 30);  // the replay after checkpoint 3
  test::snapshot_of(*third, 4);
  feed(*third, 30, 35);
  third->on_checkpoint_complete(4);
  BOOST_TEST(read_file(path) == expected_lines(0, 30));
  finish(*third);
  BOOST_TEST(read_file(path) == expected_lines(0, 35));
}

BOOST_AUTO_TEST_CASE(a_restore_from_an_older_checkpoint_cuts_what_later_ones_committed) {
  temp_dir dir;
  const auto path = dir / "out.txt";
  auto first = make_sink(path);
  feed(*first, 0, 4);  // before the first barrier: written through
  BOOST_TEST(read_file(path) == expected_lines(0, 4));
  auto snap1 = test::snapshot_of(*first, 1);
  feed(*first, 4, 9);
  auto snap2 = test::snapshot_of(*first, 2);
  feed(*first, 9, 15);
  test::snapshot_of(*first, 3);
  first->on_checkpoint_complete(3);
  BOOST_TEST(read_file(path) == expected_lines(0, 15));
  first.reset();
  // checkpoint 3's pieces turned out corrupt: the job restores checkpoint 2
  auto second = make_sink(path);
  test::restore_from(*second, snap2, 2);
  BOOST_TEST(read_file(path) == expected_lines(0, 9));
  second.reset();
  auto third = make_sink(path);
  test::restore_from(*third, snap1, 1);
  BOOST_TEST(read_file(path) == expected_lines(0, 4));
}

BOOST_AUTO_TEST_CASE(a_fresh_start_overwrites_the_file) {
  temp_dir dir;
  const auto path = dir / "out.txt";
  std::ofstream{path} << "from an earlier run\n";
  auto sink = make_sink(path);
  feed(*sink, 0, 3);
  finish(*sink);
  BOOST_TEST(read_file(path) == expected_lines(0, 3));

  auto empty = make_sink(path);
  finish(*empty);
  BOOST_TEST(read_file(path).empty());
}

BOOST_AUTO_TEST_CASE(a_file_shorter_than_its_checkpoint_is_reported) {
  temp_dir dir;
  const auto path = dir / "out.txt";
  auto first = make_sink(path);
  feed(*first, 0, 10);
  auto snap1 = test::snapshot_of(*first, 1);
  first.reset();
  std::ofstream{path, std::ios::trunc} << "cut\n";
  auto second = make_sink(path);
  try {
    test::restore_from(*second, snap1, 1);
    BOOST_FAIL("restore accepted a file shorter than its checkpoint");
  } catch (const job_error& e) {
    std::string what = e.what();
    BOOST_TEST(what.find(path) != std::string::npos, what);
    BOOST_TEST(what.find("checkpoint 1") != std::string::npos, what);
  }
}

BOOST_AUTO_TEST_CASE(several_instances_on_one_file_refuse_checkpoints) {
  temp_dir dir;
  auto sink = make_sink(dir / "out.txt", 2);
  try {
    test::snapshot_of(*sink, 1);
    BOOST_FAIL("a checkpoint of a file written by 2 instances was accepted");
  } catch (const job_error& e) {
    std::string what = e.what();
    BOOST_TEST(what.find("parallelism 1") != std::string::npos, what);
  }
}

BOOST_AUTO_TEST_CASE(print_writes_at_once_and_stages_nothing) {
  std::ostringstream captured;
  auto* old = std::cout.rdbuf(captured.rdbuf());
  sink_t sink{ops::line_writer::to_stdout(), &format};
  feed(sink, 0, 3);
  auto bytes = test::snapshot_of(sink, 1);
  feed(sink, 3, 5);
  std::cout.rdbuf(old);
  BOOST_TEST(bytes.empty());
  BOOST_TEST(captured.str() == expected_lines(0, 5));
}
