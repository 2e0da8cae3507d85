// Benchmark `checkpoint`: what 1 s checkpoints cost and what recovery takes (issue 15).
// 1. Throughput with checkpoints over throughput without, measured in pairs in alternating order,
//    for the window benchmark's pipeline and for aion-average (memory and tiered state);
//    checkpoint durations, alignment and bytes from job_result::checkpoints of the checkpointed
//    runs.
// 2. Recovery: this executable, forked as a child (`--child`), runs a job with ~100 MB of window
//    state and an exactly-once table sink; it is killed with SIGKILL after a checkpoint of that
//    size, resumed, and its table compared with the table of a run without faults.
// 3. Backpressure: a fast source in front of a slow map, checkpoints every 200 ms, aligned and
//    unaligned: how long a checkpoint takes when its barriers cross full channels.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "support/bench_support.hpp"
#include "support/window_pipeline.hpp"
#include "tidemark/aion/workloads.hpp"
#include "tidemark/core/log.hpp"
#include "tidemark/core/state.hpp"
#include "tidemark/persistence/table_sink.hpp"
#include "tidemark/persistence/table_store.hpp"
#include "tidemark/runtime/job_registry.hpp"
#include "tidemark/runtime/runtime.hpp"

extern char** environ;

using namespace tidemark;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

/// Steady clock (CLOCK_MONOTONIC, the same in every process) in ns.
std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

json checkpoints_json(const job_result& r) {
  json out = json::array();
  for (const auto& c : r.checkpoints)
    out.push_back({{"id", c.id}, {"duration_ms", c.duration_ms}, {"alignment_ms", c.alignment_ms},
                   {"bytes", c.bytes}, {"pieces", c.pieces}});
  return out;
}

/// A fresh, empty directory `name` under `root`.
std::string fresh_dir(const fs::path& root, const std::string& name) {
  fs::remove_all(root / name);
  fs::create_directories(root);
  return root / name;
}

// ---- 1. throughput with and without checkpoints ----

struct throughput_run {
  double events_per_s = 0;
  job_result result;
};

run_options with_checkpoints(const std::string& dir, std::chrono::milliseconds interval) {
  run_options opts;
  opts.checkpoints.dir = dir;
  opts.checkpoints.interval = interval;
  return opts;
}

/// The window benchmark's pipeline into a counting sink; `dir` empty: no checkpoints.
throughput_run run_window(std::uint64_t events, const std::string& dir, std::chrono::milliseconds interval) {
  job j{"window"};
  auto results = std::make_shared<std::uint64_t>(0);
  bench::window_sums(j, events, [](std::size_t) {}).results().for_each(
      [results](const window_result<std::uint32_t, std::int64_t>&) { ++*results; }, "count");
  auto r = run(j, dir.empty() ? run_options{} : with_checkpoints(dir, interval));
  return {events / r.seconds, std::move(r)};
}

/// aion-average as fast as possible, its window state in `state` (memory, or tiered: expired
/// windows on disk, so a checkpoint reads p-buckets back); `dir` empty: no checkpoints.
throughput_run run_aion(const char* state, std::uint64_t events, const std::string& dir,
                        std::chrono::milliseconds interval) {
  job_registry registry;
  aion::register_jobs(registry);
  const auto& spec = registry.find("aion-average");
  auto o = spec.make_options();
  o.set("events", std::to_string(events));
  o.set("state", state);
  auto r = run_registered(spec, o, dir.empty() ? run_options{} : with_checkpoints(dir, interval));
  return {events / r.seconds, std::move(r)};
}

/// p50 and p99 of the durations, p99 of the alignments, median and max of the bytes.
json checkpoint_stats(const std::vector<checkpoint_metrics>& cs) {
  std::vector<double> durations, alignments, bytes;
  for (const auto& c : cs) {
    durations.push_back(c.duration_ms);
    alignments.push_back(c.alignment_ms);
    bytes.push_back(static_cast<double>(c.bytes));
  }
  return {{"count", cs.size()},
          {"p50_ms", bench::percentile(durations, 0.5)},
          {"p99_ms", bench::percentile(durations, 0.99)},
          {"alignment_p99_ms", bench::percentile(alignments, 0.99)},
          {"bytes_median", bench::percentile(bytes, 0.5)},
          {"bytes_max", bench::percentile(bytes, 1.0)}};
}

