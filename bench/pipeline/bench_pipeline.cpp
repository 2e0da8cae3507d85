// Benchmark `pipeline`: N integer events through source -> map(x*2) -> filter(even key) ->
// key_by(1000 keys) -> per-key running sum -> count sink, parallelism 1 per operator, against
// the same computation as a plain single-threaded loop in the same process.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "support/bench_support.hpp"
#include "tidemark/runtime/runtime.hpp"

using namespace tidemark;

namespace {

struct event {
  std::uint32_t key;
  std::int64_t value;
};

struct measurement {
  double events_per_s;
  double seconds;
  std::uint64_t results;
  std::int64_t peak_live_batches;
  double cpu_seconds;  // user + system time of the whole process during the run
};

measurement run_pipeline(std::uint64_t events, std::size_t batch_size, std::uint32_t credit) {
  job j{"pipeline"};
  std::uint64_t i = 0;
  auto source = j.from_generator([i, events]() mutable -> std::optional<event> {
    if (i == events) return std::nullopt;
    auto e = event{static_cast<std::uint32_t>(i % 1000), static_cast<std::int64_t>(i)};
    ++i;
    return e;
  }, "source");
  auto results = bench::doubled_even_keys<event>(std::move(source))
                     .reduce([](event acc, const event& e) {
                       acc.value += e.value;
                       return acc;
                     }, "running_sum")
                     .count("count");
  run_options opts;
  opts.batch_size = batch_size;
  opts.credit = credit;
  const double cpu_before = bench::process_cpu_seconds();
  auto r = run(j, opts);
  const double cpu_seconds = bench::process_cpu_seconds() - cpu_before;
  if (results.value() != events / 2) {
    std::cerr << "wrong result count " << results.value() << '\n';
    std::exit(1);
  }
  return {events / r.seconds, r.seconds, results.value(), r.peak_live_batches, cpu_seconds};
}

measurement run_plain_loop(std::uint64_t events) {
  auto start = std::chrono::steady_clock::now();
  detail::flat_hash_map<std::uint32_t, std::int64_t> sums;
  std::hash<std::uint32_t> h;
  std::uint64_t count = 0;
  std::int64_t checksum = 0;
  for (std::uint64_t i = 0; i < events; ++i) {
    event e{static_cast<std::uint32_t>(i % 1000), static_cast<std::int64_t>(i)};
    e.value *= 2;
    if (e.key % 2 != 0) continue;
    auto& acc = sums.find_or_insert(detail::mix_hash(h(e.key)), e.key, [] { return 0; });
    acc += e.value;
    checksum += acc;
    ++count;
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (checksum == 42) std::puts("");  // keeps the loop's work observable
  return {events / seconds, seconds, count, 0, seconds};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pipeline benchmark"};
  std::string out = tidemark::bench::out_dir() + "/pipeline.json";
  std::uint64_t events = 20'000'000;
  std::uint64_t per_event_events = 2'000'000;
  std::size_t batch = run_options{}.batch_size;
  app.add_option("--out", out, "JSON report");
  app.add_option("--events", events, "events per run");
  app.add_option("--per-event-events", per_event_events, "events for the batch-size-1 run");
  app.add_option("--batch", batch, "default batch size");
  CLI11_PARSE(app, argc, argv);

  std::printf("plain loop, %llu events...\n", static_cast<unsigned long long>(events));
  auto plain = run_plain_loop(events);
  std::printf("  %.1f M events/s\n", plain.events_per_s / 1e6);

  nlohmann::json sweep = nlohmann::json::array();
  measurement main{};
  for (std::size_t b : {64ul, 256ul, 1024ul, 4096ul}) {
    std::printf("tidemark, batch %zu, %llu events...\n", b, static_cast<unsigned long long>(events));
    auto m = run_pipeline(events, b, run_options{}.credit);
    std::printf("  %.1f M events/s, %.2f ns CPU per event (peak %lld live batches)\n",
                m.events_per_s / 1e6, m.cpu_seconds * 1e9 / events,
                static_cast<long long>(m.peak_live_batches));
    sweep.push_back({{"batch_size", b},
                     {"events_per_s", m.events_per_s},
                     {"seconds", m.seconds},
                     {"cpu_ns_per_event", m.cpu_seconds * 1e9 / events}});
    if (b == batch) main = m;
  }
  if (main.seconds == 0) main = run_pipeline(events, batch, run_options{}.credit);
  std::printf("tidemark, batch 1, %llu events...\n", static_cast<unsigned long long>(per_event_events));
  auto single = run_pipeline(per_event_events, 1, run_options{}.credit);
  std::printf("  %.2f M events/s\n", single.events_per_s / 1e6);

  nlohmann::json doc{{"benchmark", "pipeline"},
                     {"events", events},
                     {"batch_size", batch},
                     {"events_per_s", main.events_per_s},
                     {"plain_loop_events_per_s", plain.events_per_s},
                     {"ratio", main.events_per_s / plain.events_per_s},
                     {"target_events_per_s", 100e6},
                     {"batch_sweep", sweep},
                     {"per_event",
                      {{"batch_size", 1},
                       {"events", per_event_events},
                       {"events_per_s", single.events_per_s},
                       {"ratio", single.events_per_s / plain.events_per_s}}}};
  std::ofstream{out} << doc.dump(2) << '\n';
  std::printf("tidemark %.1f M events/s = %.2f x the plain loop (%.1f M/s); report %s\n",
              main.events_per_s / 1e6, main.events_per_s / plain.events_per_s,
              plain.events_per_s / 1e6, out.c_str());
}
