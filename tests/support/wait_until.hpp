// Polling to a deadline instead of a fixed sleep before an assertion (see the test rules):
// for conditions made true by another thread, e.g. a storage service's I/O thread.
// Include after <boost/test/unit_test.hpp>.
#pragma once

#include <chrono>
#include <thread>

namespace tidemark::test {

/// Returns once `f()` is true; fails the test (BOOST_REQUIRE) when it is not within 10 s.
template <class F>
void wait_until(F f) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!f()) {
    BOOST_REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline, "timed out waiting");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace tidemark::test
