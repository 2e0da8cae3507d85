// example-late-windows: sensor readings of which some arrive late, counted and summed per sensor in
// tumbling windows that accept late readings for a while and re-fire for each, with the window
// events in tiered state (memory and WiredTiger). Every result revision goes into a WiredTiger
// table, and/or into a chaos history (`--history`, what `tidemark chaos` checks). The readings are
// a function of their index, the watermarks follow every 64 readings, so the table of a run is the
// same in every run: the job exactly_once_embedded kills and resumes.
#include <cstdio>
#include <memory>

#include "indexed_source.hpp"
#include "tidemark/chaos/history.hpp"
#include "tidemark/core/tiered_window_store.hpp"
#include "tidemark/examples/example_jobs.hpp"
#include "tidemark/persistence/table_sink.hpp"

namespace tidemark::examples {
namespace {

struct late_reading {
  std::int64_t ts = 0;
  std::uint32_t sensor = 0;
  std::int64_t value = 0;
  TIDEMARK_FIELDS(ts, sensor, value)
};

/// Reading i: sensor by a multiplicative hash of i, value i mod 97, event time i ms; every 53rd
/// reading is 300 ms late (behind closed windows, within their allowed lateness), every 211th is
/// 3 s late (past it: it leaves on the late port).
late_reading reading_at(std::int64_t i, std::int64_t keys) {
  auto ts = i - (i % 211 == 0 ? 3000 : i % 53 == 0 ? 300 : 0);
  return {ts, static_cast<std::uint32_t>((i * 2654435761u) % keys), i % 97};
}

struct count_sum {
  std::int64_t count = 0;
  std::int64_t sum = 0;
  TIDEMARK_FIELDS(count, sum)
};

job build_late_windows(const job_options& o) {
  const auto events = o.get_int("events");
  const auto keys = o.get_int("keys");
  const auto rate = o.get_int("rate");
  const auto parallelism = o.get_int("parallelism");
  const auto table = o.get("table");
  const auto history = o.get("history");
  const auto history_mode = o.get("history-mode");
  if (events < 0 || keys < 1 || rate < 0 || parallelism < 1)
    throw job_error("example-late-windows: --events >= 0, --keys >= 1, --rate >= 0 and "
                    "--parallelism >= 1 are required");
  job j{"example-late-windows"};
  auto windows =
      j.from_source<late_reading>(indexed<late_reading>("readings", events, rate,
                                                        [keys](std::int64_t i) { return reading_at(i, keys); }),
                                  "readings")
          .assign_timestamps([](const late_reading& r) { return r.ts; },
                             bounded_out_of_orderness(20).every_events(64))
          .key_by([](const late_reading& r) { return r.sensor; }, "by_sensor")
          .window(tumbling{100})
          .allowed_lateness(1000)
          .state(tiered{/*memory_events=*/64, 0, /*block_events=*/32})
          .process(
              [](const std::uint32_t&, const window_id&, window_events<late_reading>& xs) {
                count_sum r;
                for (const auto& x : xs) {
                  ++r.count;
                  r.sum += x.value;
                }
                return r;
              },
              "windows")
          .parallelism(static_cast<std::uint32_t>(parallelism));
  windows.late().count("too_late");
  // one sink instance for the whole table: a cluster can pin it to a node (`pins: {results: n1}`)
  auto results = windows.results().rebalance().map([](const auto& r) { return r; }, "gather").parallelism(1);
  using result = window_result<std::uint32_t, count_sum>;
  auto value = [](const result& r) {
    return std::to_string(r.value.count) + " " + std::to_string(r.value.sum) + " " +
           to_string(r.timing) + (r.final ? " final" : "");
  };
  auto window_key = [](const result& r) {
    char key[48];
    std::snprintf(key, sizeof key, "%08u/%012lld", r.key, static_cast<long long>(r.window.start));
    return std::string{key};
  };
  if (table.empty() && history.empty()) results.count("results");
  if (!table.empty())
    persistence::write_table(
        results, table, "results",
        [window_key](const result& r) {
          char revision[16];
          std::snprintf(revision, sizeof revision, "/%04u", r.revision);
          return window_key(r) + revision;
        },
        value, "results");
  if (!history.empty()) {
    chaos::history_mode mode{};
    try {
      mode = chaos::parse_history_mode(history_mode);
    } catch (const std::invalid_argument& e) {
      throw job_error(std::string{"example-late-windows: --history-mode: "} + e.what());
    }
    chaos::record(results, history, window_key, [](const result& r) { return r.revision; }, value,
                  mode);
  }
  return j;
}

}  // namespace

void register_late_windows(job_registry& registry) {
  registry.add({"example-late-windows",
                "late readings in keyed tumbling windows with late re-firings and tiered state; "
                "every result revision into a WiredTiger table, exactly once with checkpoints",
                {{"events", "200000", "readings to generate"},
                 {"keys", "50", "distinct sensors"},
                 {"rate", "0", "readings per second (0: as fast as possible)"},
                 {"parallelism", "2", "instances of the window operator"},
                 {"table", "", "WiredTiger directory of the results table (without it and --history, results are only counted)"},
                 {"history", "", "directory of a chaos history of every committed result (see docs/fault-injection.md)"},
                 {"history-mode", "exactly-once", "how the history sink commits: exactly-once, or at-least-once (writes on arrival; a recovery repeats results)"}},
                nullptr,
                build_late_windows,
                nullptr});
}

}  // namespace tidemark::examples
