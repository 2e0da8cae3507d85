// Exact behaviour of allowed lateness and triggers, step by step: revision numbering and the
// final result, the late output and its counters, late triggers (every event, every n events,
// every Δt, planned offsets), early triggers, session merges by a late event, count windows,
// process functions and the operator's metrics.
#define BOOST_TEST_MODULE lateness
#include <boost/test/unit_test.hpp>

#include <functional>
#include <sstream>

#include "harness.hpp"
#include "tidemark/core/window_operators.hpp"

using namespace tidemark;
using namespace tidemark::test;

namespace {

using sum_fn = ops::aggregate_function<reading, int, agg::sum_of<v_of>>;
using result = window_result<int, std::int64_t>;

/// Drives one window operator and renders its output as lines.
struct harness {
  template <class Assigner>
  harness(Assigner a, window_config cfg)
      : logic(ops::make_window_logic<reading, int>(a, key_of{}, sum_fn{agg::sum(v_of{})}, cfg, "w")) {}

  void feed(std::vector<reading> es) { logic->process(0, readings(std::move(es)), out); }
  void watermark(event_time wm) { logic->on_watermark(wm, out); }
  void tick(std::int64_t now) { logic->on_timer(now, out); }

  /// Output since the last call, one line per result, then one per dropped event ("late v=...",
  /// from the late port).
  std::vector<std::string> take() {
    std::vector<std::string> lines;
    for (const auto& r : out.values<result>()) {
      std::ostringstream s;
      s << r;
      lines.push_back(s.str());
    }
    for (const auto& x : out.values<reading>(late_port))
      lines.push_back("late v=" + std::to_string(x.v));
    out.log.clear();
    return lines;
  }

  std::map<std::string, double> metrics() const {
    std::map<std::string, double> m;
    logic->add_metrics(m);
    return m;
  }

  std::unique_ptr<operator_logic> logic;
  recording_emitter out;
};

using lines = std::vector<std::string>;

window_config with_lateness(event_time l, late_trigger late = late_trigger::every_event()) {
  window_config cfg;
  cfg.allowed_lateness = l;
  cfg.late = std::move(late);
  return cfg;
}

}  // namespace

BOOST_AUTO_TEST_CASE(late_events_make_revisions_and_the_end_of_lateness_makes_the_final_one) {
  harness h{tumbling{10}, with_lateness(20)};
  h.feed({{1, 1, 1}, {1, 5, 2}, {2, 12, 7}});
  BOOST_TEST(h.take() == lines{});
  h.watermark(10);
  BOOST_TEST(h.take() == lines{"[0,10) key=1 rev=0 on_time 3"});
  h.feed({{1, 3, 10}});
  BOOST_TEST(h.take() == lines{"[0,10) key=1 rev=1 late 13"});
  h.watermark(29);
  BOOST_TEST(h.take() == lines{"[10,20) key=2 rev=0 on_time 7"});
  h.feed({{1, 4, 100}});
  BOOST_TEST(h.take() == lines{"[0,10) key=1 rev=2 late 113"});
  h.watermark(30);
  BOOST_TEST(h.take() == lines{"[0,10) key=1 rev=3 final late 113"});
  h.feed({{1, 2, 1000}, {2, 15, 5}});  // too late for [0,10); within lateness for [10,20)
  BOOST_TEST(h.take() == (lines{"[10,20) key=2 rev=1 late 12", "late v=1000"}));
  h.logic->finish(h.out);
  BOOST_TEST(h.take() == lines{"[10,20) key=2 rev=2 final late 12"});
  auto m = h.metrics();
  BOOST_TEST(m["late_events_dropped"] == 1.0);
  BOOST_TEST(m["late_events_accepted"] == 3.0);
  BOOST_TEST(m["window_panes"] == 0.0);
}

BOOST_AUTO_TEST_CASE(without_lateness_the_on_time_result_is_final_and_late_events_are_dropped) {
  harness h{tumbling{10}, window_config{}};
  h.feed({{1, 1, 1}, {1, 11, 2}});
  h.watermark(10);
  BOOST_TEST(h.take() == lines{"[0,10) key=1 rev=0 final on_time 1"});
  h.feed({{1, 9, 5}, {1, 10, 6}});  // 9 < watermark: dropped; 10 is on time
  BOOST_TEST(h.take() == lines{"late v=5"});
  h.watermark(25);
  BOOST_TEST(h.take() == lines{"[10,20) key=1 rev=0 final on_time 8"});
  auto m = h.metrics();
  BOOST_TEST(m["late_events_dropped"] == 1.0);
  BOOST_TEST(m["watermark"] == 25.0);
  BOOST_TEST(m["watermark_lag"] == 0.0);  // nothing seen beyond 25
}

