// What several benchmarks share, so that they measure the same thing the same way: the process's
// CPU time, and the stateless map -> filter -> key_by prefix of the pipeline and window benchmarks
// (the same stages, so their numbers compare).
#pragma once

#include <sys/resource.h>

namespace tidemark::bench {

/// User + system CPU time of the whole process so far, in seconds.
inline double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

/// `s` with every event's `value` doubled, only events with an even `key`, keyed by `key`.
template <class Event, class Stream>
auto doubled_even_keys(Stream s) {
  return s
      .map([](Event e) {
        e.value *= 2;
        return e;
      }, "double")
      .filter([](const Event& e) { return e.key % 2 == 0; }, "even_keys")
      .key_by([](const Event& e) { return e.key; }, "by_key");
}

}  // namespace tidemark::bench
