// Polling to a deadline instead of a fixed sleep before an assertion (see the test rules):
// for conditions made true by another thread, e.g. a storage service's I/O thread.
// Include after <boost/test/unit_test.hpp>.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <thread>

namespace tidemark::test {

/// Returns once `f()` is true, asking every `every`; fails the test (BOOST_REQUIRE) with `what`
/// when it is not true within `timeout`.
template <class F>
void wait_until(F f, std::chrono::milliseconds timeout, const std::string& what,
                std::chrono::milliseconds every = std::chrono::milliseconds(1)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!f()) {
    BOOST_REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline, "timed out waiting: " + what);
    std::this_thread::sleep_for(every);
  }
}

/// Returns once `f()` is true; fails the test (BOOST_REQUIRE) when it is not within 10 s.
template <class F>
void wait_until(F f) {
  wait_until(std::move(f), std::chrono::seconds(10), "the condition");
}

}  // namespace tidemark::test
