// The synchronizer of a timezone as an actor, run one message at a time by CAF's
// test_coordinator: gate and exit reports arrive as messages in an order the test chooses (on a
// cluster they come from different nodes, so any order can happen), and every bound it admits is
// recorded. Expected bounds are worked out by hand from the completion protocol
// (docs/timezones.md). Also a gate and the actor together: what a gate reports after a bound.
#define BOOST_TEST_MODULE synchronizer_actor
#include <boost/test/unit_test.hpp>

#include <caf/send.hpp>

#include "../event_time/harness.hpp"
#include "synchronizer_actor.hpp"
#include "test_scheduler.hpp"

using namespace tidemark;
using namespace tidemark::detail;

namespace {

constexpr event_time none = INT64_MIN;  // a gate that has not taken a bound yet

/// One timezone's synchronizer actor with `gates` gates and `exits` exits, slices of 1.
struct fixture : test::stepped_actor_system {
  std::vector<sync_bound> published;
  caf::actor sync;

  void spawn(std::uint32_t gates, std::uint32_t exits) {
    sync = spawn_synchronizer(sys, synchronizer_logic{gates, exits, 1},
                              [this](const sync_bound& b) { published.push_back(b); });
    sched.run();
  }
  void gate(std::uint32_t g, event_time wm, event_time known, std::optional<event_time> lowest) {
    caf::anon_send(sync, sync_report{sync_report::kind::gate, g, wm, known, lowest});
    sched.run();
  }
  void exit(std::uint32_t e, event_time wm) {
    caf::anon_send(sync, sync_report{sync_report::kind::exit, e, wm});
    sched.run();
  }
  /// The bounds published so far, "B" or "B busy".
  std::vector<std::string> bounds() const {
    std::vector<std::string> out;
    for (const auto& b : published)
      out.push_back(std::to_string(b.bound) + (b.busy ? " busy" : ""));
    return out;
  }
  using strings = std::vector<std::string>;
};

}  // namespace

BOOST_FIXTURE_TEST_CASE(slices_are_admitted_in_time_order_one_at_a_time, fixture) {
  spawn(2, 1);
  gate(1, 3, none, 1);  // gate 0 has said nothing: its input may still bring anything
  BOOST_TEST(bounds().empty());
  gate(0, 2, none, 2);
  BOOST_TEST(bounds() == strings{"2 busy"});  // [1, 2): complete on both inputs (2 <= min(3, 2))
  gate(0, 4, 2, 2);
  gate(1, 4, 2, 3);
  BOOST_TEST(bounds().size() == 1u);  // [2, 3) waits for the exit to finish [1, 2)
  exit(0, 2);
  BOOST_TEST(bounds() == (strings{"2 busy", "3 busy"}));
  gate(0, 4, 3, std::nullopt);
  gate(1, 4, 3, 3);
  exit(0, 3);
  BOOST_TEST(bounds() == (strings{"2 busy", "3 busy", "4 busy"}));
  gate(1, 4, 4, std::nullopt);
  gate(0, 4, 4, std::nullopt);
  exit(0, 4);
  // nothing buffered below the inputs' watermark 4: the timezone is idle at 4
  BOOST_TEST(bounds() == (strings{"2 busy", "3 busy", "4 busy", "4"}));
  BOOST_TEST(published.back().slices == 3u);
}

