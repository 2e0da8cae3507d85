// Benchmark `latency`: event-to-result latency and throughput against the input rate, for fixed
// batch sizes (1, 64, 4096, waiting up to the linger time) and adaptive batching (docs/guide.md,
// "Batching"), on two pipelines fed by a paced source: `keyed` (map -> filter -> key_by ->
// running sum per key -> sink: every event makes a result) and `window` (the window benchmark's
// pipeline: one punctuated watermark per window closes it), each run for a fixed wall time; and
// on the RIoTBench ETL application (its registered job at a given rate, with its own latency).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "support/bench_support.hpp"
#include "support/window_pipeline.hpp"
#include "tidemark/riot/apps/jobs.hpp"
#include "tidemark/riot/io/local_broker.hpp"
#include "tidemark/runtime/heap.hpp"
#include "tidemark/runtime/job_registry.hpp"
#include "tidemark/runtime/runtime.hpp"

using namespace tidemark;

namespace {

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// One input event of either pipeline, with two stamps (steady clock): `due_ns`, when it was to
/// enter at the run's rate, and `emit_ns`, when the source emitted it (read once per pull). They
/// differ when the source waits: for credit (the pipeline pushes back, the wait a user's events
/// would see), or to wake from its pacing sleep (late on a loaded machine). Unpaced runs stamp
/// both at emission.
struct event {
  std::uint32_t key;
  event_time t;
  std::int64_t value;
  std::uint64_t seq;
  std::int64_t due_ns;
  std::int64_t emit_ns;
};

constexpr std::uint32_t keys = bench::window_keys;

/// How the events of a run look: event `i` is `make(i, due, emitted)`.
struct event_shape {
  std::uint64_t events_per_window = 10'000;
  event make(std::uint64_t i, std::int64_t due_ns, std::int64_t emit_ns) const {
    return {static_cast<std::uint32_t>(i % keys),
            static_cast<event_time>(i * bench::window_size / events_per_window),
            static_cast<std::int64_t>(i), i, due_ns, emit_ns};
  }
};

/// What a run's source did: the events it emitted (read after the run).
struct source_log {
  std::uint64_t emitted = 0;
};

/// Emits events at `rate` per second (0: as fast as it is pulled) until `seconds` of wall time
/// passed since it opened: each pull emits the events due by now (at most `max`). With nothing
/// due the stage pulls again when the next event is due.
class paced_source final : public source_logic {
 public:
  paced_source(double rate, double seconds, event_shape shape, std::shared_ptr<source_log> log)
      : rate_(rate), seconds_(seconds), shape_(shape), log_(std::move(log)) {}

  void open() override {
    start_ = now_ns();
    end_ = start_ + static_cast<std::int64_t>(seconds_ * 1e9);
  }

  bool pull(std::size_t max, emitter& out) override {
    const auto now = now_ns();
    if (now >= end_) return false;
    auto b = std::make_unique<batch<event>>();
    auto& xs = b->values;
    if (rate_ <= 0) {
      xs.reserve(max);
      for (std::size_t k = 0; k < max; ++k) xs.push_back(shape_.make(next_++, now, now));
    } else {
      for (auto due = due_of(next_); xs.size() < max && due <= now; due = due_of(next_))
        xs.push_back(shape_.make(next_++, due, now));
    }
    log_->emitted = next_;
    if (!xs.empty()) out.emit(std::move(b));
    return true;
  }

  std::chrono::nanoseconds idle_for() const override {
    if (rate_ <= 0) return std::chrono::nanoseconds::zero();
    return std::chrono::nanoseconds{
        std::max<std::int64_t>(0, std::min(due_of(next_), end_) - now_ns())};
  }

 private:
  std::int64_t due_of(std::uint64_t i) const {
    return start_ + static_cast<std::int64_t>(static_cast<double>(i) * 1e9 / rate_);
  }