BOOST_AUTO_TEST_CASE(a_late_event_can_open_a_window_that_never_fired_on_time) {
  harness h{tumbling{10}, with_lateness(50)};
  h.watermark(30);
  h.feed({{4, 12, 9}});
  BOOST_TEST(h.take() == lines{"[10,20) key=4 rev=0 late 9"});
  h.watermark(70);
  BOOST_TEST(h.take() == lines{"[10,20) key=4 rev=1 final late 9"});
}

BOOST_AUTO_TEST_CASE(every_n_late_events_fires_on_the_nth_and_the_rest_at_the_end) {
  harness h{tumbling{10}, with_lateness(100, late_trigger::every_events(2))};
  h.feed({{1, 1, 1}});
  h.watermark(10);
  h.feed({{1, 2, 10}});
  BOOST_TEST(h.take() == lines{"[0,10) key=1 rev=0 on_time 1"});
  h.feed({{1, 3, 100}, {1, 4, 1000}});
  BOOST_TEST(h.take() == lines{"[0,10) key=1 rev=1 late 111"});
  h.watermark(110);
  BOOST_TEST(h.take() == lines{"[0,10) key=1 rev=2 final late 1111"});
}

BOOST_AUTO_TEST_CASE(every_period_late_trigger_fires_on_processing_time_only_with_news) {
  harness h{tumbling{10}, with_lateness(100, late_trigger::every_ms(50))};
  BOOST_TEST(h.logic->timer_period_ms() == 50);
  h.tick(1000);
  h.feed({{1, 1, 1}});
  h.watermark(10);
  h.take();
  h.feed({{1, 2, 10}});
  h.tick(1030);  // 30 ms since the on-time result
  BOOST_TEST(h.take() == lines{});
  h.tick(1050);
  BOOST_TEST(h.take() == lines{"[0,10) key=1 rev=1 late 11"});
  h.tick(1100);  // nothing new
  BOOST_TEST(h.take() == lines{});
}

BOOST_AUTO_TEST_CASE(planned_offsets_fire_at_the_planned_times_after_expiry) {
  harness h{tumbling{10}, with_lateness(100, late_trigger::at_offsets({50, 200}))};
  BOOST_TEST(h.logic->timer_period_ms() == 50);
  h.tick(1000);
  h.feed({{1, 1, 1}});
  h.watermark(10);  // expires at 1000: plan 1050, 1200
  h.take();
  h.feed({{1, 2, 10}});
  h.tick(1040);
  BOOST_TEST(h.take() == lines{});
  h.tick(1050);
  BOOST_TEST(h.take() == lines{"[0,10) key=1 rev=1 late 11"});
  h.feed({{1, 3, 100}});
  h.tick(1150);
  BOOST_TEST(h.take() == lines{});
  h.tick(1200);
  BOOST_TEST(h.take() == lines{"[0,10) key=1 rev=2 late 111"});
  h.feed({{1, 4, 1000}});
  h.tick(2000);  // the plan is used up: the rest waits for the end of lateness
  BOOST_TEST(h.take() == lines{});
  h.watermark(110);
  BOOST_TEST(h.take() == lines{"[0,10) key=1 rev=3 final late 1111"});
}

BOOST_AUTO_TEST_CASE(the_staleness_trigger_fires_at_its_planned_times) {
  // Nothing observed: late events assumed uniform over T = 256, five intervals at 0.05.
  harness h{tumbling{10}, with_lateness(256, late_trigger::staleness(0.05, 1))};
  BOOST_TEST(h.logic->timer_period_ms() == 1);
  h.tick(1000);
  h.feed({{1, 1, 1}});
  h.watermark(10);  // expires at 1000: plan 1052, 1104, 1155, 1206
  BOOST_TEST(h.take() == lines{"[0,10) key=1 rev=0 on_time 1"});
  h.feed({{1, 2, 10}});
  h.tick(1051);
  BOOST_TEST(h.take() == lines{});
  h.tick(1052);
  BOOST_TEST(h.take() == lines{"[0,10) key=1 rev=1 late 11"});
  h.tick(1104);  // nothing new
  h.feed({{1, 3, 100}});
  h.tick(1154);
  BOOST_TEST(h.take() == lines{});
  h.tick(1155);
  BOOST_TEST(h.take() == lines{"[0,10) key=1 rev=2 late 111"});
}