BOOST_FIXTURE_TEST_CASE(a_gate_report_from_before_the_bound_admits_nothing, fixture) {
  spawn(2, 1);
  gate(0, 4, none, 1);  // gate 0 holds 1 and 2; counted from no bound, its lowest is 1
  gate(1, 4, none, 3);  // gate 1 holds 3
  BOOST_TEST(bounds() == strings{"2 busy"});
  // The exit finished [1, 2) and its report overtakes gate 0's report after taking bound 2 (they
  // come from different nodes). Gate 0's last report is stale: it hides that it holds 2, so
  // admitting gate 1's slice [3, 4) would let 2 and 3 in together.
  exit(0, 2);
  BOOST_TEST(bounds() == (strings{"2 busy", "2"}));  // done with the slice, nothing admitted
  gate(1, 5, 2, 3);
  BOOST_TEST(bounds().size() == 2u);  // still waiting for gate 0
  gate(0, 5, 2, 2);  // from bound 2: it holds 2
  BOOST_TEST(bounds() == (strings{"2 busy", "2", "3 busy"}));  // [2, 3) alone
  exit(0, 3);
  gate(0, 5, 3, std::nullopt);
  BOOST_TEST(bounds().size() == 4u);  // "3": done, but gate 1 has not reported from 3
  gate(1, 5, 3, 3);
  BOOST_TEST(bounds() == (strings{"2 busy", "2", "3 busy", "3", "4 busy"}));
}

BOOST_FIXTURE_TEST_CASE(every_exit_holds_the_next_slice_until_it_finished_this_one, fixture) {
  spawn(1, 2);
  gate(0, 10, none, 1);
  BOOST_TEST(bounds() == strings{"2 busy"});
  gate(0, 10, 2, 5);  // the next slice [5, 6) is complete on the input
  exit(0, 2);
  BOOST_TEST(bounds().size() == 1u);  // exit 1 still has part of [1, 2)
  exit(1, 1);
  exit(0, 1);  // an exit's watermark does not go back
  BOOST_TEST(bounds().size() == 1u);
  exit(1, 2);
  BOOST_TEST(bounds() == (strings{"2 busy", "6 busy"}));
}

BOOST_FIXTURE_TEST_CASE(a_gate_reports_only_what_it_holds_from_the_bound_it_took, fixture) {
  // the gate's link goes to the actor and back, as in an embedded run; its reports are recorded
  auto link = std::make_shared<timezone_link>(0, 1, 1, 1);
  std::vector<sync_report> sent;
  link->set_sender([&](const sync_report& r) {
    sent.push_back(r);
    caf::anon_send(sync, r);
  });
  sync = spawn_synchronizer(sys, synchronizer_logic{1, 1, 1}, [&, link](const sync_bound& b) {
    published.push_back(b);
    link->deliver(b);
  });
  ops::gate_logic gate{link, 0, 100, "timezone 0"};
  int wakes = 0;
  gate.set_wakeup([&] { ++wakes; });
  test::recording_emitter out;
  gate.process(0, test::make_batch<int>({10, 20, 30}, {1, 2, 3}), out);
  gate.on_watermark(3, out);
  BOOST_TEST(out.log.empty());  // the reports are in the actor's mailbox, not applied yet
  BOOST_REQUIRE(sent.size() == 2u);
  BOOST_TEST(*sent.back().lowest == 1);
  sched.run();
  BOOST_TEST(wakes == 1);
  gate.on_wakeup(out);
  BOOST_TEST(out.values<int>() == std::vector<int>{10});
  BOOST_TEST(out.watermarks() == std::vector<event_time>{2});
  // after taking bound 2 it reports from 2: the element it just released is not waiting
  BOOST_TEST(sent.back().bound == 2);
  BOOST_TEST(*sent.back().lowest == 2);
  sched.run();
  BOOST_TEST(published.size() == 1u);  // [2, 3) waits for the exit
  caf::anon_send(sync, sync_report{sync_report::kind::exit, 0, 2});
  sched.run();
  gate.on_wakeup(out);
  BOOST_TEST(out.values<int>() == (std::vector<int>{10, 20}));
  BOOST_TEST(out.watermarks() == (std::vector<event_time>{2, 3}));
  BOOST_TEST(sent.back().bound == 3);
  BOOST_TEST(*sent.back().lowest == 3);
  sched.run();  // the gate's last report: an actor with mail left keeps the system from closing
  link->set_sender(nullptr);  // it refers to this test's locals
}
