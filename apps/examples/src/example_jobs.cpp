// example-window-count: `events` readings spread over `keys` sensors, one every millisecond of
// event time, counted per sensor in tumbling windows. The set of result lines is deterministic, so
// any two runs (embedded or distributed, any parallelism) must agree once sorted.
#include "tidemark/examples/example_jobs.hpp"

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

/// `events` readings spread over `keys` sensors; with `rate` > 0, paced at that many per second
/// (a job that runs long enough to watch on the dashboard). Replayable: a checkpoint saves the
/// next reading; after a restore, pacing starts again from it.
class reading_source final : public source_logic {
 public:
  reading_source(std::int64_t events, std::int64_t keys, std::int64_t rate)
      : events_(events), keys_(keys), rate_(rate) {}

  bool pull(std::size_t max, emitter& out) override {
    auto until = std::min(events_, next_ + static_cast<std::int64_t>(max));
    if (rate_ > 0) {
      auto now = std::chrono::steady_clock::now();
      if (!started_) started_ = now;
      auto due = first_ + std::chrono::duration_cast<std::chrono::microseconds>(now - *started_).count() *
                              rate_ / 1'000'000;
      if (due <= next_) {
        // nothing due: wait a little instead of spinning, short enough to stay responsive
        std::this_thread::sleep_for(std::chrono::milliseconds{1});
        return true;
      }
      until = std::min(until, due);
    }
    auto b = std::make_unique<batch<reading>>();
    b->values.reserve(static_cast<std::size_t>(until - next_));
    for (; next_ < until; ++next_) {
      // a multiplicative hash spreads consecutive readings over the sensors unevenly
      auto sensor = static_cast<std::uint32_t>((next_ * 2654435761u) % keys_);
      b->values.push_back({next_, sensor});
    }
    if (!b->values.empty()) out.emit(std::move(b));
    return next_ < events_;
  }

  bool replayable() const override { return true; }
  void snapshot(state_writer& out) override { out.write(next_); }
  void restore(state_reader& in) override {
    in.read(next_);
    if (next_ < 0 || next_ > events_)
      throw job_error("readings: the checkpoint is at reading " + std::to_string(next_) + " of " +
                      std::to_string(events_) + " (restore it with the same --events)");
    first_ = next_;
    started_.reset();
  }

 private:
  std::int64_t events_;
  std::int64_t keys_;
  std::int64_t rate_;
  std::int64_t next_ = 0;
  std::int64_t first_ = 0;  // the reading pacing counts from
  std::optional<std::chrono::steady_clock::time_point> started_;
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
  auto counts = j.from_source<reading>(
                    [events, keys, rate](const instance_info&) {
                      return std::make_unique<reading_source>(events, keys, rate);
                    },
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
