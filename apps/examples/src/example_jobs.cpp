// example-window-count: `events` readings spread over `keys` sensors, one every millisecond of
// event time, counted per sensor in tumbling windows. The set of result lines is deterministic, so
// any two runs (embedded or distributed, any parallelism) must agree once sorted.
#include "tidemark/examples/example_jobs.hpp"

#include "indexed_source.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

namespace tidemark::examples {

namespace {

struct reading {
  std::int64_t ts = 0;
  std::uint32_t sensor = 0;
  TIDEMARK_FIELDS(ts, sensor)  // readings cross nodes on the key shuffle
};

/// With --arrivals: one line per result, the steady-clock time (ns) at which the gathering sink's
/// stage received it. The steady clock is the same in every process of a host, so a test or a
/// benchmark that kills a node can measure the pauses at the sink around the kill. The file is
/// opened on the first result, so only the process that runs the sink writes it.
class arrival_log {
 public:
  explicit arrival_log(std::string path) : path_(std::move(path)) {}
  ~arrival_log() {
    if (fd_ >= 0) ::close(fd_);
  }
  arrival_log(const arrival_log&) = delete;
  arrival_log& operator=(const arrival_log&) = delete;

  void stamp() {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count();
    char line[32];
    const auto n = std::snprintf(line, sizeof line, "%lld\n", static_cast<long long>(ns));
    std::lock_guard<std::mutex> guard{mutex_};
    if (fd_ < 0) fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    // one write per line: a reader polling the file sees whole lines as they arrive
    if (fd_ < 0 || ::write(fd_, line, static_cast<std::size_t>(n)) != n)
      throw job_error("example-window-count: cannot append to --arrivals '" + path_ +
                      "': " + std::strerror(errno));
  }

 private:
  std::string path_;
  std::mutex mutex_;
  int fd_ = -1;
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
  const auto arrivals = o.get("arrivals");
  if (!arrivals.empty() && !o.get_bool("gather"))
    throw job_error("example-window-count: --arrivals needs --gather true (one sink instance)");
  if (o.get_bool("gather")) {
    const auto delay = std::chrono::microseconds{o.get_int("sink-delay-us")};
    auto log = arrivals.empty() ? nullptr : std::make_shared<arrival_log>(arrivals);
    counts = counts.rebalance()
                 .map(
                     [delay, log](const auto& r) {
                       if (log) log->stamp();
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
  register_queries(registry);
  registry.add({"example-window-count",
                "keyed tumbling-window count over generated sensor readings",
                {{"events", "1000000", "readings to generate"},
                 {"keys", "100", "distinct sensors"},
                 {"window-ms", "1000", "tumbling window length in event-time ms"},
                 {"parallelism", "2", "instances of the window operator"},
                 {"rate", "0", "readings per second (0: as fast as possible)"},
                 {"gather", "false", "send every result to one sink instance"},
                 {"sink-delay-us", "0", "with gather: the sink waits this long per result"},
                 {"arrivals", "", "with gather: file for one line per result, the steady-clock time (ns) the sink received it"},
                 {"out", "", "file for one line per window result (without it, results are only counted)"}},
                nullptr,
                build_window_count,
                report_window_count});
}

}  // namespace tidemark::examples
