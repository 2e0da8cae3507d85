// Benchmark `window`: N events over 1000 keys, event time advancing so that each 1000-unit
// tumbling window holds 10,000 events, through source -> map(value*2) -> filter(even key) ->
// key_by -> tumbling event-time window sum -> counting sink (parallelism 1 per operator), against
// the same computation as a plain loop. Also measures the delay from the watermark that closes a
// window (generated at the source) to the window's first result at the sink. A second variant
// also reads the window's late output (late() beside results()), as jobs that keep late events do.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "support/bench_support.hpp"
#include "support/window_pipeline.hpp"
#include "tidemark/runtime/heap.hpp"
#include "tidemark/runtime/runtime.hpp"

using namespace tidemark;

namespace {

using bench::events_per_time_unit;
using bench::window_size;
using event = bench::window_event;
constexpr auto keys = bench::window_keys;
constexpr auto make_event = bench::make_window_event;

using clock_type = std::chrono::steady_clock;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now().time_since_epoch())
      .count();
}

/// Per window index: when the watermark closing it was generated, and when its first result
/// reached the sink (ns on the steady clock; 0 = not yet).
struct delay_log {
  explicit delay_log(std::size_t windows) : closed(windows + 1), first_result(windows + 1) {}
  std::vector<std::int64_t> closed;
  std::vector<std::int64_t> first_result;
};

struct measurement {
  double seconds = 0;
  double cpu_seconds = 0;
  std::uint64_t results = 0;
  std::int64_t checksum = 0;
  std::vector<double> delays_ms;
};

/// `read_late`: the late output is read too (by a counting sink; the ascending stream has none).
measurement run_pipeline(std::uint64_t events, std::size_t batch_size, std::uint32_t credit,
                         bool read_late) {
  const auto windows = static_cast<std::size_t>(events / events_per_time_unit / window_size) + 1;
  auto log = std::make_shared<delay_log>(windows);
  auto results = std::make_shared<std::uint64_t>(0);
  auto checksum = std::make_shared<std::int64_t>(0);
  job j{"window"};
  auto windows_out = bench::window_sums(j, events, [log](std::size_t window) {
    auto& closed = log->closed[window];
    if (closed == 0) closed = now_ns();
  });
  if (read_late) windows_out.late().count("late");
  windows_out.results().for_each([log, results, checksum, last = event_time{-1}](
                    const window_result<std::uint32_t, std::int64_t>& r) mutable {
        ++*results;
        *checksum += r.value;
        if (r.window.start != last) {
          last = r.window.start;
          auto& first = log->first_result[static_cast<std::size_t>(r.window.end / window_size)];
          if (first == 0) first = now_ns();
        }
      }, "count");
  run_options opts;
  opts.batch_size = batch_size;
  opts.credit = credit;
  const auto cpu_before = bench::process_cpu_seconds();
  auto r = run(j, opts);
  measurement m;
  m.seconds = r.seconds;
  m.cpu_seconds = bench::process_cpu_seconds() - cpu_before;
  m.results = *results;
  m.checksum = *checksum;
  // The last window closes at the end of the stream, not by a watermark from the source.
  for (std::size_t w = 1; w + 1 < windows; ++w)
    if (log->closed[w] && log->first_result[w])
      m.delays_ms.push_back((log->first_result[w] - log->closed[w]) / 1e6);
  return m;
}

measurement run_plain_loop(std::uint64_t events) {
  struct pane {
    std::int64_t sum = 0;
    event_time window = -1;
  };
  auto start = clock_type::now();
  const auto cpu_before = bench::process_cpu_seconds();
  detail::flat_hash_map<std::uint32_t, pane> panes;
  std::hash<std::uint32_t> h;
  measurement m;
  std::vector<std::uint32_t> open;  // the keys of the current window
  event_time window = 0;
  auto close = [&] {
    for (auto k : open) {
      m.checksum += panes.find(detail::mix_hash(h(k)), k)->sum;
      ++m.results;
    }
    open.clear();
  };
  for (std::uint64_t i = 0; i < events; ++i) {
    auto e = make_event(i);
    e.value *= 2;
    if (e.key % 2 != 0) continue;
    if (e.t / window_size != window) {
      close();
      window = e.t / window_size;
    }
    auto& p = panes.find_or_insert(detail::mix_hash(h(e.key)), e.key, [] { return pane{}; });
    if (p.window != window) {  // first event of the key in this window
      p = pane{0, window};
      open.push_back(e.key);
    }
    p.sum += e.value;
  }
  close();
  m.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  m.cpu_seconds = bench::process_cpu_seconds() - cpu_before;
  return m;
}

/// The pipeline's result matches the plain loop's (count and sum); prints what differs otherwise.
bool matches(const measurement& m, const measurement& reference) {
  if (m.results == reference.results && m.checksum == reference.checksum) return true;
  std::fprintf(stderr,
               "results differ from the plain loop: %llu results (checksum %lld), expected %llu "
               "(%lld)\n",
               static_cast<unsigned long long>(m.results), static_cast<long long>(m.checksum),
               static_cast<unsigned long long>(reference.results),
               static_cast<long long>(reference.checksum));
  return false;
}

/// Events per second of each of `runs`, of `events` each: median, lowest, highest and all.
nlohmann::json rate_spread(std::uint64_t events, const std::vector<measurement>& runs) {
  std::vector<double> rates;
  for (const auto& m : runs) rates.push_back(events / m.seconds);
  return bench::spread(rates);
}

}  // namespace

