// What the /metrics tests share: a job that runs until the test stops it (wall-clock event
// times, so the watermark lag shows), scraping an endpoint, reading samples, and a free port.
// Include after <boost/test/unit_test.hpp>.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include <httplib.h>

#include "tidemark/tidemark.hpp"

namespace tidemark::test {

inline std::int64_t wall_clock_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// "ticks" emits the wall-clock time about once per millisecond until `stop` is set; "stamped"
/// takes it as event time; in a second stage (which receives the watermarks the first passes on)
/// "copied" passes it on and "counted" counts.
inline job endless_job(const std::atomic<bool>& stop) {
  job j{"metrics-endless"};
  j.from_generator(
       [&stop]() -> std::optional<std::int64_t> {
         if (stop) return std::nullopt;
         std::this_thread::sleep_for(std::chrono::milliseconds{1});
         return wall_clock_ms();
       },
       "ticks")
      .assign_timestamps([](std::int64_t t) { return t; }, ascending_timestamps().every_ms(50),
                         "stamped")
      .rebalance()
      .map([](std::int64_t t) { return t; }, "copied")
      .count("counted");
  return j;
}

/// Sets `stop` when it goes out of scope: declared after the future of a run of endless_job, it
/// ends the run before the future waits for it, also when a check failed.
struct stop_at_exit {
  std::atomic<bool>& stop;
  ~stop_at_exit() { stop = true; }
};

/// GET http://127.0.0.1:PORT/metrics; fails the test when it does not answer 200 with the
/// exposition's content type.
inline std::string scrape(std::uint16_t port) {
  httplib::Client client{"127.0.0.1", port};
  client.set_read_timeout(5, 0);
  auto res = client.Get("/metrics");
  BOOST_REQUIRE_MESSAGE(res, "no answer from 127.0.0.1:" << port << "/metrics");
  BOOST_REQUIRE_EQUAL(res->status, 200);
  BOOST_TEST(res->get_header_value("Content-Type") == "text/plain; version=0.0.4; charset=utf-8");
  return res->body;
}

/// The sum of the samples of `family` whose labels contain `fragment` (e.g. `operator="ticks"`);
/// nullopt when there is none.
inline std::optional<double> sample(const std::string& text, const std::string& family,
                                    const std::string& fragment = "") {
  std::istringstream in{text};
  std::optional<double> sum;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(family + "{", 0) != 0 && line.rfind(family + " ", 0) != 0) continue;
    auto labels_end = line.rfind(' ');
    if (line.substr(0, labels_end).find(fragment) == std::string::npos) continue;
    sum = sum.value_or(0) + std::stod(line.substr(labels_end + 1));
  }
  return sum;
}

/// A TCP port on 127.0.0.1 that nothing listens on right now.
inline std::uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  BOOST_REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  BOOST_REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  BOOST_REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  ::close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace tidemark::test