/// Pairs of runs, with checkpoints and without, alternating which goes first, and the
/// checkpoints of the checkpointed runs.
template <class Run>
json throughput_pairs(const char* name, int pairs, std::uint64_t events, const fs::path& work,
                      std::chrono::milliseconds interval, Run run_one) {
  std::vector<checkpoint_metrics> checkpoints;
  json runs = json::array();
  std::vector<double> ratios;
  for (int p = 0; p < pairs; ++p) {
    double with = 0, without = 0;
    std::size_t completed = 0;
    for (int k = 0; k < 2; ++k) {
      const bool checkpointed = (k == 0) == (p % 2 == 0);
      auto r = run_one(events, checkpointed ? fresh_dir(work, "throughput") : std::string{}, interval);
      (checkpointed ? with : without) = r.events_per_s;
      if (checkpointed) {
        completed = r.result.checkpoints.size();
        checkpoints.insert(checkpoints.end(), r.result.checkpoints.begin(), r.result.checkpoints.end());
      }
      std::printf("%s pair %d: %s checkpoints %.2f M events/s in %.1f s%s\n", name, p + 1,
                  checkpointed ? "with   " : "without", r.events_per_s / 1e6, r.result.seconds,
                  checkpointed ? (" (" + std::to_string(r.result.checkpoints.size()) + " checkpoints)").c_str() : "");
      std::fflush(stdout);
    }
    ratios.push_back(with / without);
    runs.push_back({{"with_checkpoints_events_per_s", with}, {"without_events_per_s", without},
                    {"ratio", with / without}, {"checkpoints_completed", completed},
                    {"checkpointed_first", p % 2 == 0}});
  }
  json durations = json::array();
  for (const auto& c : checkpoints)
    durations.push_back({{"duration_ms", c.duration_ms}, {"alignment_ms", c.alignment_ms}, {"bytes", c.bytes}});
  return {{"events", events}, {"ratio_median", bench::percentile(ratios, 0.5)}, {"pairs", runs},
          {"checkpoints", checkpoint_stats(checkpoints)}, {"checkpoint_list", durations}};
}

// ---- 2. recovery: the child job ----

struct reading {
  std::uint32_t key = 0;
  event_time t = 0;
  std::int64_t value = 0;
  TIDEMARK_FIELDS(key, t, value)
};

struct child_config {
  std::uint64_t events = 0;
  std::uint32_t keys = 0;
  std::uint64_t rate = 0;     // events per second of event time; paced at it when `paced`
  event_time lateness = 0;    // ms a closed window's events stay in state
  bool paced = false;
  std::string table;
  std::string checkpoint_dir;  // empty: no checkpoints
  std::chrono::milliseconds interval{1000};
  std::int64_t epoch_ns = 0;  // steady clock when the first attempt started (pacing)
};