int main(int argc, char** argv) {
  tidemark::tune_thread_cache(argv);  // the heap the `tidemark` tool runs its jobs with
  CLI::App app{"event-time window benchmark"};
  std::string out = tidemark::bench::out_dir() + "/window.json";
  std::uint64_t events = 20'000'000;
  std::size_t batch = run_options{}.batch_size;
  int repeats = 3;
  std::uint32_t credit = run_options{}.credit;
  bool sweep = true;
  std::uint64_t batch1_events = 2'000'000;
  app.add_option("--out", out, "JSON report");
  app.add_option("--events", events, "events per run");
  app.add_option("--batch", batch, "batch size");
  app.add_option("--credit", credit,
                 "credit per channel in batches (0, the default: 32,768 elements' worth)");
  app.add_option("--repeats", repeats, "runs of each variant (the median is reported)");
  app.add_flag("!--no-sweep", sweep, "skip the batch sweep (batch 1, 64, 1024, 4096)");
  app.add_option("--sweep-batch1-events", batch1_events,
                 "events per run at batch 1 in the sweep (at most --events)");
  CLI11_PARSE(app, argc, argv);

  const double load_before = bench::load_average();
  std::vector<measurement> plain;
  std::vector<measurement> tidemark_runs;
  std::vector<measurement> with_late_runs;  // results() and late() both read
  for (int r = 0; r < repeats; ++r) {
    plain.push_back(run_plain_loop(events));
    std::printf("plain loop: %.1f M events/s\n", events / plain.back().seconds / 1e6);
    for (bool read_late : {false, true}) {
      auto& runs = read_late ? with_late_runs : tidemark_runs;
      runs.push_back(run_pipeline(events, batch, credit, read_late));
      const auto& m = runs.back();
      std::printf("tidemark%s %.1f M events/s (%.2f s CPU for %.2f s), %llu results\n",
                  read_late ? " (results+late):" : ":              ", events / m.seconds / 1e6,
                  m.cpu_seconds, m.seconds, static_cast<unsigned long long>(m.results));
      if (!matches(m, plain.back())) return 1;
    }
  }
  // The sweep: results only, `repeats` runs per batch size, checked against the plain loop.
  nlohmann::json batch_sweep = nlohmann::json::array();
  if (sweep)
    for (std::size_t size : {1, 64, 1024, 4096}) {
      const auto n = size == 1 ? std::min(events, batch1_events) : events;
      const auto reference = run_plain_loop(n);
      std::vector<measurement> runs;
      for (int r = 0; r < repeats; ++r) {
        runs.push_back(run_pipeline(n, size, credit, false));
        std::printf("batch %zu: %.2f M events/s\n", size, n / runs.back().seconds / 1e6);
        if (!matches(runs.back(), reference)) return 1;
      }
      const auto rates = rate_spread(n, runs);
      nlohmann::json entry{{"events_per_s", rates["median"]}, {"events_per_s_spread", rates}};
      entry["batch_size"] = size;
      entry["events"] = n;
      run_options o;
      o.batch_size = size;
      o.credit = credit;
      entry["credit"] = o.channel_credit();
      batch_sweep.push_back(entry);
    }
  const auto rates = rate_spread(events, tidemark_runs);
  const auto plain_rates = rate_spread(events, plain);
  auto by_time = [](const measurement& a, const measurement& b) { return a.seconds < b.seconds; };
  std::sort(plain.begin(), plain.end(), by_time);
  std::sort(tidemark_runs.begin(), tidemark_runs.end(), by_time);
  std::sort(with_late_runs.begin(), with_late_runs.end(), by_time);
  const auto& p = plain[plain.size() / 2];
  const auto& t = tidemark_runs[tidemark_runs.size() / 2];
  const double with_late_eps = events / with_late_runs[with_late_runs.size() / 2].seconds;
  const double eps = events / t.seconds;
  const double plain_eps = events / p.seconds;
  nlohmann::json doc{{"benchmark", "window"},
                     {"events", events},
                     {"keys", keys},
                     {"window_size", window_size},
                     {"events_per_window", events_per_time_unit * window_size},
                     {"batch_size", batch},
                     {"credit", credit},
                     {"repeats", repeats},
                     {"results", t.results},
                     {"events_per_s", eps},
                     {"events_per_s_spread", rates},
                     {"plain_loop_events_per_s", plain_eps},
                     {"plain_loop_events_per_s_spread", plain_rates},
                     {"ratio", eps / plain_eps},
                     {"with_late_output_events_per_s", with_late_eps},
                     {"watermark_to_result_ms",
                      {{"p50", bench::percentile(t.delays_ms, 0.5)},
                       {"p99", bench::percentile(t.delays_ms, 0.99)},
                       {"max", bench::percentile(t.delays_ms, 1.0)},
                       {"windows", t.delays_ms.size()}}},
                     {"cpu_seconds", t.cpu_seconds},
                     {"plain_loop_cpu_seconds", p.cpu_seconds},
                     {"events_per_cpu_s", events / t.cpu_seconds},
                     {"batch_sweep", batch_sweep},
                     {"load_average_before", load_before},
                     {"load_average_after", bench::load_average()},
                     {"target_events_per_s", 100e6}};
  std::ofstream{out} << doc.dump(2) << '\n';
  std::printf("tidemark %.1f M events/s = %.2f x the plain loop (%.1f M/s); with the late output "
              "read %.1f M events/s; watermark to result p50 %.3f ms, p99 %.3f ms; report %s\n",
              eps / 1e6, eps / plain_eps, plain_eps / 1e6, with_late_eps / 1e6,
              bench::percentile(t.delays_ms, 0.5), bench::percentile(t.delays_ms, 0.99), out.c_str());
}
