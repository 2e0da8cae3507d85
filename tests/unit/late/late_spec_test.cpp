// The text specs of late triggers and lateness policies: accepted forms and the errors of bad ones.
#define BOOST_TEST_MODULE late_spec_test
#include <boost/test/unit_test.hpp>

#include <stdexcept>
#include <string>

#include "../../support/thrown.hpp"
#include "tidemark/core/lateness.hpp"
#include "tidemark/core/windows.hpp"

using namespace tidemark;

namespace {

// The message of the std::invalid_argument that f throws ("" when it throws none).
template <class F>
std::string error_of(F f) {
  return test::thrown<std::invalid_argument>(f);
}

}  // namespace

BOOST_AUTO_TEST_CASE(late_trigger_specs_make_the_policies_they_name) {
  BOOST_TEST(parse_late_trigger("every-event").policy().tick_ms() == 0);
  fire_state s;
  s.pending = 2;
  BOOST_TEST(!parse_late_trigger("every-events:3").policy().on_late_event(s, 0));
  s.pending = 3;
  BOOST_TEST(parse_late_trigger("every-events:3").policy().on_late_event(s, 0));
  BOOST_TEST(parse_late_trigger("every-ms:250").policy().tick_ms() == 250);
  BOOST_TEST(parse_late_trigger("at-offsets:40,10,30").policy().tick_ms() == 10);
  BOOST_TEST(parse_late_trigger("staleness:0.05").policy().tick_ms() == 50);
  BOOST_TEST(parse_late_trigger("every-dt:10").policy().tick_ms() == 50);
  BOOST_TEST(parse_late_trigger("every-devents:10").policy().tick_ms() == 50);
}

BOOST_AUTO_TEST_CASE(bad_late_trigger_specs_say_what_is_wrong_and_what_is_accepted) {
  BOOST_TEST(error_of([] { parse_late_trigger("sometimes"); }) ==
             "late trigger 'sometimes': unknown kind 'sometimes' (accepted: every-event, "
             "every-events:N, every-ms:MS, at-offsets:MS,MS,..., staleness:S (0 < S <= 1), "
             "every-dt:N, every-devents:N)");
  BOOST_TEST(error_of([] {
               parse_late_trigger("every-events:x");
             }).rfind("late trigger 'every-events:x': 'x' is not a number", 0) == 0);
  BOOST_TEST(error_of([] {
               parse_late_trigger("every-ms:0");
             }).rfind("late trigger 'every-ms:0': N must be > 0", 0) == 0);
  BOOST_TEST(error_of([] {
               parse_late_trigger("every-event:3");
             }).rfind("late trigger 'every-event:3': every-event takes 0 arguments", 0) == 0);
  BOOST_TEST(
      error_of([] { parse_late_trigger("staleness:1.5"); })
          .rfind("late trigger 'staleness:1.5': late_trigger::staleness: bound must be in (0, 1], "
                 "got 1.5",
                 0) == 0);
  BOOST_TEST(
      error_of([] { parse_late_trigger("at-offsets:5,-1"); })
          .rfind("late trigger 'at-offsets:5,-1': late_trigger::at_offsets: offsets must be >= 0",
                 0) == 0);
}

BOOST_AUTO_TEST_CASE(lateness_specs_make_fixed_and_predictive_policies) {
  BOOST_TEST(parse_lateness("fixed:2000").as_fixed()->ms == 2000);
  BOOST_TEST(parse_lateness("750").as_fixed()->ms == 750);
  auto p = *parse_lateness("predictive:0.99,0.95").as_predictive();
  BOOST_TEST(p.coverage == 0.99);
  BOOST_TEST(p.confidence == 0.95);
  BOOST_TEST(p.initial == 600'000);
  BOOST_TEST(p.min == 0);
  BOOST_TEST(p.max == 600'000);
  p = *parse_lateness("predictive:0.9,0.5,20000,1000").as_predictive();
  BOOST_TEST(p.initial == 20'000);
  BOOST_TEST(p.min == 1000);
  BOOST_TEST(p.max == 20'000);
  p = *parse_lateness("predictive:0.9,0.5,20000,1000,50000").as_predictive();
  BOOST_TEST(p.max == 50'000);
}

BOOST_AUTO_TEST_CASE(bad_lateness_specs_say_what_is_wrong) {
  BOOST_TEST(error_of([] { parse_lateness("forever"); })
                 .rfind("lateness 'forever': unknown kind 'forever' (accepted: fixed:MS, MS, "
                        "predictive:COVERAGE,CONFIDENCE[,INITIAL_MS[,MIN_MS[,MAX_MS]]])",
                        0) == 0);
  BOOST_TEST(error_of([] {
               parse_lateness("fixed:-5");
             }).rfind("lateness 'fixed:-5': lateness::fixed: ms must be >= 0, got -5", 0) == 0);
  BOOST_TEST(error_of([] {
               parse_lateness("predictive:0.99");
             }).rfind("lateness 'predictive:0.99': predictive takes 2 to 5 arguments", 0) == 0);
  BOOST_TEST(
      error_of([] { parse_lateness("predictive:1.2,0.95"); })
          .rfind("lateness 'predictive:1.2,0.95': lateness::predictive: coverage must be in (0, 1)",
                 0) == 0);
  BOOST_TEST(
      error_of([] { parse_lateness("predictive:0.9,0.9,100,200"); })
          .rfind("lateness 'predictive:0.9,0.9,100,200': lateness::predictive: need 0 <= min <= "
                 "initial <= max",
                 0) == 0);
}