BOOST_AUTO_TEST_CASE(predictive_lateness_gives_new_windows_the_learned_bound_and_old_ones_keep_theirs) {
  window_config cfg;
  cfg.predictive_lateness = lateness::predictive{0.5, 0.5, 300, 0, 300};
  harness h{tumbling{10}, cfg};
  BOOST_TEST(h.metrics()["allowed_lateness"] == 300.0);
  h.watermark(-100);  // lateness is observed from here on
  h.feed({{1, 5, 1}});  // [0,10) gets the initial 300
  h.watermark(200);     // watched for 300: the bound may adapt from now on
  BOOST_TEST(h.take() == lines{"[0,10) key=1 rev=0 on_time 1"});
  // 64 events for [190,200), all at its end: after-end lateness 0.
  std::vector<reading> late(64, reading{2, 195, 1});
  h.feed(late);
  h.take();
  BOOST_TEST(h.metrics()["lateness_after_end_p99"] == 0.0);
  h.feed({{3, 205, 7}});  // [200,210) gets the learned 0
  BOOST_TEST(h.metrics()["allowed_lateness"] == 0.0);
  h.watermark(210);
  BOOST_TEST(h.take() == lines{"[200,210) key=3 rev=0 final on_time 7"});
  h.feed({{1, 6, 10}, {3, 206, 100}});  // [0,10) still accepts; [200,210) is gone
  BOOST_TEST(h.take() == (lines{"[0,10) key=1 rev=1 late 11", "late v=100"}));
  h.watermark(310);
  BOOST_TEST(h.take() == lines{"[0,10) key=1 rev=2 final late 11"});  // [190,200) got 300 too
  auto m = h.metrics();
  BOOST_TEST(m["late_events_observed"] == 66.0);
  BOOST_TEST(m["late_events_dropped"] == 1.0);
}

BOOST_AUTO_TEST_CASE(a_purged_window_never_reopens_when_the_predictive_bound_grows) {
  window_config cfg;
  cfg.predictive_lateness = lateness::predictive{0.5, 0.5, 10, 0, 1000};
  harness h{tumbling{10}, cfg};
  h.watermark(0);
  h.feed({{1, 5, 1}});  // [0,10) gets the initial 10
  h.watermark(20);
  BOOST_TEST(h.take() == lines{"[0,10) key=1 rev=0 final on_time 1"});
  h.watermark(60);
  // 64 events 150 after their window's end: beyond the bound, dropped, but observed.
  h.feed(std::vector<reading>(64, reading{2, -95, 1}));
  BOOST_TEST(h.take() == lines(64, "late v=1"));
  BOOST_TEST(h.metrics()["allowed_lateness"] == 150.0);
  // [0,10) would be within the new bound, but it was purged: its events stay late.
  h.feed({{1, 7, 3}});
  BOOST_TEST(h.take() == lines{"late v=3"});
  // A window that never existed opens with the new bound (the old one would have refused it).
  h.feed({{1, 45, 4}});
  BOOST_TEST(h.take() == lines{"[40,50) key=1 rev=0 late 4"});
  BOOST_TEST(h.metrics()["late_events_dropped"] == 65.0);
}

BOOST_AUTO_TEST_CASE(early_count_and_processing_time_triggers_add_results_before_the_end) {
  window_config cfg;
  cfg.early = trigger::on_count(2);
  harness h{tumbling{10}, cfg};
  h.feed({{1, 1, 1}, {1, 2, 2}, {1, 3, 4}});
  BOOST_TEST(h.take() == lines{"[0,10) key=1 rev=0 early 3"});
  h.watermark(10);
  BOOST_TEST(h.take() == lines{"[0,10) key=1 rev=1 final on_time 7"});

  cfg.early = trigger::on_processing_time(100);
  harness p{tumbling{10}, cfg};
  BOOST_TEST(p.logic->timer_period_ms() == 100);
  p.feed({{1, 1, 1}});
  p.tick(100);
  BOOST_TEST(p.take() == lines{"[0,10) key=1 rev=0 early 1"});
  p.tick(200);  // unchanged
  BOOST_TEST(p.take() == lines{});
}

BOOST_AUTO_TEST_CASE(sliding_windows_drop_an_event_only_when_every_window_is_past_lateness) {
  harness h{sliding{10, 5}, with_lateness(0)};
  h.feed({{1, 7, 1}});
  h.watermark(10);
  BOOST_TEST(h.take() == lines{"[0,10) key=1 rev=0 final on_time 1"});
  h.feed({{1, 8, 2}});  // [0,10) is closed, [5,15) is open
  h.watermark(15);
  BOOST_TEST(h.take() == lines{"[5,15) key=1 rev=0 final on_time 3"});
  BOOST_TEST(h.metrics()["late_events_dropped"] == 0.0);
  h.feed({{1, 9, 4}});
  BOOST_TEST(h.take() == lines{"late v=4"});
}

