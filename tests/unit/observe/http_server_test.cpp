// The observers' HTTP server: routes answer what their function renders at request time, with
// its content type; unknown paths get 404; bad and taken addresses are refused with the address
// named.
#define BOOST_TEST_MODULE observe http server
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <stdexcept>

#include <httplib.h>

#include "../../support/thrown.hpp"
#include "tidemark/observe/http_server.hpp"

using tidemark::observe::http_reply;
using tidemark::observe::http_server;

BOOST_AUTO_TEST_CASE(routes_render_at_request_time) {
  http_server server{"127.0.0.1:0"};
  std::atomic<int> calls{0};
  server.route("/count", [&] { return http_reply{std::to_string(++calls), "text/plain"}; });
  server.start();
  BOOST_TEST(server.port() > 0);

  httplib::Client client{"127.0.0.1", server.port()};
  for (int i = 1; i <= 3; ++i) {
    auto res = client.Get("/count");
    BOOST_REQUIRE(res);
    BOOST_TEST(res->status == 200);
    BOOST_TEST(res->body == std::to_string(i));
    BOOST_TEST(res->get_header_value("Content-Type") == "text/plain");
  }
  auto missing = client.Get("/nothing");
  BOOST_REQUIRE(missing);
  BOOST_TEST(missing->status == 404);
  BOOST_TEST(server.url() == "http://127.0.0.1:" + std::to_string(server.port()));
}

BOOST_AUTO_TEST_CASE(bad_or_taken_addresses_are_refused_by_name) {
  using tidemark::test::thrown;
  BOOST_TEST(thrown<std::runtime_error>([] { http_server s{"localhost"}; }).find("'localhost'") != std::string::npos);
  BOOST_TEST(thrown<std::runtime_error>([] { http_server s{"127.0.0.1:99999"}; }).find("0-65535") != std::string::npos);
  http_server first{"127.0.0.1:0"};
  auto taken = "127.0.0.1:" + std::to_string(first.port());
  BOOST_TEST(thrown<std::runtime_error>([&] { http_server s{taken}; }).find(taken) != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_server_destroyed_right_after_start_stops) {
  // httplib's stop() ignores a listen loop that has not started yet; start() waits for it, so
  // this loop ends instead of hanging in a join (the ctest timeout catches a hang)
  for (int i = 0; i < 200; ++i) {
    http_server server{"127.0.0.1:0"};
    server.start();
    BOOST_TEST(server.port() > 0);
  }
}
