// The progress line of `tidemark run`: from two snapshots and the time between them it shows the
// elapsed time, the sources' events per second and so far, the lowest sink watermark as UTC time
// and the late events; expected lines are written out by hand from the counters.
#define BOOST_TEST_MODULE observe progress line
#include <boost/test/unit_test.hpp>

#include "live_fixture.hpp"
#include "tidemark/observe/progress.hpp"

using namespace tidemark;
using tidemark::observe::progress_line;
using tidemark::test::instance;
using tidemark::test::op;

namespace {

/// The window job at `seconds`: the source emitted `events`, the two window instances hold the
/// watermarks `wm0` and `wm1`.
live_snapshot window_job(double seconds, std::uint64_t events, event_time wm0, event_time wm1) {
  live_snapshot s;
  s.plan = test::window_job_plan();
  s.seconds = seconds;
  s.instances.push_back(
      instance(0, 0, {op("readings", 0, events), op("stamp", events, events)}, wm1 + 100));
  s.instances.push_back(instance(
      1, 0,
      {op("window", events / 2, 3, {{"late_events_accepted", 2}, {"late_events_dropped", 3}}),
       op("counts", 3, 0)},
      wm0));
  s.instances.push_back(instance(
      1, 1, {op("window", events / 2, 4, {{"late_events_dropped", 2}}), op("counts", 4, 0)}, wm1));
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(rates_come_from_the_sources_between_two_snapshots) {
  auto before = window_job(1.0, 1000, 1000, 1200);
  auto now = window_job(3.0, 5000, 4500, 6000);
  // (5000 - 1000) events in 2 s; the lower of the two sink watermarks; late 2 + 3 + 2
  BOOST_TEST(
      progress_line(now, &before) ==
      "elapsed 3.0 s | 2.00k events/s | 5.00k events | watermark 1970-01-01 00:00:04.500 | late 7");
  auto slow = window_job(3.5, 5250, 4500, 6000);
  BOOST_TEST(
      progress_line(slow, &now) ==
      "elapsed 3.5 s | 500 events/s | 5.25k events | watermark 1970-01-01 00:00:04.500 | late 7");
}

BOOST_AUTO_TEST_CASE(without_an_earlier_snapshot_or_a_watermark_it_shows_dashes) {
  live_snapshot start;
  start.plan = test::window_job_plan();
  start.seconds = 0.4;
  BOOST_TEST(progress_line(start, nullptr) ==
             "elapsed 0.4 s | - events/s | 0 events | watermark - | late 0");
  // one sink instance answered, the other not yet: it holds the watermark back
  auto partial = window_job(0.9, 10, 4500, 6000);
  partial.instances.pop_back();
  BOOST_TEST(progress_line(partial, nullptr).find("watermark - |") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(long_runs_large_counts_and_the_end_of_input) {
  auto before = window_job(115.0, 234567, 0, 0);
  auto now = window_job(125.0, 1234567, end_of_time, end_of_time);
  BOOST_TEST(progress_line(now, &before) ==
             "elapsed 2:05 | 100k events/s | 1.23M events | watermark end | late 7");
  now.seconds = 3725.2;
  BOOST_TEST(progress_line(now, nullptr).rfind("elapsed 1:02:05 | - events/s", 0) == 0);
}

BOOST_AUTO_TEST_CASE(a_job_fused_into_one_stage_shows_its_operators_watermark) {
  // no edges: the only stage is source and sink, and its instance passes no watermark on
  live_snapshot s;
  auto plan = std::make_shared<live_plan>();
  plan->job = "fused";
  plan->stages.push_back({{"readings", "stamp", "sink"},
                          {"generator", "assign_timestamps", "for_each"},
                          1,
                          {"local"}});
  s.plan = plan;
  s.seconds = 2;
  // 2015-06-01 00:00:00.250 UTC is 1433116800250 ms after the epoch
  s.instances.push_back(
      instance(0, 0,
               {op("readings", 0, 42), op("stamp", 42, 42, {{"watermark", 1433116800250.0}}),
                op("sink", 42, 0)},
               start_of_time));
  BOOST_TEST(progress_line(s, nullptr) ==
             "elapsed 2.0 s | - events/s | 42 events | watermark 2015-06-01 00:00:00.250 | late 0");
}
