// The synchronizer protocol without actors: two gates of one timezone and its exit, stepped by
// hand, their reports applied to the synchronizer's state machine at once (the runtime sends them
// as messages; synchronizer_actor_test covers that). Slices are admitted one at a time, in
// event-time order, only when every gate's input has passed the slice and the exit has finished
// the previous one.
#define BOOST_TEST_MODULE synchronizer_gate
#include <boost/test/unit_test.hpp>

#include "../checkpoint/checkpoint_harness.hpp"
#include "../event_time/harness.hpp"
#include "tidemark/core/operators.hpp"
#include "tidemark/core/synchronizer.hpp"

using namespace tidemark;
using namespace tidemark::test;

namespace {

/// A timezone whose reports reach its synchronizer at once and whose bounds come back at once.
struct direct_synchronizer {
  std::shared_ptr<timezone_link> link;
  synchronizer_logic logic;

  direct_synchronizer(std::uint32_t gates, std::uint32_t exits, event_time slice)
      : link(std::make_shared<timezone_link>(0, gates, exits, slice)), logic(gates, exits, slice) {
    link->set_sender([this](const sync_report& r) {
      if (logic.apply(r)) link->deliver(logic.current());
    });
  }
  direct_synchronizer(const direct_synchronizer&) = delete;
  direct_synchronizer& operator=(const direct_synchronizer&) = delete;
  void report_exit(std::uint32_t exit, event_time wm) {
    link->send({sync_report::kind::exit, exit, wm});
  }
  bool busy() const { return logic.current().busy; }
};

struct two_gates {
  direct_synchronizer sync{2, 1, 1};
  std::shared_ptr<timezone_link> c = sync.link;
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
  BOOST_TEST(t.sync.busy());

