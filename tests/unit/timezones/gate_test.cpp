// The synchronizer protocol without actors: two gates of one timezone and its exit, stepped by
// hand. Slices are admitted one at a time, in event-time order, only when every gate's input has
// passed the slice and the exit has finished the previous one.
#define BOOST_TEST_MODULE synchronizer_gate
#include <boost/test/unit_test.hpp>

#include "../event_time/harness.hpp"
#include "tidemark/core/synchronizer.hpp"

using namespace tidemark;
using namespace tidemark::test;

namespace {

struct two_gates {
  std::shared_ptr<timezone_coordinator> c = std::make_shared<timezone_coordinator>(2, 1, 1);
  ops::gate_logic slow{c, 0, 4, "timezone 0"};    // behind the delayed operator
  ops::gate_logic direct{c, 1, 4, "timezone 0"};  // the direct path
  recording_emitter slow_out, direct_out;
  int slow_wakes = 0, direct_wakes = 0;

  two_gates() {
    slow.set_wakeup([this] { ++slow_wakes; });
    direct.set_wakeup([this] { ++direct_wakes; });
  }
  void clear() {
    slow_out.log.clear();
    direct_out.log.clear();
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(slices_enter_one_at_a_time_in_time_order) {
  two_gates t;
  t.direct.process(0, make_batch<int>({1, 2, 3}, {1, 2, 3}), t.direct_out);
  t.direct.on_watermark(3, t.direct_out);
  BOOST_TEST(t.direct_out.log.empty());  // the delayed input has not passed anything yet

  // the delayed path completes 2 before 1; its watermark says nothing below 2 is missing
  t.slow.process(0, make_batch<int>({20, 10}, {2, 1}), t.slow_out);
  t.slow.on_watermark(2, t.slow_out);
  BOOST_TEST(t.slow_out.values<int>() == std::vector<int>{10});
  BOOST_TEST(t.slow_out.watermarks() == std::vector<event_time>{2});
  BOOST_TEST(t.direct_wakes == 1);
  t.direct.on_wakeup(t.direct_out);
  BOOST_TEST(t.direct_out.values<int>() == std::vector<int>{1});
  BOOST_TEST(t.direct_out.watermarks() == std::vector<event_time>{2});
  BOOST_TEST(t.c->busy());

  // slice [2, 3) is complete on both inputs but waits until the exit finished slice [1, 2)
  t.clear();
  t.slow.on_watermark(3, t.slow_out);
  BOOST_TEST(t.slow_out.log.empty());
  t.c->report_exit(0, 2);
  BOOST_TEST(t.slow_wakes == 1);
  t.slow.on_wakeup(t.slow_out);
  t.direct.on_wakeup(t.direct_out);
  BOOST_TEST(t.slow_out.values<int>() == std::vector<int>{20});
  BOOST_TEST(t.direct_out.values<int>() == std::vector<int>{2});
  BOOST_TEST(t.direct_out.watermarks() == std::vector<event_time>{3});

  // the end of the input admits the last slice, then the final watermark
  t.clear();
  t.slow.on_watermark(end_of_time, t.slow_out);
  t.direct.on_watermark(end_of_time, t.direct_out);
  BOOST_TEST(t.direct_out.log.empty());
  BOOST_TEST(t.direct.pending());
  t.c->report_exit(0, 3);
  t.slow.on_wakeup(t.slow_out);
  t.direct.on_wakeup(t.direct_out);
  BOOST_TEST(t.direct_out.values<int>() == std::vector<int>{3});
  BOOST_TEST(t.slow_out.values<int>().empty());
  BOOST_TEST(t.direct_out.watermarks() == std::vector<event_time>{4});
  t.c->report_exit(0, 4);
  t.slow.on_wakeup(t.slow_out);
  t.direct.on_wakeup(t.direct_out);
  BOOST_TEST(t.direct_out.watermarks() == (std::vector<event_time>{4, end_of_time}));
  BOOST_TEST(t.slow_out.watermarks() == (std::vector<event_time>{4, end_of_time}));
  BOOST_TEST(!t.direct.pending());
  BOOST_TEST(!t.slow.pending());
  BOOST_TEST(t.c->slices() == 3u);
}

BOOST_AUTO_TEST_CASE(time_slices_admit_several_timestamps_sorted) {
  auto c = std::make_shared<timezone_coordinator>(1, 1, 10);
  ops::gate_logic g{c, 0, 100, "timezone 0"};
  recording_emitter out;
  g.process(0, make_batch<int>({13, 5, 11, 12, 25}, {13, 5, 11, 12, 25}), out);
  g.on_watermark(20, out);
  // [0, 10) first; [10, 20) waits for the exit
  BOOST_TEST(out.values<int>() == std::vector<int>{5});
  BOOST_TEST(out.watermarks() == std::vector<event_time>{10});
  c->report_exit(0, 10);
  g.on_wakeup(out);
  BOOST_TEST(out.values<int>() == (std::vector<int>{5, 11, 12, 13}));
  BOOST_TEST(out.watermarks() == (std::vector<event_time>{10, 20}));
}

BOOST_AUTO_TEST_CASE(a_full_gate_holds_input_while_the_timezone_is_busy) {
  two_gates t;  // max_buffered 4
  t.slow.process(0, make_batch<int>({1, 2, 3, 4, 5}, {1, 2, 3, 4, 5}), t.slow_out);
  BOOST_TEST(!t.slow.saturated());  // not busy: it waits for the other input, so it must read on
  t.direct.process(0, make_batch<int>({1}, {1}), t.direct_out);
  t.direct.on_watermark(5, t.direct_out);
  t.slow.on_watermark(5, t.slow_out);
  BOOST_TEST(t.c->busy());
  BOOST_TEST(t.slow.saturated());  // 4 left, the timezone busy with slice [1, 2)
}

BOOST_AUTO_TEST_CASE(elements_without_event_time_are_rejected_by_name) {
  two_gates t;
  BOOST_CHECK_EXCEPTION(t.slow.process(0, make_batch<int>({1}), t.slow_out), job_error,
                        [](const job_error& e) {
                          return std::string{e.what()} ==
                                 "the synchronizer of timezone 0 received elements without event "
                                 "time: assign timestamps upstream of the timezone "
                                 "(assign_timestamps)";
                        });
}
