// example-window-count: `events` readings spread over `keys` sensors, one every millisecond of
// event time, counted per sensor in tumbling windows. The set of result lines is deterministic, so
// any two runs (embedded or distributed, any parallelism) must agree once sorted.
#include "tidemark/examples/example_jobs.hpp"

#include "indexed_source.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <map>
#include <memory>
#include <optional>

namespace tidemark::examples {

namespace {

struct reading {
  std::int64_t ts = 0;
  std::uint32_t sensor = 0;
  TIDEMARK_FIELDS(ts, sensor)  // readings cross nodes on the key shuffle
};

job build_window_count(const job_options& o) {
  const auto events = o.get_int("events");
  const auto keys = o.get_int("keys");
  const auto window_ms = o.get_int("window-ms");
  const auto parallelism = o.get_int("parallelism");
  const auto rate = o.get_int("rate");
  if (events < 0 || keys < 1 || window_ms < 1 || parallelism < 1 || rate < 0)
    throw job_error("example-window-count: --events >= 0, --keys >= 1, --window-ms >= 1, "
                    "--parallelism >= 1 and --rate >= 0 are required");
  job j{"example-window-count"};
  // a multiplicative hash spreads consecutive readings over the sensors unevenly
  auto counts = j.from_source<reading>(indexed<reading>("readings", events, rate,
                                                        [keys](std::int64_t i) {
                                                          return reading{i, static_cast<std::uint32_t>(
                                                                                (i * 2654435761u) % keys)};
                                                        }),
                                       "readings")
      .assign_timestamps([](const reading& r) { return r.ts; },
                         ascending_timestamps().every_events(1024))
      .key_by([](const reading& r) { return r.sensor; }, "by_sensor")
      .window(tumbling{window_ms})
      .aggregate(agg::count())
      .parallelism(static_cast<std::uint32_t>(parallelism))
      .results();
  // gather: every result to one sink instance (a cluster file can pin "counts" to one node)
  if (o.get_bool("gather")) {
    const auto delay = std::chrono::microseconds{o.get_int("sink-delay-us")};
    counts = counts.rebalance()
                 .map(
                     [delay](const auto& r) {
                       if (delay.count() > 0) std::this_thread::sleep_for(delay);
                       return r;
                     },
                     "gather")
                 .parallelism(1);
  }
  if (auto out = o.get("out"); out.empty())
    counts.count("counts");
  else
    counts.write_lines(out, "counts");
  return j;
}

void report_window_count(const job_options& o, const job_result& r) {
  std::uint64_t windows = 0;
  for (const auto& m : r.per_operator())
    if (m.name == "counts") windows = m.events_in;
  std::printf("%llu window results for %lld readings over %lld sensors in %.3f s\n",
              static_cast<unsigned long long>(windows), static_cast<long long>(o.get_int("events")),
              static_cast<long long>(o.get_int("keys")), r.seconds);
}

}  // namespace

void register_jobs(job_registry& registry) {
  register_late_windows(registry);
  registry.add({"example-window-count",
                "keyed tumbling-window count over generated sensor readings",
                {{"events", "1000000", "readings to generate"},
                 {"keys", "100", "distinct sensors"},
                 {"window-ms", "1000", "tumbling window length in event-time ms"},
                 {"parallelism", "2", "instances of the window operator"},
                 {"rate", "0", "readings per second (0: as fast as possible)"},
                 {"gather", "false", "send every result to one sink instance"},
                 {"sink-delay-us", "0", "with gather: the sink waits this long per result"},
                 {"out", "", "file for one line per window result (without it, results are only counted)"}},
                nullptr,
                build_window_count,
                report_window_count});
}

}  // namespace tidemark::examples