  double rate_;
  double seconds_;
  event_shape shape_;
  std::shared_ptr<source_log> log_;
  std::int64_t start_ = 0;
  std::int64_t end_ = 0;
  std::uint64_t next_ = 0;
};

/// A batching mode: a fixed batch size (sealed when full or after the 5 ms linger time), or
/// adaptive batching with the default batch size.
struct mode {
  std::string name;
  std::size_t batch_size;
  bool adaptive;
};

/// Latency samples of a run (ms): from the due time and from the emission (event's stamps).
struct latencies {
  std::vector<double> from_due;
  std::vector<double> from_emission;
  void add(std::int64_t now, std::int64_t due_ns, std::int64_t emit_ns) {
    from_due.push_back((now - due_ns) / 1e6);
    from_emission.push_back((now - emit_ns) / 1e6);
  }
};

struct measurement {
  double events_per_s = 0;
  double p50_ms = 0;  // from the due time
  double p99_ms = 0;
  double p50_from_emission_ms = 0;
  double p99_from_emission_ms = 0;
  std::size_t samples = 0;
  bool results_ok = false;
};

measurement of(double seconds, std::uint64_t events, const latencies& l, bool results_ok) {
  return {events / seconds,
          bench::percentile(l.from_due, 0.5),
          bench::percentile(l.from_due, 0.99),
          bench::percentile(l.from_emission, 0.5),
          bench::percentile(l.from_emission, 0.99),
          l.from_due.size(),
          results_ok};
}

run_options options_for(const mode& m) {
  run_options o;
  o.batch_size = m.batch_size;
  o.adaptive_batching = m.adaptive;
  return o;
}

/// Per event: the wall time from its due time (and from its emission) at the source to its
/// running sum at the sink, sampled every `stride` events.
measurement run_keyed(const mode& m, double rate, double seconds, std::uint64_t stride) {
  auto log = std::make_shared<source_log>();
  struct sink_state {
    std::uint64_t results = 0;
    std::int64_t checksum = 0;
    latencies sampled;
  };
  auto sink = std::make_shared<sink_state>();
  job j{"latency-keyed"};
  auto source = j.from_source<event>([=](const instance_info&) {
    return std::make_unique<paced_source>(rate, seconds, event_shape{}, log);
  }, "source");
  bench::doubled_even_keys<event>(std::move(source))
      .reduce([](event acc, const event& e) {
        acc.value += e.value;
        acc.seq = e.seq;
        acc.due_ns = e.due_ns;
        acc.emit_ns = e.emit_ns;
        return acc;
      }, "running_sum")
      .for_each([sink, stride](const event& e) {
        ++sink->results;
        sink->checksum += e.value;
        if (e.seq % stride == 0) sink->sampled.add(now_ns(), e.due_ns, e.emit_ns);
      }, "sink");
  auto r = run(j, options_for(m));
  // the reference: the same running sums in a plain loop over the events the source emitted
  std::vector<std::int64_t> sums(keys, 0);
  std::uint64_t results = 0;
  std::int64_t checksum = 0;
  for (std::uint64_t i = 0; i < log->emitted; ++i) {
    const auto k = i % keys;
    if (k % 2 != 0) continue;
    sums[k] += 2 * static_cast<std::int64_t>(i);
    checksum += sums[k];
    ++results;
  }
  return of(r.seconds, log->emitted, sink->sampled,
            sink->results == results && sink->checksum == checksum);
}

/// Per window: the wall time from the due time (and from the emission) of the event that closes
/// it (its punctuated watermark follows that event) to the window's first result at the sink.
measurement run_window(const mode& m, double rate, double seconds, event_shape shape) {
  auto log = std::make_shared<source_log>();
  // per window index: the event that closed it (written by the source stage)
  auto closed = std::make_shared<std::vector<event>>();
  struct sink_state {
    std::uint64_t results = 0;
    std::int64_t checksum = 0;
    std::vector<std::int64_t> first_result;  // per window index
  };
  auto sink = std::make_shared<sink_state>();
  job j{"latency-window"};
  auto source = j.from_source<event>([=](const instance_info&) {
    return std::make_unique<paced_source>(rate, seconds, shape, log);
  }, "source");
  auto windows = bench::window_sums_of(std::move(source), [closed](const event& e) {
    const auto w = static_cast<std::size_t>(e.t / bench::window_size);
    if (closed->size() <= w) closed->resize(w + 1, event{});
    if ((*closed)[w].emit_ns == 0) (*closed)[w] = e;
  });
  windows.results().for_each(
      [sink, last = event_time{-1}](const window_result<std::uint32_t, std::int64_t>& r) mutable {
        ++sink->results;
        sink->checksum += r.value;
        if (r.window.start == last) return;
        last = r.window.start;
        const auto w = static_cast<std::size_t>(r.window.end / bench::window_size);
        if (sink->first_result.size() <= w) sink->first_result.resize(w + 1, 0);
        sink->first_result[w] = now_ns();
      }, "sink");
  auto r = run(j, options_for(m));
  latencies per_window;
  // the last window closes at the end of the stream, not by a watermark from the source
  for (std::size_t w = 1; w < closed->size() && w < sink->first_result.size(); ++w)
    if (const auto& e = (*closed)[w]; e.emit_ns && sink->first_result[w])
      per_window.add(sink->first_result[w], e.due_ns, e.emit_ns);
  // the reference: one result per (window, even key) seen, summing the doubled values
  std::uint64_t results = 0;
  std::int64_t checksum = 0;
  std::vector<event_time> last_window(keys, -1);
  for (std::uint64_t i = 0; i < log->emitted; ++i) {
    const auto e = shape.make(i, 0, 0);
    if (e.key % 2 != 0) continue;
    const auto w = e.t / bench::window_size;
    if (last_window[e.key] != w) {
      last_window[e.key] = w;
      ++results;
    }
    checksum += 2 * e.value;
  }
  return of(r.seconds, log->emitted, per_window,
            sink->results == results && sink->checksum == checksum);
}

/// The RIoTBench ETL application (CITY, 3 copies of the sample sensors, as bench riot-apps) as its
/// registered job: its own latency, per message from the replay source emitting it to the MQTT
/// publish sink receiving its SenML record (docs/riot-apps.md). Every message must come out on
/// both outputs (the archive table and MQTT).
struct etl_bench {
  job_registry registry;
  riot::io::local_mosquitto broker;
  std::filesystem::path work = std::filesystem::temp_directory_path() / "tidemark-bench-latency";