BOOST_AUTO_TEST_CASE(a_late_event_that_bridges_two_sessions_retracts_them_and_merges) {
  harness h{session{10}, with_lateness(100)};
  h.feed({{1, 0, 1}, {1, 18, 2}});
  h.watermark(50);
  BOOST_TEST(h.take() == (lines{"[0,10) key=1 rev=0 on_time 1", "[18,28) key=1 rev=0 on_time 2"}));
  h.feed({{1, 10, 4}});  // [10,20) touches [0,10) and overlaps [18,28)
  BOOST_TEST(h.take() == (lines{"[0,10) key=1 rev=1 final retracted 1",
                                "[18,28) key=1 rev=1 final retracted 2",
                                "[0,28) key=1 rev=0 late 7"}));
  h.feed({{1, 5, 8}});  // inside the merged session: same window, next revision
  BOOST_TEST(h.take() == lines{"[0,28) key=1 rev=1 late 15"});
  h.watermark(128);
  BOOST_TEST(h.take() == lines{"[0,28) key=1 rev=2 final late 15"});
  h.feed({{1, 17, 16}});  // the session is gone and [17,27) is past its lateness too
  BOOST_TEST(h.take() == lines{"late v=16"});
}

BOOST_AUTO_TEST_CASE(a_session_extended_past_the_watermark_fires_on_time_again) {
  harness h{session{10}, with_lateness(100)};
  h.feed({{1, 0, 1}});
  h.watermark(12);
  BOOST_TEST(h.take() == lines{"[0,10) key=1 rev=0 on_time 1"});
  h.feed({{1, 9, 2}});  // [9,19) reaches past the watermark: [0,19) is open again
  BOOST_TEST(h.take() == lines{"[0,10) key=1 rev=1 final retracted 1"});
  h.watermark(19);
  BOOST_TEST(h.take() == lines{"[0,19) key=1 rev=0 on_time 3"});
}

BOOST_AUTO_TEST_CASE(count_windows_fire_when_full_and_partial_ones_at_the_end) {
  harness h{count_sliding(3, 2), window_config{}};
  h.feed({{1, 0, 1}, {1, 0, 2}, {2, 0, 50}, {1, 0, 3}, {1, 0, 4}, {1, 0, 5}, {1, 0, 6}});
  BOOST_TEST(h.take() == (lines{"[0,3) key=1 rev=0 final on_time 6", "[2,5) key=1 rev=0 final on_time 12"}));
  h.watermark(1000);  // count windows ignore watermarks
  BOOST_TEST(h.take() == lines{});
  h.logic->finish(h.out);
  auto rest = h.take();
  std::sort(rest.begin(), rest.end());
  BOOST_TEST(rest == (lines{"[0,3) key=2 rev=0 final on_time 50", "[4,7) key=1 rev=0 final on_time 11"}));

  harness t{count_tumbling(2), window_config{}};
  t.feed({{1, 0, 1}, {1, 0, 2}, {1, 0, 3}});
  BOOST_TEST(t.take() == lines{"[0,2) key=1 rev=0 final on_time 3"});
}

BOOST_AUTO_TEST_CASE(process_functions_see_every_event_of_the_window_again_on_each_revision) {
  auto values = [](const int& key, const window_id& w, window_events<reading>& events) {
    std::string s = std::to_string(key) + "@" + std::to_string(w.start) + ":";
    for (const auto& r : events) s += " " + std::to_string(r.v);
    return s;
  };
  using fn = ops::process_function<reading, int, decltype(values)>;
  auto store = std::make_unique<memory_window_store<int, reading>>();
  auto* s = store.get();
  auto logic = ops::make_window_logic<reading, int>(tumbling{10}, key_of{}, fn{values, std::move(store)},
                                                    with_lateness(10), "w");
  recording_emitter out;
  logic->process(0, readings({{1, 1, 1}, {1, 2, 2}, {3, 4, 7}}), out);
  BOOST_TEST(s->memory_events() == 3u);
  logic->on_watermark(10, out);
  logic->process(0, readings({{1, 3, 3}}), out);
  logic->on_watermark(20, out);
  std::vector<std::string> got;
  BOOST_TEST(out.values<reading>(late_port).empty());
  for (const auto& r : out.values<window_result<int, std::string>>())
    got.push_back(r.value + (r.final ? " final" : ""));
  BOOST_REQUIRE_EQUAL(got.size(), 5u);
  std::sort(got.begin(), got.begin() + 2);  // two keys fire together, in table order
  std::sort(got.begin() + 3, got.end());
  BOOST_TEST(got == (lines{"1@0: 1 2", "3@0: 7", "1@0: 1 2 3", "1@0: 1 2 3 final", "3@0: 7 final"}));
  BOOST_TEST(s->memory_events() == 0u);
  BOOST_TEST(s->memory_bytes() == 0u);
}