  // slice [2, 3) is complete on both inputs but waits until the exit finished slice [1, 2)
  t.clear();
  t.slow.on_watermark(3, t.slow_out);
  BOOST_TEST(t.slow_out.log.empty());
  t.sync.report_exit(0, 2);
  BOOST_TEST(t.slow_wakes == 2);  // every bound wakes every gate
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
  t.sync.report_exit(0, 3);
  t.slow.on_wakeup(t.slow_out);
  t.direct.on_wakeup(t.direct_out);
  BOOST_TEST(t.direct_out.values<int>() == std::vector<int>{3});
  BOOST_TEST(t.slow_out.values<int>().empty());
  BOOST_TEST(t.direct_out.watermarks() == std::vector<event_time>{4});
  t.sync.report_exit(0, 4);
  t.slow.on_wakeup(t.slow_out);
  t.direct.on_wakeup(t.direct_out);
  BOOST_TEST(t.direct_out.watermarks() == (std::vector<event_time>{4, end_of_time}));
  BOOST_TEST(t.slow_out.watermarks() == (std::vector<event_time>{4, end_of_time}));
  BOOST_TEST(!t.direct.pending());
  BOOST_TEST(!t.slow.pending());
  BOOST_TEST(t.sync.logic.current().slices == 3u);
}

BOOST_AUTO_TEST_CASE(time_slices_admit_several_timestamps_sorted) {
  direct_synchronizer sync{1, 1, 10};
  ops::gate_logic g{sync.link, 0, 100, "timezone 0"};
  recording_emitter out;
  g.process(0, make_batch<int>({13, 5, 11, 12, 25}, {13, 5, 11, 12, 25}), out);
  g.on_watermark(20, out);
  // [0, 10) first; [10, 20) waits for the exit
  BOOST_TEST(out.values<int>() == std::vector<int>{5});
  BOOST_TEST(out.watermarks() == std::vector<event_time>{10});
  sync.report_exit(0, 10);
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
  BOOST_TEST(t.sync.busy());
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

// ---- checkpoints: a timezone saved in its gates and exits, its synchronizer rebuilt on restore ----

namespace {

/// Two gates and a counting exit of one timezone, as plan compilation builds them.
struct saved_timezone {
  direct_synchronizer sync{2, 1, 1};
  std::shared_ptr<timezone_link> c = sync.link;
  ops::gate_logic slow{c, 0, 100, "timezone 0", batch_codec_for<int>()};
  ops::gate_logic direct{c, 1, 100, "timezone 0", batch_codec_for<int>()};
  ops::exit_reporter exit{std::make_unique<ops::count_sink>(std::make_shared<std::atomic<std::uint64_t>>()),
                          {{c, 0}}};
  recording_emitter slow_out, direct_out, exit_out;
  int slow_wakes = 0, direct_wakes = 0;

  saved_timezone() {
    slow.set_wakeup([this] { ++slow_wakes; });
    direct.set_wakeup([this] { ++direct_wakes; });
  }
  void wake_both() {
    slow.on_wakeup(slow_out);
    direct.on_wakeup(direct_out);
  }
};

/// Slice [1, 2) admitted by the slow gate, which released its element; the direct gate was woken
/// but the checkpoint came before it released its part.
void run_until_the_checkpoint(saved_timezone& t) {
  t.direct.process(0, make_batch<int>({1, 2, 3}, {1, 2, 3}), t.direct_out);
  t.direct.on_watermark(4, t.direct_out);
  t.slow.process(0, make_batch<int>({10}, {1}), t.slow_out);
  t.slow.on_watermark(2, t.slow_out);
}

/// The rest of the input, each gate and the exit stepped as the runtime would.
void run_after_the_checkpoint(saved_timezone& t) {
  t.wake_both();
  t.exit.on_watermark(2, t.exit_out);
  t.slow.process(0, make_batch<int>({30, 20}, {3, 2}), t.slow_out);
  t.slow.on_watermark(end_of_time, t.slow_out);
  t.direct.on_watermark(end_of_time, t.direct_out);
  for (event_time e : {event_time{3}, event_time{4}, end_of_time}) {
    t.wake_both();
    t.exit.on_watermark(e, t.exit_out);
  }
  t.wake_both();
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_restored_timezone_admits_the_same_slices_as_the_uninterrupted_one) {
  saved_timezone original;
  run_until_the_checkpoint(original);
  BOOST_TEST(original.slow_out.values<int>() == std::vector<int>{10});
  BOOST_TEST(original.direct_out.log.empty());
  const auto slow_state = snapshot_of(original.slow);
  const auto direct_state = snapshot_of(original.direct);
  const auto exit_state = snapshot_of(original.exit);

  saved_timezone restored;
  restore_from(restored.slow, slow_state);
  restore_from(restored.direct, direct_state);
  // an exit has not restored yet: nothing is admitted, however far the gates' inputs are
  restored.direct.on_watermark(5, restored.direct_out);
  restored.wake_both();
  BOOST_TEST(restored.direct_out.log.empty());
  BOOST_TEST(restored.slow_out.log.empty());
  BOOST_TEST(restored.slow_wakes == 0);
  restore_from(restored.exit, exit_state);
  BOOST_TEST(restored.slow_wakes == 1);  // the last one restored wakes every gate
  BOOST_TEST(restored.direct_wakes == 1);

  original.slow_out.log.clear();
  run_after_the_checkpoint(original);
  run_after_the_checkpoint(restored);
  // the direct gate releases [1, 2) behind the slow gate's bound, then slices go one at a time
  BOOST_TEST(restored.direct_out.values<int>() == (std::vector<int>{1, 2, 3}));
  BOOST_TEST(restored.direct_out.values<int>() == original.direct_out.values<int>());
  BOOST_TEST(restored.direct_out.watermarks() == original.direct_out.watermarks());
  BOOST_TEST(restored.slow_out.values<int>() == (std::vector<int>{20, 30}));
  BOOST_TEST(restored.slow_out.watermarks() == original.slow_out.watermarks());
  BOOST_TEST(!restored.slow.pending());
  BOOST_TEST(!restored.direct.pending());
}

BOOST_AUTO_TEST_CASE(a_gate_restored_as_finished_leaves_the_others_one_slice_at_a_time) {
  saved_timezone t;
  t.direct.restore_finished(7);  // its stage had ended: it had emitted end_of_time
  BOOST_TEST(!t.direct.pending());
  // the slow gate had emitted 1 and buffers 1 and 2; the exit had finished everything below 1
  saved_timezone before;
  before.direct.on_watermark(end_of_time, before.direct_out);
  before.slow.process(0, make_batch<int>({10, 20}, {1, 2}), before.slow_out);
  before.slow.on_watermark(1, before.slow_out);
  BOOST_TEST(before.slow_out.watermarks() == std::vector<event_time>{1});
  before.exit.on_watermark(1, before.exit_out);
  restore_from(t.slow, snapshot_of(before.slow));
  t.slow.on_watermark(3, t.slow_out);
  BOOST_TEST(t.slow_out.log.empty());  // the exit has not restored
  restore_from(t.exit, snapshot_of(before.exit));
  t.slow.on_wakeup(t.slow_out);
  BOOST_TEST(t.slow_out.values<int>() == std::vector<int>{10});  // [1, 2) only: busy with it
  BOOST_TEST(t.slow_out.watermarks() == std::vector<event_time>{2});
  t.exit.on_watermark(2, t.exit_out);
  t.slow.on_wakeup(t.slow_out);
  BOOST_TEST(t.slow_out.values<int>() == (std::vector<int>{10, 20}));
  BOOST_TEST(t.slow_out.watermarks() == (std::vector<event_time>{2, 3}));
}

BOOST_AUTO_TEST_CASE(a_gate_without_a_codec_refuses_to_checkpoint_buffered_elements_by_name) {
  two_gates t;  // no codec
  BOOST_CHECK_NO_THROW(snapshot_of(t.slow));  // nothing buffered: nothing to encode
  t.slow.process(0, make_batch<int>({1}, {1}), t.slow_out);
  BOOST_CHECK_EXCEPTION(snapshot_of(t.slow), job_error, [](const job_error& e) {
    return std::string{e.what()} ==
           "the synchronizer of timezone 0 cannot checkpoint the elements it buffers: their type "
           "has no tidemark::codec (list its fields with TIDEMARK_FIELDS)";
  });
}
