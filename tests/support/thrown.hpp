// What a call throws, as text, so a test can assert on the message an error gives its user.
// Only the named exception type is caught: any other exception still fails the test.
#pragma once

#include <string>

namespace tidemark::test {

/// The what() of the `E` that `f()` throws, or "" when it throws none.
template <class E, class F>
std::string thrown(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

}  // namespace tidemark::test
