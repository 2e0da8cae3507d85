// remote_call against the ZeroMQ test service: many requests in flight, replies out of order,
// the timezone downstream still sees timestamps in order; a silent service fails the job with the
// endpoint in the message; bad latency specs are rejected with the expected forms.
#define BOOST_TEST_MODULE remote_call
#include <boost/test/unit_test.hpp>

#include "tidemark/remote/remote_call.hpp"
#include "tidemark/remote/test_service.hpp"
#include "tidemark/runtime/runtime.hpp"

using namespace tidemark;

namespace {

job calls(const std::string& endpoint, remote::call_options o, collected<std::string>& out, int n) {
  job j{"remote"};
  std::vector<int> xs(n);
  for (int i = 0; i < n; ++i) xs[i] = i;
  auto in = j.from_container(xs, "src").assign_timestamps([](int x) { return x; },
                                                           ascending_timestamps().every_events(1));
  out = remote::remote_call(
            in, endpoint, [](int x) { return std::to_string(x); },
            [](int x, std::string reply) { return std::to_string(x) + "=" + reply; }, o, "call")
            .collect("out");
  return j;
}

}  // namespace

BOOST_AUTO_TEST_CASE(replies_come_back_out_of_order_and_leave_in_order) {
  remote::test_service service{"tcp://127.0.0.1:*", remote::latency_model::parse("uniform:0:3000"), 7};
  collected<std::string> out;
  remote::call_options o;
  o.concurrency = 16;
  auto result = run(calls(service.endpoint(), o, out, 300));
  std::vector<std::string> expected;
  for (int i = 0; i < 300; ++i) expected.push_back(std::to_string(i) + "=reply:" + std::to_string(i));
  BOOST_TEST(out.values() == expected, boost::test_tools::per_element());
  BOOST_TEST(service.served() == 300u);
  for (const auto& op : result.per_operator())
    if (op.name == "call") BOOST_TEST(op.extra.at("max_in_flight") == 16.0);
  BOOST_TEST(result.plan.find("call (remote_call, delayed, concurrency 16)") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_silent_service_fails_the_job_naming_the_endpoint) {
  remote::test_service service{"tcp://127.0.0.1:*", remote::latency_model::parse("fixed:2000000")};
  collected<std::string> out;
  remote::call_options o;
  o.timeout = std::chrono::milliseconds(100);
  BOOST_CHECK_EXCEPTION(run(calls(service.endpoint(), o, out, 3)), job_error, [&](const job_error& e) {
    return std::string{e.what()} == "job 'remote' failed: operator 'call' (instance 0 of 1) failed: "
                                    "no reply from " + service.endpoint() + " within 100 ms";
  });
}

BOOST_AUTO_TEST_CASE(latency_specs) {
  auto u = remote::latency_model::parse("uniform:10:20");
  BOOST_TEST((u.shape == remote::latency_model::kind::uniform));
  BOOST_TEST(u.a == 10.0);
  BOOST_TEST(u.b == 20.0);
  BOOST_TEST(remote::latency_model::parse("exp:500").a == 500.0);
  BOOST_CHECK_EXCEPTION(remote::latency_model::parse("uniform:20:10"), std::invalid_argument,
                        [](const std::invalid_argument& e) {
                          return std::string{e.what()} ==
                                 "latency 'uniform:20:10': expected fixed:US, uniform:LO:HI or "
                                 "exp:MEAN (microseconds)";
                        });
  BOOST_CHECK_THROW(remote::latency_model::parse("gauss:1"), std::invalid_argument);
  BOOST_CHECK_THROW(remote::latency_model::parse("fixed:x"), std::invalid_argument);
}
