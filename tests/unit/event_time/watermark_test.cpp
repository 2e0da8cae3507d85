// Watermark generation of assign_timestamps: bounded out-of-orderness, watermarks every n events
// and on punctuation (in-band, right behind the element), periodic on processing time, idleness,
// and bad timestamps under the skip policy.
#define BOOST_TEST_MODULE watermark
#include <boost/test/unit_test.hpp>

#include <stdexcept>

#include "harness.hpp"
#include "tidemark/core/event_time.hpp"

using namespace tidemark;
using tidemark::test::emitted;
using tidemark::test::make_batch;
using tidemark::test::recording_emitter;

namespace {

auto identity_ts = [](const event_time& x) { return x; };

template <class P>
auto make_logic(watermark_strategy<P> s) {
  return ops::timestamp_logic<event_time, decltype(identity_ts), P>{identity_ts, s};
}

/// The log as text: "b[1,2]" for a batch with its values, "w7" for a watermark, "i1"/"i0" for idle.
std::string describe(const recording_emitter& out) {
  std::string s;
  for (const auto& e : out.log) {
    if (!s.empty()) s += ' ';
    if (e.k == emitted::kind::watermark) {
      s += "w" + std::to_string(e.wm);
    } else if (e.k == emitted::kind::idle) {
      s += e.idle ? "i1" : "i0";
    } else {
      const auto& b = static_cast<const batch<event_time>&>(*e.b);
      BOOST_REQUIRE_EQUAL(b.times.size(), b.values.size());
      s += "b[";
      for (std::size_t i = 0; i < b.values.size(); ++i) {
        BOOST_CHECK_EQUAL(b.times[i], b.values[i]);
        s += (i ? "," : "") + std::to_string(b.values[i]);
      }
      s += "]";
    }
  }
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_n_events_trails_the_max_by_the_bound_and_splits_the_batch) {
  auto logic = make_logic(bounded_out_of_orderness(3).every_events(2));
  recording_emitter out;
  logic.process(0, make_batch<event_time>({10, 5, 20, 15, 30}), out);
  BOOST_TEST(describe(out) == "b[10,5] w7 b[20,15] w17 b[30]");
  logic.process(0, make_batch<event_time>({1}), out);  // 2nd since w17, but max is still 30
  BOOST_TEST(describe(out) == "b[10,5] w7 b[20,15] w17 b[30] b[1] w27");
}

BOOST_AUTO_TEST_CASE(watermarks_never_go_back) {
  auto logic = make_logic(bounded_out_of_orderness(0).every_events(1));
  recording_emitter out;
  logic.process(0, make_batch<event_time>({10, 4, 10, 11}), out);
  BOOST_TEST(describe(out) == "b[10] w10 b[4,10,11] w11");
}

BOOST_AUTO_TEST_CASE(punctuation_emits_right_behind_the_element) {
  auto logic = make_logic(ascending_timestamps().punctuated([](const event_time& x) { return x % 100 == 0; }));
  recording_emitter out;
  logic.process(0, make_batch<event_time>({1, 2, 100, 3}), out);
  logic.process(0, make_batch<event_time>({200}), out);
  BOOST_TEST(describe(out) == "b[1,2,100] w100 b[3] b[200] w200");
}

BOOST_AUTO_TEST_CASE(a_split_batch_keeps_each_element_with_its_key_hash) {
  // After key_by a batch carries hashes; every piece of a split keeps its own.
  auto logic = make_logic(ascending_timestamps().punctuated([](const event_time& x) { return x % 10 == 0; }));
  recording_emitter out;
  logic.process(0, make_batch<event_time>({1, 10, 11, 20, 21, 22}, {}, {101, 110, 111, 120, 121, 122}), out);
  BOOST_TEST(describe(out) == "b[1,10] w10 b[11,20] w20 b[21,22]");
  for (const auto& e : out.log)
    if (e.k == emitted::kind::batch) {
      const auto& b = static_cast<const batch<event_time>&>(*e.b);
      BOOST_REQUIRE_EQUAL(b.hashes.size(), b.values.size());
      for (std::size_t i = 0; i < b.values.size(); ++i)
        BOOST_TEST(b.hashes[i] == static_cast<std::uint64_t>(b.values[i]) + 100);
    }
}

BOOST_AUTO_TEST_CASE(periodic_watermarks_follow_processing_time) {
  auto logic = make_logic(bounded_out_of_orderness(10).every_ms(100));
  BOOST_TEST(logic.timer_period_ms() == 100);
  recording_emitter out;
  logic.on_timer(1000, out);  // nothing seen yet: no watermark
  logic.process(0, make_batch<event_time>({50, 60}), out);
  logic.on_timer(1050, out);  // period not over
  logic.on_timer(1100, out);
  logic.on_timer(1200, out);  // unchanged: not repeated
  logic.process(0, make_batch<event_time>({70}), out);
  logic.on_timer(1300, out);
  BOOST_TEST(describe(out) == "b[50,60] w50 b[70] w60");
}

BOOST_AUTO_TEST_CASE(an_input_without_elements_for_the_timeout_turns_idle_until_the_next_one) {
  auto logic = make_logic(ascending_timestamps().every_ms(1000).idle_after(400));
  BOOST_TEST(logic.timer_period_ms() == 100);
  recording_emitter out;
  for (std::int64_t now = 0; now <= 300; now += 100) logic.on_timer(now, out);
  BOOST_TEST(describe(out) == "");  // the watermark is unknown, no idleness yet
  logic.on_timer(400, out);
  BOOST_TEST(describe(out) == "i1");
  logic.on_timer(500, out);  // idle once, not again
  logic.process(0, make_batch<event_time>({5}), out);
  logic.on_timer(600, out);  // the input was seen in (500, 600]
  logic.on_timer(900, out);
  BOOST_TEST(describe(out) == "i1 i0 b[5]");
  logic.on_timer(1000, out);
  BOOST_TEST(describe(out) == "i1 i0 b[5] w5 i1");
}

BOOST_AUTO_TEST_CASE(upstream_watermarks_stop_here_except_the_end_of_time) {
  auto logic = make_logic(ascending_timestamps().every_events(1));
  recording_emitter out;
  logic.on_watermark(500, out);
  logic.on_watermark(end_of_time, out);
  BOOST_TEST(out.watermarks() == std::vector<event_time>{end_of_time});
}

BOOST_AUTO_TEST_CASE(a_throwing_timestamp_function_skips_the_element_under_the_skip_policy) {
  auto ts = [](const event_time& x) -> event_time {
    if (x < 0) throw std::runtime_error("negative");
    return x;
  };
  ops::timestamp_logic<event_time, decltype(ts), no_punctuation> logic{
      ts, ascending_timestamps().every_events(3)};
  logic.on_error = error_policy::skip;
  recording_emitter out;
  logic.process(0, make_batch<event_time>({3, -1, 4, -2}), out);
  BOOST_TEST(describe(out) == "b[3,4]");
  BOOST_TEST(logic.skipped == 2u);
  // the skipped elements do not count towards the period: the third element is the next one
  logic.process(0, make_batch<event_time>({5, 6}), out);
  BOOST_TEST(describe(out) == "b[3,4] b[5] w5 b[6]");
  logic.on_error = error_policy::fail;
  BOOST_CHECK_THROW(logic.process(0, make_batch<event_time>({-1}), out), std::runtime_error);
}
