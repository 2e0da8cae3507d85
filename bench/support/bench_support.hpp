// What several benchmarks share, so that they measure the same thing the same way: the process's
// CPU time, the load average, percentiles, the spread of repeated runs, and the stateless map ->
// filter -> key_by prefix of the pipeline and window benchmarks (the same stages, so their numbers
// compare); and where a benchmark writes and what it runs.
#pragma once

#include <sys/resource.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tidemark::bench {

/// The build folder of this benchmark, which runs as BUILD/bench/NAME/bench_NAME. Found at run
/// time rather than compiled in, so no object file depends on the checkout's path and the compiler
/// cache serves every fresh clone.
inline std::filesystem::path build_dir() {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path().parent_path().parent_path();
}

/// Where a benchmark writes its JSON unless told otherwise: BUILD/bench (never the working folder).
inline std::string out_dir() { return (build_dir() / "bench").string(); }

/// The tidemark-node program of the same build, or TIDEMARK_NODE_BIN when that is set.
inline std::string node_binary() {
  const char* env = std::getenv("TIDEMARK_NODE_BIN");  // NOLINT(concurrency-mt-unsafe): at start
  return env && *env ? env : (build_dir() / "apps/tidemark/tidemark-node").string();
}

/// Runs a benchmark's `body(argc, argv)`; an exception it throws (a missing data file, a broker
/// that did not start) is printed and becomes exit status 1, so that the destructors of what the
/// benchmark started (a mosquitto, node processes) run instead of std::terminate skipping them.
template <class Body>
int guarded_main(Body body, int argc, char** argv) {
  try {
    return body(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", argc > 0 ? argv[0] : "bench", e.what());
    return 1;
  }
}

/// User + system CPU time of the whole process so far, in seconds.
inline double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

/// The 1-minute load average: other processes on this machine slow every wall-clock number.
inline double load_average() {
  double load = 0;
  std::ifstream{"/proc/loadavg"} >> load;
  return load;
}

/// The value at fraction `p` (0..1) of the sorted `xs` (nearest rank below); 0 when empty.
inline double percentile(std::vector<double> xs, double p) {
  if (xs.empty()) return 0;
  std::sort(xs.begin(), xs.end());
  return xs[static_cast<std::size_t>(p * static_cast<double>(xs.size() - 1))];
}

/// What a benchmark reports of a measurement it repeats (the machine is shared, so one run says
/// little): the median, the lowest and the highest of the runs' `xs`, and the runs themselves.
inline nlohmann::json spread(const std::vector<double>& xs) {
  return {{"median", percentile(xs, 0.5)},
          {"min", percentile(xs, 0)},
          {"max", percentile(xs, 1)},
          {"runs", xs}};
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