/// Reading i: key i mod keys, value i mod 1000, event time i / rate s (ms), whatever the pace;
/// paced, it is due i / rate s after `epoch_ns`.
/// Keyed 100 ms tumbling windows whose events are kept `lateness` ms after they close (allowed
/// lateness): that is the window state. Every result goes into a table, exactly once. Prints
/// "r NS N" (steady clock, results so far) on its first result and then every >= 20 ms.
int run_child(const child_config& c) {
  std::printf("s %lld\n", static_cast<long long>(now_ns()));  // the process runs
  std::fflush(stdout);
  set_log_level("debug");  // stderr reports each completed checkpoint with its bytes
  job j{"recovery"};
  const auto rate = c.rate;
  const bool paced = c.paced;
  std::uint64_t i = 0;
  auto source = j.from_generator(
      [i, c, rate, paced]() mutable -> std::optional<reading> {
        if (i == c.events) return std::nullopt;
        // reading i is due i / rate s after the first attempt started: a resumed attempt emits
        // its backlog at once, as a broker that kept the readings would
        if (paced && !replaying_generator()) {
          const auto due = c.epoch_ns + static_cast<std::int64_t>(static_cast<double>(i) * 1e9 / rate);
          if (now_ns() < due) std::this_thread::sleep_for(std::chrono::microseconds{500});
        }
        reading r{static_cast<std::uint32_t>(i % c.keys), static_cast<event_time>(i * 1000 / rate),
                  static_cast<std::int64_t>(i % 1000)};
        ++i;
        return r;
      },
      "readings");
  struct count_sum {
    std::int64_t count = 0;
    std::int64_t sum = 0;
    TIDEMARK_FIELDS(count, sum)
  };
  auto windows = source.assign_timestamps([](const reading& r) { return r.t; },
                                          bounded_out_of_orderness(0).every_events(1024))
                     .key_by([](const reading& r) { return r.key; }, "by_key")
                     .window(tumbling{100})
                     .allowed_lateness(c.lateness)
                     .process([](const std::uint32_t&, const window_id&, window_events<reading>& xs) {
                       count_sum s;
                       for (const auto& x : xs) {
                         ++s.count;
                         s.sum += x.value;
                       }
                       return s;
                     }, "windows");
  using result = window_result<std::uint32_t, count_sum>;
  auto marked = windows.results().map(
      [n = std::uint64_t{0}, last = std::int64_t{0}](const result& r) mutable {
        ++n;
        const auto t = now_ns();
        if (n == 1 || t - last >= 20'000'000) {
          std::printf("r %lld %llu\n", static_cast<long long>(t), static_cast<unsigned long long>(n));
          std::fflush(stdout);
          last = t;
        }
        return r;
      },
      "mark");
  persistence::write_table(
      marked, c.table, "results",
      [](const result& r) {
        char key[48];
        std::snprintf(key, sizeof key, "%08u/%012lld/%04u", r.key, static_cast<long long>(r.window.start),
                      r.revision);
        return std::string{key};
      },
      [](const result& r) { return std::to_string(r.value.count) + " " + std::to_string(r.value.sum); },
      "results");
  run_options opts;
  if (!c.checkpoint_dir.empty()) {
    opts = with_checkpoints(c.checkpoint_dir, c.interval);
    opts.checkpoints.resume = true;
  }
  auto r = run(j, opts);
  std::printf("done %s\n", json{{"seconds", r.seconds}, {"restored_from", r.restored_from},
                                {"checkpoints", checkpoints_json(r)}}.dump().c_str());
  return 0;
}

// ---- 2. recovery: the parent ----

std::string read_text(const std::string& path) {
  std::ifstream in{path};
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Starts this executable as a child with `args`; stdout and stderr into files.
pid_t spawn_self(const std::string& self, std::vector<std::string> args, const std::string& out,
                 const std::string& err) {
  args.insert(args.begin(), self);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&files, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, self.c_str(), &files, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  if (rc != 0) throw std::runtime_error("cannot start " + self);
  return pid;
}

void wait_success(pid_t pid, const std::string& err) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("the recovery job failed: " + read_text(err));
}

/// The "r NS N" lines of a child's stdout, as (ns, results so far).
std::vector<std::pair<std::int64_t, std::uint64_t>> result_marks(const std::string& out) {
  std::vector<std::pair<std::int64_t, std::uint64_t>> marks;
  std::istringstream in{read_text(out)};
  for (std::string line; std::getline(in, line);) {
    long long t = 0;
    unsigned long long n = 0;
    if (std::sscanf(line.c_str(), "r %lld %llu", &t, &n) == 2) marks.emplace_back(t, n);
  }
  return marks;
}

json child_report(const std::string& out) {
  const auto text = read_text(out);
  const auto at = text.rfind("done ");
  if (at == std::string::npos) throw std::runtime_error("the recovery job printed no report");
  return json::parse(text.substr(at + 5, text.find('\n', at) - at - 5));
}

