// The job registry: option parsing and its errors, a registered job run by name whose output
// equals a plain loop over the same readings, and that job's source resuming from a checkpoint.
#define BOOST_TEST_MODULE job_registry
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "../checkpoint/checkpoint_harness.hpp"
#include "tidemark/examples/example_jobs.hpp"
#include "tidemark/runtime/job_registry.hpp"

using namespace tidemark;

namespace {

job_registry examples_registry() {
  job_registry r;
  examples::register_jobs(r);
  return r;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const job_error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

BOOST_AUTO_TEST_CASE(options_parse_with_defaults_and_typed_getters) {
  auto r = examples_registry();
  const auto& spec = r.find("example-window-count");
  auto o = parse_job_arguments(spec, {"--events", "42", "--keys=7"});
  BOOST_TEST(o.get_int("events") == 42);
  BOOST_TEST(o.get_int("keys") == 7);
  BOOST_TEST(o.get_int("window-ms") == 1000);  // default
  BOOST_TEST(o.has("events"));
  BOOST_TEST(!o.has("window-ms"));
  BOOST_TEST(o.values().size() == 2u);
}

BOOST_AUTO_TEST_CASE(bad_arguments_name_what_is_wrong) {
  auto r = examples_registry();
  const auto& spec = r.find("example-window-count");
  BOOST_TEST(error_of([&] { parse_job_arguments(spec, {"--nope", "1"}); }) ==
             "unknown option '--nope'; the job's options are: --events, --keys, --window-ms, "
             "--parallelism, --rate, --gather, --sink-delay-us, --arrivals, --out");
  BOOST_TEST(error_of([&] { parse_job_arguments(spec, {"--events"}); }) ==
             "job 'example-window-count': option '--events' needs a value");
  BOOST_TEST(error_of([&] { parse_job_arguments(spec, {"events"}); }) ==
             "job 'example-window-count': expected an option like --name value, got 'events'");
  auto o = parse_job_arguments(spec, {"--events", "12x"});
  BOOST_TEST(error_of([&] { o.get_int("events"); }) ==
             "option --events: expected an integer, got '12x'");
  BOOST_TEST(error_of([&] { r.find("nothing"); }) ==
             "no job named 'nothing'; registered jobs: example-late-windows, example-queries, example-window-count");
  BOOST_TEST(error_of([&] { r.add(spec); }) == "job 'example-window-count' is registered twice");
}

BOOST_AUTO_TEST_CASE(bool_options_accept_common_spellings) {
  job_spec spec{
      "flags", "", {{"fast", "no", ""}}, nullptr, [](const job_options&) { return job{}; }, nullptr};
  BOOST_TEST(!spec.make_options().get_bool("fast"));
  BOOST_TEST(parse_job_arguments(spec, {"--fast", "on"}).get_bool("fast"));
  BOOST_TEST(error_of([&] { parse_job_arguments(spec, {"--fast=maybe"}).get_bool("fast"); }) ==
             "option --fast: expected true or false, got 'maybe'");
}

BOOST_AUTO_TEST_CASE(registered_job_runs_by_name_and_matches_a_plain_loop) {
  auto r = examples_registry();
  const auto& spec = r.find("example-window-count");
  auto out = std::filesystem::temp_directory_path() / "tidemark_job_registry_test.txt";
  std::filesystem::remove(out);
  auto o = parse_job_arguments(spec, {"--events", "5000", "--keys", "7", "--window-ms", "1000",
                                      "--parallelism", "3", "--out", out.string()});
  run_registered(spec, o);

  // the same readings counted by hand: sensor = i * 2654435761 mod keys, window = i / 1000
  std::map<std::pair<std::int64_t, std::uint32_t>, std::uint64_t> expected;
  for (std::int64_t i = 0; i < 5000; ++i)
    ++expected[{i / 1000, static_cast<std::uint32_t>((i * 2654435761u) % 7)}];
  std::vector<std::string> want;
  for (const auto& [wk, n] : expected) {
    std::ostringstream line;
    line << "[" << wk.first * 1000 << "," << (wk.first + 1) * 1000 << ") key=" << wk.second
         << " rev=0 final on_time " << n;
    want.push_back(line.str());
  }
  std::vector<std::string> got;
  std::ifstream in(out);
  for (std::string line; std::getline(in, line);) got.push_back(line);
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  BOOST_TEST(got == want, boost::test_tools::per_element());
  std::filesystem::remove(out);
}

BOOST_AUTO_TEST_CASE(the_example_readings_resume_from_a_checkpoint) {
  const auto registry = examples_registry();
  const auto& spec = registry.find("example-window-count");
  for (const std::string rate : {"0", "20000"}) {  // unpaced, and paced (pacing restarts at restore)
    auto o = spec.make_options();
    o.set("events", "5000");
    o.set("rate", rate);
    auto j = spec.build(o);
    const auto make_source = j.graph().node(0).make_source;
    const auto make_timestamps = j.graph().node(1).make_operator;
    instance_info info;
    // reading i has event time i: the times say which readings came, in which order
    std::vector<event_time> expected(5000);
    for (std::size_t i = 0; i < expected.size(); ++i) expected[i] = static_cast<event_time>(i);
    for (std::size_t pulls : {0, 3, 40}) {
      BOOST_TEST_CONTEXT("rate " << rate << ", snapshot after " << pulls << " pulls") {
        test::event_times out{make_timestamps(info)};
        std::vector<std::uint8_t> state;
        {
          auto first = make_source(info);
          BOOST_TEST(first->replayable());
          first->open();
          for (std::size_t i = 0; i < pulls && first->pull(256, out); ++i) {
          }
          state = test::snapshot_of(*first);
        }
        auto second = make_source(info);
        second->open();
        test::restore_from(*second, state);
        while (second->pull(256, out)) {
        }
        BOOST_TEST(out.times == expected);
      }
    }
  }
}
