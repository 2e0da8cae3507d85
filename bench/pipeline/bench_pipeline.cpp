// Benchmark `pipeline`: N integer events through source -> map(x*2) -> filter(even key) ->
// key_by(1000 keys) -> per-key running sum -> count sink, parallelism 1 per operator, against
// the same computation as a plain single-threaded loop in the same process.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>

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
  std::uint64_t checksum;  // the sum of every running sum emitted, modulo 2^64
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
  auto results = std::make_shared<std::uint64_t>(0);
  auto checksum = std::make_shared<std::uint64_t>(0);
  bench::doubled_even_keys<event>(std::move(source))
      .reduce(
          [](event acc, const event& e) {
            acc.value += e.value;
            return acc;
          },
          "running_sum")
      .for_each(
          [results, checksum](const event& e) {
            ++*results;
            *checksum += static_cast<std::uint64_t>(e.value);
          },
          "sum");
  run_options opts;
  opts.batch_size = batch_size;
  opts.credit = credit;
  const double cpu_before = bench::process_cpu_seconds();
  auto r = run(j, opts);
  const double cpu_seconds = bench::process_cpu_seconds() - cpu_before;
  return {events / r.seconds, r.seconds, *results, *checksum, r.peak_live_batches, cpu_seconds};
}

measurement run_plain_loop(std::uint64_t events) {
  auto start = std::chrono::steady_clock::now();
  detail::flat_hash_map<std::uint32_t, std::int64_t> sums;
  std::hash<std::uint32_t> h;
  std::uint64_t count = 0;
  std::uint64_t checksum = 0;
  for (std::uint64_t i = 0; i < events; ++i) {
    event e{static_cast<std::uint32_t>(i % 1000), static_cast<std::int64_t>(i)};
    e.value *= 2;
    if (e.key % 2 != 0) continue;
    auto& acc = sums.find_or_insert(detail::mix_hash(h(e.key)), e.key, [] { return 0; });
    acc += e.value;
    checksum += static_cast<std::uint64_t>(acc);
    ++count;
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {events / seconds, seconds, count, checksum, 0, seconds};
}

/// `repeats` runs of the pipeline, each checked against the plain loop's `reference`: the same
/// number of results and the same sum of them. Exits with status 1 on a difference.
std::vector<measurement> checked_runs(int repeats, std::uint64_t events, std::size_t batch_size,
                                      const measurement& reference) {
  std::vector<measurement> runs;
  for (int r = 0; r < repeats; ++r) {
    runs.push_back(run_pipeline(events, batch_size, run_options{}.credit));
    const auto& m = runs.back();
    std::printf(
        "  batch %zu, run %d: %.2f M events/s, %.2f ns CPU per event (peak %lld live batches)\n",
        batch_size, r + 1, m.events_per_s / 1e6, m.cpu_seconds * 1e9 / events,
        static_cast<long long>(m.peak_live_batches));
    if (m.results != reference.results || m.checksum != reference.checksum) {
      std::fprintf(stderr,
                   "batch %zu: %llu results summing to %llu, the plain loop %llu summing to %llu\n",
                   batch_size, static_cast<unsigned long long>(m.results),
                   static_cast<unsigned long long>(m.checksum),
                   static_cast<unsigned long long>(reference.results),
                   static_cast<unsigned long long>(reference.checksum));
      std::exit(1);
    }
  }
  return runs;
}

/// The runs' events per second (median, range, all) and CPU nanoseconds per event (median).
nlohmann::json summary(const std::vector<measurement>& runs, std::uint64_t events) {
  std::vector<double> rates, cpu_ns;
  for (const auto& m : runs) {
    rates.push_back(m.events_per_s);
    cpu_ns.push_back(m.cpu_seconds * 1e9 / events);
  }
  const auto s = bench::spread(rates);
  return {{"events", events},
          {"events_per_s", s["median"]},
          {"events_per_s_spread", s},
          {"cpu_ns_per_event", bench::percentile(cpu_ns, 0.5)}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pipeline benchmark"};
  std::string out = tidemark::bench::out_dir() + "/pipeline.json";
  std::uint64_t events = 20'000'000;
  std::uint64_t per_event_events = 2'000'000;
  std::size_t batch = run_options{}.batch_size;
  int repeats = 3;
  app.add_option("--out", out, "JSON report");
  app.add_option("--events", events, "events per run");
  app.add_option("--per-event-events", per_event_events, "events for the batch-size-1 run");
  app.add_option("--batch", batch, "default batch size");
  app.add_option("--repeats", repeats, "runs of each point (the median and range are reported)")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  std::printf("plain loop, %llu events...\n", static_cast<unsigned long long>(events));
  std::vector<measurement> plain_runs;
  for (int r = 0; r < repeats; ++r) plain_runs.push_back(run_plain_loop(events));
  const auto plain = summary(plain_runs, events);
  const double plain_eps = plain["events_per_s"];
  std::printf("  %.1f M events/s (median)\n", plain_eps / 1e6);

  nlohmann::json sweep = nlohmann::json::array();
  std::vector<std::size_t> sizes{64, 256, 1024, 4096};
  if (std::find(sizes.begin(), sizes.end(), batch) == sizes.end()) sizes.push_back(batch);
  nlohmann::json main;
  for (std::size_t b : sizes) {
    std::printf("tidemark, batch %zu, %llu events...\n", b, static_cast<unsigned long long>(events));
    auto point = summary(checked_runs(repeats, events, b, plain_runs.front()), events);
    point["batch_size"] = b;
    sweep.push_back(point);
    if (b == batch) main = point;
  }
  std::printf("tidemark, batch 1, %llu events...\n", static_cast<unsigned long long>(per_event_events));
  auto single =
      summary(checked_runs(repeats, per_event_events, 1, run_plain_loop(per_event_events)),
              per_event_events);
  const double eps = main["events_per_s"], single_eps = single["events_per_s"];
  single["batch_size"] = 1;
  single["ratio"] = single_eps / plain_eps;

  nlohmann::json doc{
      {"benchmark", "pipeline"},
      {"events", events},
      {"repeats", repeats},
      {"results_checked", "every run's count and sum of results equal the plain loop's"},
      {"batch_size", batch},
      {"events_per_s", eps},
      {"events_per_s_spread", main["events_per_s_spread"]},
      {"plain_loop_events_per_s", plain_eps},
      {"plain_loop_events_per_s_spread", plain["events_per_s_spread"]},
      {"ratio", eps / plain_eps},
      {"target_events_per_s", 100e6},
      {"batch_sweep", sweep},
      {"per_event", single}};
  std::ofstream{out} << doc.dump(2) << '\n';
  std::printf(
      "tidemark %.1f M events/s = %.2f x the plain loop (%.1f M/s), medians of %d runs; report "
      "%s\n",
      eps / 1e6, eps / plain_eps, plain_eps / 1e6, repeats, out.c_str());
}