/// Bytes of each checkpoint the debug log of a child reports complete, in order.
std::vector<std::uint64_t> completed_checkpoint_bytes(const std::string& err) {
  std::vector<std::uint64_t> bytes;
  std::istringstream in{read_text(err)};
  for (std::string line; std::getline(in, line);) {
    auto at = line.find(" complete: ");
    if (at == std::string::npos) continue;
    auto comma = line.find(", ", at);
    if (comma != std::string::npos) bytes.push_back(std::stoull(line.substr(comma + 2)));
  }
  return bytes;
}

std::map<std::string, std::string> table_rows(const std::string& dir) {
  auto db = persistence::wt_connection::open(dir, "log=(enabled=true)");
  persistence::table_store t{db, "results", persistence::durability::power_loss};
  std::map<std::string, std::string> rows;
  t.scan({}, std::nullopt, [&](std::string_view k, std::string_view v) {
    rows.emplace(std::string{k}, std::string{v});
    return true;
  });
  return rows;
}

struct recovery_config {
  std::uint64_t events = 0;
  std::uint32_t keys = 0;
  std::uint64_t rate = 0;
  event_time lateness = 0;
  std::uint64_t state_bytes = 0;  // kill after a checkpoint at least this large
  std::chrono::milliseconds kill_delay{500};
  std::chrono::milliseconds interval{1000};
};