  etl_bench() {
    riot::apps::register_jobs(registry);
    std::filesystem::remove_all(work);
  }
  ~etl_bench() { std::filesystem::remove_all(work); }

  measurement run(const mode& m, double rate, double seconds, std::uint64_t max_rate_messages) {
    const auto& spec = registry.find("riot-etl");
    const auto dir = work / "etl";
    std::vector<std::string> args{"--dataset", "city", "--scale", "3", "--broker", broker.address(),
                                  "--out", dir.string()};
    if (rate > 0)
      args.insert(args.end(), {"--rate", std::to_string(rate), "--messages",
                               std::to_string(static_cast<std::uint64_t>(rate * seconds))});
    else
      args.insert(args.end(), {"--speed", "1e12", "--messages", std::to_string(max_rate_messages)});
    run_registered(spec, parse_job_arguments(spec, args), options_for(m));
    auto r = nlohmann::json::parse(std::ifstream(dir / "report.json"));
    std::filesystem::remove_all(dir);
    const auto& mqtt = r["outputs"]["mqtt"];
    const std::uint64_t in = r["messages_in"];
    // paced: the rate the source kept; as fast as it goes: messages over the time to the last output
    const double eps = rate > 0 ? r["throughput_in"].get<double>() : r.value("throughput_end_to_end", 0.0);
    // the ETL measures from the emission only: both latencies are that one
    const double p50 = mqtt["latency_ms"]["p50"], p99 = mqtt["latency_ms"]["p99"];
    return {eps, p50, p99, p50, p99, mqtt["messages"],
            in > 0 && mqtt["messages"] == in && r["outputs"]["table"]["messages"] == in};
  }
};

int measure(int argc, char** argv) {
  CLI::App app{"latency against rate for fixed and adaptive batching"};
  std::string out = tidemark::bench::out_dir() + "/latency.json";
  std::vector<double> rates{1e3, 1e4, 1e5, 1e6, 1e7, 0};
  std::vector<std::string> pipelines{"keyed", "window", "etl"};
  std::vector<double> etl_rates{1e3, 1e4, 0};
  std::uint64_t etl_max_messages = 50'000;
  double seconds = 1.0;
  int repeats = 3;
  app.add_option("--out", out, "JSON report");
  app.add_option("--rates", rates, "input rates in events/s (0: as fast as the pipeline goes)")
      ->delimiter(',');
  app.add_option("--pipelines", pipelines, "keyed, window and/or etl")->delimiter(',');
  app.add_option("--etl-rates", etl_rates, "the ETL's input rates in messages/s (0: as fast as it goes)")
      ->delimiter(',');
  app.add_option("--etl-max-messages", etl_max_messages, "messages of the ETL's run as fast as it goes");
  app.add_option("--seconds", seconds, "wall time of each run");
  app.add_option("--repeats", repeats, "runs of each point (median and range reported)");
  CLI11_PARSE(app, argc, argv);

  const std::vector<mode> modes{{"batch 1", 1, false},
                                {"batch 64", 64, false},
                                {"batch 4096", 4096, false},
                                {"adaptive", run_options{}.batch_size, true}};
  const double load_before = bench::load_average();
  nlohmann::json doc{
      {"benchmark", "latency"},
      {"seconds_per_run", seconds},
      {"repeats", repeats},
      {"linger_ms", run_options{}.linger.count()},
      {"latency_definition",
       {{"keyed",
         "per event (sampled every rate x seconds / 100,000 events, every 256th at the maximum "
         "rate): wall time from the event's due time at the paced source (start + i / rate: when it "
         "was to enter, so a wait at the source for credit counts) to the sink receiving its running "
         "sum; *_from_emission_ms: from the start of the pull that emitted it. Unpaced runs: both "
         "from the emission"},
        {"window",
         "per window: the same two stamps of the event that closes the window (the first event of "
         "the next window; its punctuated watermark follows it) to the sink receiving the window's "
         "first result"},
        {"etl",
         "per message: the ETL's own latency (docs/riot-apps.md), wall time from the replay source "
         "emitting the message to the MQTT publish sink receiving its SenML record; from the "
         "emission only (p50_ms = p50_from_emission_ms), so a source slowed by backpressure shows "
         "in events_per_s and kept_up, not in the latency"}}},
      {"load_average_before", load_before}};
  bool all_ok = true;
  double worst_p99_at_1k = 0;
  double worst_ratio = 1e9;
  std::unique_ptr<etl_bench> etl;
  for (const auto& pipeline : pipelines) {
    if (pipeline == "etl") etl = std::make_unique<etl_bench>();
    nlohmann::json points = nlohmann::json::array();
    double adaptive_max = 0, best_fixed_max = 0, adaptive_p99_1k = -1, adaptive_p99_due_1k = -1;
    for (double rate : pipeline == "etl" ? etl_rates : rates) {
      for (const auto& m : modes) {
        std::vector<double> p50, p99, emitted_p50, emitted_p99, eps;
        std::uint64_t samples = 0;
        for (int rep = 0; rep < repeats; ++rep) {
          // ~100 windows per second at every rate; ~100 k latency samples per keyed run
          event_shape shape{rate > 0 ? std::max<std::uint64_t>(10, static_cast<std::uint64_t>(rate / 100))
                                     : 10'000};
          const auto stride =
              rate > 0 ? std::max<std::uint64_t>(1, static_cast<std::uint64_t>(rate * seconds / 1e5)) : 256;
          auto r = pipeline == "keyed"  ? run_keyed(m, rate, seconds, stride)
                   : pipeline == "etl" ? etl->run(m, rate, seconds, etl_max_messages)
                                       : run_window(m, rate, seconds, shape);
          if (!r.results_ok) {
            std::fprintf(stderr, "%s, %s, rate %g: results differ from the reference\n",
                         pipeline.c_str(), m.name.c_str(), rate);
            all_ok = false;
          }
          if (r.samples == 0) {
            std::fprintf(stderr, "%s, %s, rate %g: no latency sample\n", pipeline.c_str(),
                         m.name.c_str(), rate);
            return 1;
          }
          samples += r.samples;
          p50.push_back(r.p50_ms);
          p99.push_back(r.p99_ms);
          emitted_p50.push_back(r.p50_from_emission_ms);
          emitted_p99.push_back(r.p99_from_emission_ms);
          eps.push_back(r.events_per_s);
        }
        auto point = nlohmann::json{{"rate", rate},
                                    {"mode", m.name},
                                    {"batch_size", m.batch_size},
                                    {"adaptive", m.adaptive},
                                    {"p50_ms", bench::spread(p50)},
                                    {"p99_ms", bench::spread(p99)},
                                    {"p50_from_emission_ms", bench::spread(emitted_p50)},
                                    {"p99_from_emission_ms", bench::spread(emitted_p99)},
                                    {"events_per_s", bench::spread(eps)},
                                    {"samples", samples}};
        const double eps_median = point["events_per_s"]["median"];
        const double p99_median = point["p99_ms"]["median"];
        // a paced run kept up when it emitted its rate (within 5 %) over the run's wall time
        point["kept_up"] = rate <= 0 || eps_median >= 0.95 * rate;
        std::printf("%-6s %-10s rate %-9s p50 %8.3f ms  p99 %8.3f ms  %8.3f M events/s%s\n",
                    pipeline.c_str(), m.name.c_str(),
                    rate > 0 ? std::to_string(static_cast<long long>(rate)).c_str() : "max",
                    static_cast<double>(point["p50_ms"]["median"]), p99_median, eps_median / 1e6,
                    point["kept_up"] ? "" : "  (fell behind)");
        std::fflush(stdout);
        if (rate <= 0) {
          if (m.adaptive)
            adaptive_max = eps_median;
          else
            best_fixed_max = std::max(best_fixed_max, eps_median);
        }
        // the headline at 1 k/s is from the emission: nothing pushes back at that rate, and the
        // due time adds only how late the source's pacing sleep woke (the machine's load)
        if (rate == 1e3 && m.adaptive) {
          adaptive_p99_1k = point["p99_from_emission_ms"]["median"];
          adaptive_p99_due_1k = p99_median;
        }
        points.push_back(point);
      }
    }
    doc["pipelines"][pipeline] = points;
    if (adaptive_p99_1k >= 0) {
      doc["pipelines_summary"][pipeline]["adaptive_p99_ms_at_1k"] = adaptive_p99_1k;
      doc["pipelines_summary"][pipeline]["adaptive_p99_from_due_ms_at_1k"] = adaptive_p99_due_1k;
      worst_p99_at_1k = std::max(worst_p99_at_1k, adaptive_p99_1k);
    }
    if (best_fixed_max > 0) {
      doc["pipelines_summary"][pipeline]["adaptive_throughput_ratio"] = adaptive_max / best_fixed_max;
      worst_ratio = std::min(worst_ratio, adaptive_max / best_fixed_max);
    }
  }
  // the headline figures are the worse of the pipelines measured
  if (doc.contains("pipelines_summary")) {
    if (worst_p99_at_1k > 0) doc["adaptive_p99_ms_at_1k"] = worst_p99_at_1k;
    if (worst_ratio < 1e9) doc["adaptive_throughput_ratio"] = worst_ratio;
  }
  doc["results_checked"] = all_ok;
  doc["load_average_after"] = bench::load_average();
  doc["targets"] = {{"adaptive_p99_ms_at_1k", 1.0}, {"adaptive_throughput_ratio", 0.9}};
  doc["headline_definition"] =
      "adaptive_p99_ms_at_1k: the highest over the pipelines of adaptive batching's p99 from the "
      "emission at 1,000 events/s (median over the repeats; pipelines_summary also gives it from "
      "the due time); adaptive_throughput_ratio: the lowest over the pipelines of adaptive "
      "batching's events/s over the best fixed batch size's at the maximum rate (medians)";
  std::ofstream{out} << doc.dump(2) << '\n';
  std::printf("adaptive p99 at 1 k/s %.3f ms, adaptive / best fixed at the maximum rate %.2f; "
              "report %s\n",
              doc.value("adaptive_p99_ms_at_1k", -1.0), doc.value("adaptive_throughput_ratio", -1.0),
              out.c_str());
  return all_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  tidemark::tune_thread_cache(argv);  // the heap the `tidemark` tool runs its jobs with
  return tidemark::bench::guarded_main(measure, argc, argv);
}
