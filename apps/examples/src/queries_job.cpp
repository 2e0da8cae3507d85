// example-queries: many queries (sinks) sharing operators, the setting of the heuristic
// replication paper's availability experiment (docs/replication.md, "Degraded mode"). Each source
// feeds one shared keyed window; each query reads one source's window results, keeps the sensors
// of its residue, counts them again in longer windows of its own and writes them to its sink.
#include "tidemark/examples/example_jobs.hpp"

#include "indexed_source.hpp"

#include <filesystem>
#include <string>

namespace tidemark::examples {

namespace {

struct sample {
  std::int64_t ts = 0;
  std::uint32_t sensor = 0;
  TIDEMARK_FIELDS(ts, sensor)  // samples cross nodes on the key shuffle
};

job build_queries(const job_options& o) {
  const auto sources = o.get_int("sources");
  const auto queries = o.get_int("queries");
  const auto events = o.get_int("events");
  const auto keys = o.get_int("keys");
  const auto window_ms = o.get_int("window-ms");
  const auto parallelism = o.get_int("parallelism");
  const auto rate = o.get_int("rate");
  if (sources < 1 || queries < 1 || events < 0 || keys < 1 || window_ms < 1 || parallelism < 1 ||
      rate < 0)
    throw job_error(
        "example-queries: --sources >= 1, --queries >= 1, --events >= 0, --keys >= 1, "
        "--window-ms >= 1, --parallelism >= 1 and --rate >= 0 are required");
  const auto out_dir = o.get("out-dir");
  if (!out_dir.empty()) std::filesystem::create_directories(out_dir);
  job j{"example-queries"};
  for (std::int64_t s = 0; s < sources; ++s) {
    const auto src = "src" + std::to_string(s);
    // a multiplicative hash spreads the samples over the sensors, differently per source
    auto make = [keys, s](std::int64_t i) {
      return sample{i, static_cast<std::uint32_t>(((i + s * 7919) * 2654435761u) % keys)};
    };
    auto shared = j.from_source<sample>(indexed<sample>(src, events, rate, make), src)
                      .assign_timestamps([](const sample& x) { return x.ts; },
                                         ascending_timestamps().every_events(256))
                      .key_by([](const sample& x) { return x.sensor; })
                      .window(tumbling{window_ms})
                      .aggregate(agg::count(), "win" + std::to_string(s))
                      .parallelism(static_cast<std::uint32_t>(parallelism))
                      .results();
    for (std::int64_t q = 0; q < queries; ++q) {
      const auto id = std::to_string(s) + "_" + std::to_string(q);
      // its own stages (filter, window, sink), so a query can lose its part alone
      auto mine =
          shared.rebalance()
              .filter([queries, q](const auto& r) { return r.key % queries == q; }, "f" + id)
              .parallelism(1)
              .key_by([](const auto& r) { return r.key; })
              .window(tumbling{4 * window_ms})
              .aggregate(agg::count(), "w" + id)
              .parallelism(1)
              .results()
              .rebalance();
      if (out_dir.empty())
        mine.count("q" + id);
      else
        mine.write_lines((std::filesystem::path{out_dir} / ("q" + id + ".txt")).string(), "q" + id);
    }
  }
  return j;
}

}  // namespace

void register_queries(job_registry& registry) {
  registry.add(
      {"example-queries",
       "many queries sharing operators: per source a shared keyed window, per query a "
       "filter, a window of its own and a sink (the availability experiment's job)",
       {{"sources", "3", "sources, each with one shared window operator"},
        {"queries", "7", "queries per source (each keeps the sensors of one residue)"},
        {"events", "100000", "samples per source, one per millisecond of event time"},
        {"keys", "60", "distinct sensors"},
        {"window-ms", "50", "the shared windows' length in event-time ms (queries: 4x)"},
        {"parallelism", "2", "instances of each shared window"},
        {"rate", "0", "samples per second per source (0: as fast as possible)"},
        {"out-dir", "",
         "folder for one file per query, qS_Q.txt (without it, results are only counted)"}},
       nullptr,
       build_queries,
       nullptr});
}

}  // namespace tidemark::examples