json measure_recovery(const std::string& self, const recovery_config& rc, const fs::path& work) {
  fs::remove_all(work);
  fs::create_directories(work);
  const std::vector<std::string> job{"--child-events", std::to_string(rc.events), "--child-keys",
                                     std::to_string(rc.keys), "--child-rate", std::to_string(rc.rate),
                                     "--child-lateness", std::to_string(rc.lateness)};
  auto args = [&](std::vector<std::string> extra) {
    auto a = job;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  auto at = [&](const char* name) { return (work / name).string(); };

  std::printf("recovery: the reference run (no checkpoints, no faults, unpaced)\n");
  std::fflush(stdout);
  wait_success(spawn_self(self, args({"--child", at("reference")}), at("reference.out"), at("reference.err")),
               at("reference.err"));
  const auto expected = table_rows(at("reference"));

  std::printf("recovery: paced run at %llu events/s, killed after a checkpoint of >= %.0f MB\n",
              static_cast<unsigned long long>(rc.rate), rc.state_bytes / 1e6);
  std::fflush(stdout);
  const auto checkpointed = args({"--child", at("results"), "--child-checkpoints", at("checkpoints"),
                                  "--interval-ms", std::to_string(rc.interval.count()), "--child-paced",
                                  "--child-epoch", std::to_string(now_ns())});
  const auto first = spawn_self(self, checkpointed, at("first.out"), at("first.err"));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{120};
  std::uint64_t state_at_kill = 0;
  for (std::size_t seen = 0;;) {
    auto bytes = completed_checkpoint_bytes(at("first.err"));
    for (; seen < bytes.size(); ++seen)
      std::printf("  checkpoint %zu complete: %.1f MB\n", seen + 1, bytes[seen] / 1e6);
    std::fflush(stdout);
    if (!bytes.empty() && bytes.back() >= rc.state_bytes) {
      state_at_kill = bytes.back();
      break;
    }
    if (std::chrono::steady_clock::now() > deadline || ::waitpid(first, nullptr, WNOHANG) == first)
      throw std::runtime_error("no checkpoint of the wanted size within 120 s (or the job ended): " +
                               read_text(at("first.err")).substr(0, 4000));
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  }
  std::this_thread::sleep_for(rc.kill_delay);
  const auto killed_at = now_ns();
  ::kill(first, SIGKILL);
  int status = 0;
  ::waitpid(first, &status, 0);
  if (!WIFSIGNALED(status)) throw std::runtime_error("the job ended before its kill");
  // resumed at once: what the recovery time counts is the restart, the restore and the replay
  const auto second = spawn_self(self, checkpointed, at("second.out"), at("second.err"));
  std::printf("recovery: killed with SIGKILL, resumed\n");
  std::fflush(stdout);
  wait_success(second, at("second.err"));
  const auto before = result_marks(at("first.out"));
  const auto after = result_marks(at("second.out"));
  const auto report = child_report(at("second.out"));
  if (after.empty()) throw std::runtime_error("the resumed job produced no result");
  const double recovery_s = (after.front().first - killed_at) / 1e9;
  long long started = 0;  // the resumed process's "s NS" line
  std::sscanf(read_text(at("second.out")).c_str(), "s %lld", &started);

  const auto got = table_rows(at("results"));
  std::size_t lost = 0, duplicated = 0;
  for (const auto& [k, v] : expected) {
    auto it = got.find(k);
    if (it == got.end()) ++lost;
    else if (it->second != v) ++duplicated;  // events counted twice (or lost) in a window
  }
  for (const auto& [k, v] : got) duplicated += !expected.count(k);
  std::printf("recovery %.3f s with %.1f MB of window state at the kill; %zu rows, %zu lost, %zu "
              "duplicated\n",
              recovery_s, state_at_kill / 1e6, expected.size(), lost, duplicated);

  // results per 100 ms around the kill, from the cumulative counts of both processes
  auto timeline = json::array();
  for (const auto* marks : {&before, &after})
    for (const auto& [t, n] : *marks)
      timeline.push_back({{"t_s", (t - killed_at) / 1e9}, {"results", n}, {"process", marks == &before ? 1 : 2}});
  fs::remove_all(at("checkpoints"));  // the state is large; the tables are kept for inspection
  return {{"recovery_s", recovery_s},
          {"restart_s", (started - killed_at) / 1e9},
          {"restart_is", "SIGKILL to the resumed process running main (the rest: loading the checkpoint, restoring, replaying, the first window)"},
          {"state_bytes_at_kill", state_at_kill},
          {"reference_rows", expected.size()},
          {"lost", lost},
          {"duplicated", duplicated},
          {"restored_from", report["restored_from"]},
          {"resumed_checkpoints", report["checkpoints"]},
          {"checkpoint_bytes_before_kill", completed_checkpoint_bytes(at("first.err"))},
          {"timeline", timeline}};
}

// ---- 3. checkpoints under backpressure: aligned and unaligned barriers ----

/// Numbers through a map that spends `cost` per element, far slower than the source, so the
/// channel in front of it is always full; checkpoints every `interval`, aligned or unaligned.
/// Fails unless the sink saw every number once.
job_result run_backpressured(std::uint64_t events, std::chrono::nanoseconds cost, const std::string& dir,
                             std::chrono::milliseconds interval, bool unaligned) {
  job j{"backpressure"};
  std::vector<std::int64_t> xs(events);
  for (std::uint64_t i = 0; i < events; ++i) xs[i] = static_cast<std::int64_t>(i);
  auto sum = std::make_shared<std::int64_t>(0);
  j.from_container(std::move(xs), "numbers")
      .rebalance()
      .map(
          [cost](std::int64_t x) {
            const auto until = std::chrono::steady_clock::now() + cost;
            while (std::chrono::steady_clock::now() < until) {
            }
            return x;
          },
          "slow")
      .for_each([sum](std::int64_t x) { *sum += x; }, "sum");
  auto opts = with_checkpoints(dir, interval);
  opts.checkpoints.unaligned = unaligned;
  auto r = run(j, opts);
  const auto n = static_cast<std::int64_t>(events);
  if (*sum != n * (n - 1) / 2) throw std::runtime_error("backpressure run: wrong sum");
  return r;
}

/// `runs` runs of each mode, alternating which goes first: checkpoint durations, alignment and
/// bytes per mode, and the throughput.
json backpressure_runs(int runs, std::uint64_t events, std::chrono::nanoseconds cost, const fs::path& work,
                       std::chrono::milliseconds interval) {
  json out{{"events", events}, {"map_ns_per_event", cost.count()}, {"interval_ms", interval.count()}};
  for (int k = 0; k < 2 * runs; ++k) {
    const bool unaligned = (k % 2 == 0) == ((k / 2) % 2 == 0);
    const char* mode = unaligned ? "unaligned" : "aligned";
    auto r = run_backpressured(events, cost, fresh_dir(work, "backpressure"), interval, unaligned);
    auto& m = out[mode];
    for (const auto& c : r.checkpoints)
      m["list"].push_back({{"duration_ms", c.duration_ms}, {"alignment_ms", c.alignment_ms}, {"bytes", c.bytes}});
    m["events_per_s"].push_back(events / r.seconds);
    std::printf("backpressure %-9s: %zu checkpoints in %.1f s, %.2f M events/s\n", mode,
                r.checkpoints.size(), r.seconds, events / r.seconds / 1e6);
    std::fflush(stdout);
  }
  for (const char* mode : {"aligned", "unaligned"}) {
    auto& m = out[mode];
    std::vector<checkpoint_metrics> cs;
    for (const auto& c : m["list"])
      cs.push_back({0, c["duration_ms"].get<double>(), c["alignment_ms"].get<double>(),
                    c["bytes"].get<std::uint64_t>(), 0});
    m["checkpoints"] = checkpoint_stats(cs);
    m["events_per_s_median"] = bench::percentile(m["events_per_s"].get<std::vector<double>>(), 0.5);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"checkpoint benchmark: throughput cost of 1 s checkpoints, recovery after SIGKILL"};
  std::string out = tidemark::bench::out_dir() + "/checkpoint.json";
  std::string work = tidemark::bench::out_dir() + "/checkpoint-work";
  int pairs = 3;
  std::uint64_t window_events = 400'000'000;
  std::uint64_t aion_events = 4'000'000;
  std::int64_t interval_ms = 1000;
  recovery_config rc{14'000'000, 1000, 400'000, 12000, 0};
  double state_mb = 90;
  bool skip_throughput = false;
  bool skip_backpressure = false;
  bool skip_recovery = false;
  std::uint64_t backpressure_events = 3'000'000;
  std::int64_t backpressure_cost_ns = 2000;
  child_config child;
  app.add_option("--out", out, "JSON report");
  app.add_option("--work", work, "directory for checkpoints and tables (emptied)");
  app.add_option("--pairs", pairs, "pairs of runs with and without checkpoints (median reported)");
  app.add_option("--window-events", window_events, "events per window pipeline run");
  app.add_option("--aion-events", aion_events, "events per aion-average run");
  app.add_option("--interval-ms", interval_ms, "checkpoint interval");
  app.add_option("--recovery-events", rc.events, "events of the recovery job");
  app.add_option("--recovery-rate", rc.rate, "events per second of the recovery job");
  app.add_option("--recovery-keys", rc.keys, "keys of the recovery job");
  app.add_option("--lateness-ms", rc.lateness, "how long closed windows keep their events (the state)");
  app.add_option("--state-mb", state_mb, "kill after a checkpoint of at least this many MB (1e6 bytes)");
  app.add_flag("--skip-throughput", skip_throughput, "measure recovery only");
  app.add_flag("--skip-backpressure", skip_backpressure, "skip aligned against unaligned under backpressure");
  app.add_flag("--skip-recovery", skip_recovery, "skip the recovery after SIGKILL");
  app.add_option("--backpressure-events", backpressure_events, "events per backpressure run");
  app.add_option("--backpressure-cost-ns", backpressure_cost_ns, "time the slow map spends per event");
  std::string child_table;
  app.add_option("--child", child_table, "(internal) run the recovery job into this table");
  app.add_option("--child-events", child.events);
  app.add_option("--child-keys", child.keys);
  app.add_option("--child-rate", child.rate);
  app.add_option("--child-lateness", child.lateness);
  app.add_option("--child-checkpoints", child.checkpoint_dir);
  app.add_flag("--child-paced", child.paced);
  app.add_option("--child-epoch", child.epoch_ns);
  CLI11_PARSE(app, argc, argv);
  const std::chrono::milliseconds interval{interval_ms};
  if (!child_table.empty()) {
    child.table = child_table;
    child.interval = interval;
    return run_child(child);
  }
  rc.interval = interval;
  rc.state_bytes = static_cast<std::uint64_t>(state_mb * 1e6);
  const fs::path root{work};
  json doc{{"benchmark", "checkpoint"}, {"interval_ms", interval_ms}, {"load_average_before", bench::load_average()}};
  if (!skip_throughput) {
    auto window = throughput_pairs("window", pairs, window_events, root, interval, run_window);
    auto aion = throughput_pairs("aion-average", pairs, aion_events, root, interval,
                                 [](auto... a) { return run_aion("memory", a...); });
    auto tiered = throughput_pairs("aion-average-tiered", pairs, aion_events, root, interval,
                                   [](auto... a) { return run_aion("tiered", a...); });
    const auto& stats = window["checkpoints"];
    std::printf("with %lld ms checkpoints: window pipeline %.3f x, aion-average %.3f x (tiered state "
                "%.3f x) the throughput without; window checkpoints p50 %.1f ms, p99 %.1f ms\n",
                static_cast<long long>(interval_ms), window["ratio_median"].get<double>(),
                aion["ratio_median"].get<double>(), tiered["ratio_median"].get<double>(),
                stats["p50_ms"].get<double>(), stats["p99_ms"].get<double>());
    doc["throughput_ratio"] = window["ratio_median"];
    doc["throughput_ratio_of"] = "the window pipeline: median over the pairs of (events/s with / without)";
    doc["aion_average_throughput_ratio"] = aion["ratio_median"];
    doc["aion_average_tiered_throughput_ratio"] = tiered["ratio_median"];
    doc["checkpoint_p50_ms"] = stats["p50_ms"];
    doc["checkpoint_p99_ms"] = stats["p99_ms"];
    doc["alignment_p99_ms"] = stats["alignment_p99_ms"];
    doc["snapshot_bytes"] = stats["bytes_median"];
    doc["snapshot_bytes_is"] = "median of the window pipeline's checkpoint bytes";
    doc["checkpoint_stats_of"] = "the window pipeline's checkpointed runs (aion-average: throughput.aion-average)";
    doc["throughput"] = {{"window", window}, {"aion-average", aion}, {"aion-average-tiered", tiered}};
  }
  if (!skip_backpressure) {
    auto bp = backpressure_runs(pairs, backpressure_events, std::chrono::nanoseconds{backpressure_cost_ns},
                                root, std::chrono::milliseconds{200});
    const auto& a = bp["aligned"]["checkpoints"];
    const auto& u = bp["unaligned"]["checkpoints"];
    std::printf("under backpressure: checkpoint p50 %.1f ms aligned, %.1f ms unaligned (p99 %.1f / %.1f)\n",
                a["p50_ms"].get<double>(), u["p50_ms"].get<double>(), a["p99_ms"].get<double>(),
                u["p99_ms"].get<double>());
    doc["backpressure_checkpoint_p50_ms"] = {{"aligned", a["p50_ms"]}, {"unaligned", u["p50_ms"]}};
    doc["backpressure"] = bp;
  }
  doc["targets"] = {{"throughput_ratio", 0.9}, {"recovery_s", 2.0}};
  if (skip_recovery) {
    std::ofstream{out} << doc.dump(1) << '\n';
    std::printf("report %s\n", out.c_str());
    return 0;
  }
  json recovery;
  try {
    recovery = measure_recovery(argv[0], rc, root / "recovery");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "recovery: %s\n", e.what());
    return 1;
  }
  for (const char* k : {"recovery_s", "lost", "duplicated"}) doc[k] = recovery[k];
  doc["recovery_state_bytes"] = recovery["state_bytes_at_kill"];
  doc["recovery"] = recovery;
  doc["recovery"]["job"] = {{"events", rc.events}, {"keys", rc.keys}, {"rate", rc.rate},
                            {"lateness_ms", rc.lateness}, {"window_ms", 100}};
  doc["recovery_s_is"] = "SIGKILL to the first result the resumed process delivers to its table sink";
  std::ofstream{out} << doc.dump(1) << '\n';
  std::printf("report %s\n", out.c_str());
  return recovery["lost"] == 0 && recovery["duplicated"] == 0 ? 0 : 1;
}
