// sensor-window-count: reading i has event time i ms and comes from sensor i % keys; a keyed
// tumbling window counts the readings per sensor and window. With --out, each result is one line
// "<sensor> <window start> <count>", so a test can compare it with its own arithmetic.
#include "sensor_jobs.hpp"

#include <cstdio>
#include <optional>
#include <string>

#include "tidemark/tidemark.hpp"

namespace sensors {

namespace {

struct reading {
  std::int64_t ts = 0;
  std::uint32_t sensor = 0;
  TIDEMARK_FIELDS(ts, sensor)  // readings cross processes on the key shuffle of a cluster run
};

tidemark::job build(const tidemark::job_options& o) {
  const auto events = o.get_int("events");
  const auto keys = o.get_int("keys");
  const auto window_ms = o.get_int("window-ms");
  if (events < 0 || keys < 1 || window_ms < 1)
    throw tidemark::job_error("sensor-window-count: --events >= 0, --keys >= 1, --window-ms >= 1");
  tidemark::job j{"sensor-window-count"};
  std::int64_t next = 0;
  auto counts =
      j.from_generator(
           [next, events, keys]() mutable -> std::optional<reading> {
             if (next == events) return std::nullopt;
             auto sensor = static_cast<std::uint32_t>(next % keys);
             return reading{next++, sensor};
           },
           "readings")
          .assign_timestamps([](const reading& r) { return r.ts; },
                             tidemark::ascending_timestamps().every_events(1024))
          .key_by([](const reading& r) { return r.sensor; }, "by_sensor")
          .window(tidemark::tumbling{window_ms})
          .aggregate(tidemark::agg::count())
          .parallelism(static_cast<std::uint32_t>(o.get_int("parallelism")))
          .results();
  if (auto out = o.get("out"); out.empty())
    counts.count("counts");
  else
    counts.write_lines(
        out,
        [](const auto& r) {
          return std::to_string(r.key) + " " + std::to_string(r.window.start) + " " +
                 std::to_string(r.value);
        },
        "counts");
  return j;
}

void report(const tidemark::job_options& o, const tidemark::job_result& r) {
  for (const auto& m : r.per_operator())
    if (m.name == "counts")
      std::printf("sensor-window-count: %llu window results\n",
                  static_cast<unsigned long long>(m.events_in));
}

}  // namespace

void register_jobs(tidemark::job_registry& jobs) {
  jobs.add({"sensor-window-count",
            "readings of N sensors counted per sensor in tumbling event-time windows",
            {{"events", "100000", "readings to generate, one per ms of event time"},
             {"keys", "10", "sensors (reading i comes from sensor i % keys)"},
             {"window-ms", "1000", "tumbling window length in event-time ms"},
             {"parallelism", "2", "instances of the window operator"},
             {"out", "", "file for one line '<sensor> <window start> <count>' per result (none: only count)"}},
            nullptr,
            build,
            report});
}

}  // namespace sensors