namespace {

/// Logs, in one list with the window function's runs, the results handed to it and its flushes.
class handover_log final : public emitter {
 public:
  explicit handover_log(std::vector<std::string>& log) : log_(log) {}
  void emit_watermark(event_time wm) override { log_.push_back("watermark " + std::to_string(wm)); }
  void emit_idle(bool) override {}
  void flush() override { log_.push_back("flush"); }

 protected:
  void emit_on(std::uint32_t port, batch_ptr b) override {
    if (port != 0) return;
    for (const auto& r : static_cast<batch<window_result<int, std::int64_t>>&>(*b).values)
      log_.push_back("result " + std::to_string(r.window.start) + (r.final ? " final" : ""));
  }

 private:
  std::vector<std::string>& log_;
};

}  // namespace

BOOST_AUTO_TEST_CASE(on_time_results_leave_before_the_late_re_executions_of_the_same_watermark) {
  // At watermark 20 window [10,20) fires on time and [0,10) ends its allowed lateness (10), so it
  // re-executes for its final result. On time first: the current window's result is handed over
  // and flushed before the past window's function even starts; in window order it waits for it.
  for (bool on_time_first : {true, false}) {
    std::vector<std::string> log;
    auto sum = [&log](const int&, const window_id& w, window_events<reading>& events) {
      log.push_back("run " + std::to_string(w.start));
      std::int64_t s = 0;
      for (const auto& r : events) s += r.v;
      return s;
    };
    using fn = ops::process_function<reading, int, decltype(sum)>;
    auto cfg = with_lateness(10);
    cfg.on_time_first = on_time_first;
    auto logic = ops::make_window_logic<reading, int>(
        tumbling{10}, key_of{}, fn{sum, std::make_unique<memory_window_store<int, reading>>()}, cfg,
        "w");
    handover_log out{log};
    logic->process(0, readings({{1, 5, 1}}), out);
    logic->on_watermark(10, out);
    logic->process(0, readings({{1, 15, 2}, {1, 3, 4}}), out);  // the late event re-fires [0,10)
    log.clear();
    logic->on_watermark(20, out);
    if (on_time_first)
      BOOST_TEST(log == (lines{"run 10", "result 10", "flush", "run 0", "result 0 final",
                               "watermark 20"}));
    else
      BOOST_TEST(log == (lines{"run 0", "run 10", "result 0 final", "result 10", "flush",
                               "watermark 20"}));
    std::map<std::string, double> m;
    logic->add_metrics(m);
    BOOST_TEST(m.at("on_time_releases") == 2);  // watermarks 10 and 20
    BOOST_TEST(m.at("on_time_delay_ms_max") >= m.at("on_time_delay_ms_mean"));
  }
}

BOOST_AUTO_TEST_CASE(elements_without_event_time_fail_with_a_message_naming_the_operator) {
  harness h{tumbling{10}, window_config{}};
  auto b = make_batch<reading>({{1, 0, 1}}, {}, {7});
  BOOST_CHECK_EXCEPTION(h.logic->process(0, std::move(b), h.out), job_error, [](const job_error& e) {
    return std::string{e.what()}.find("window operator 'w'") != std::string::npos &&
           std::string{e.what()}.find("assign_timestamps") != std::string::npos;
  });
}

BOOST_AUTO_TEST_CASE(bad_window_parameters_are_rejected_with_the_parameter_named) {
  BOOST_CHECK_EXCEPTION(tumbling{0}, std::invalid_argument, [](const std::invalid_argument& e) {
    return std::string{e.what()} == "tumbling(size): size must be > 0, got 0";
  });
  BOOST_CHECK_THROW((sliding{10, -1}), std::invalid_argument);
  BOOST_CHECK_THROW(session{0}, std::invalid_argument);
  BOOST_CHECK_THROW(count_tumbling(0), std::invalid_argument);
  BOOST_CHECK_THROW(late_trigger::every_ms(0), std::invalid_argument);
  BOOST_CHECK_THROW(late_trigger::at_offsets({-5}), std::invalid_argument);
}
