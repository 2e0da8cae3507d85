// A replicated window on local tidemark-node processes, as the replica_takeover test and the
// takeover benchmark run it: example-window-count with its window on one node and a copy on
// another, its embedded reference run, a cluster run during which the caller kills nodes once
// results flow, and what the sink received against the reference (results missing or repeated,
// the pauses between results as the sink's stage stamped them with the steady clock).
// Free of Boost.Test: failures are exceptions, so the benchmark uses it too.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lines.hpp"
#include "tidemark/chaos/local_cluster.hpp"
#include "tidemark/examples/example_jobs.hpp"
#include "tidemark/runtime/cluster.hpp"
#include "tidemark/runtime/job_registry.hpp"
#include "tidemark/runtime/live.hpp"

namespace tidemark::test {

/// A steady-clock time in ns since the clock's epoch (the same in every process of a host).
using steady_ns = std::int64_t;

inline steady_ns steady_now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// example-window-count's options: `events` readings at `rate` per second (0: unpaced) over 37
/// sensors in windows of 50 ms of event time, two window instances, every result gathered to one
/// sink writing `out`; with `arrivals`, the sink's stage also stamps each result's arrival there.
/// At 5000 readings per second a window's results reach the sink every 10 ms.
inline job_options window_count(const job_spec& spec, std::int64_t events, std::int64_t rate,
                                const std::filesystem::path& out,
                                const std::filesystem::path& arrivals = {}) {
  auto o = spec.make_options();
  o.set("events", std::to_string(events));
  o.set("keys", "37");
  o.set("window-ms", "50");
  o.set("parallelism", "2");
  o.set("rate", std::to_string(rate));
  o.set("gather", "true");
  o.set("out", out.string());
  if (!arrivals.empty()) o.set("arrivals", arrivals.string());
  return o;
}

/// The name of the job's window operator (generated from its position in the graph).
inline std::string window_name(const job_spec& spec) {
  auto j = spec.build(spec.make_options());
  for (const auto& n : j.graph().nodes())
    if (n.op == "window") return n.name;
  throw std::runtime_error("example-window-count has no window operator");
}

/// How a run's results differ from the reference's, as multisets: each occurrence of a result
/// line counts once.
struct result_difference {
  std::size_t missing = 0;     ///< occurrences in the reference that the run lacks
  std::size_t duplicated = 0;  ///< occurrences beyond the reference's (repeated or unknown results)
  bool operator==(const result_difference& o) const {
    return missing == o.missing && duplicated == o.duplicated;
  }
};

/// `got` against `expected`, both sorted.
inline result_difference compare_results(const std::vector<std::string>& expected,
                                         const std::vector<std::string>& got) {
  std::vector<std::string> common;
  std::set_intersection(expected.begin(), expected.end(), got.begin(), got.end(),
                        std::back_inserter(common));
  return {expected.size() - common.size(), got.size() - common.size()};
}

/// The longest time between two consecutive `arrivals` (in order) of which the second came at or
/// after `from` (so the pause around `from` counts), in ms; 0 with fewer than two.
inline double longest_gap_ms(const std::vector<steady_ns>& arrivals, steady_ns from = 0) {
  steady_ns longest = 0;
  for (std::size_t i = 1; i < arrivals.size(); ++i)
    if (arrivals[i] >= from) longest = std::max(longest, arrivals[i] - arrivals[i - 1]);
  return static_cast<double>(longest) / 1e6;
}

/// Reads an --arrivals file while the sink appends to it.
class arrival_file {
 public:
  explicit arrival_file(std::filesystem::path path) : path_(std::move(path)) {}

  /// Every arrival stamped so far (whole lines only), in order.
  const std::vector<steady_ns>& read() {
    std::ifstream in{path_, std::ios::binary};
    if (!in) return stamps_;
    in.seekg(static_cast<std::streamoff>(offset_));
    std::string chunk{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
    std::size_t start = 0;
    for (auto end = chunk.find('\n'); end != std::string::npos; end = chunk.find('\n', start)) {
      stamps_.push_back(std::stoll(chunk.substr(start, end - start)));
      start = end + 1;
    }
    offset_ += start;
    return stamps_;
  }

 private:
  std::filesystem::path path_;
  std::size_t offset_ = 0;
  std::vector<steady_ns> stamps_;
};

/// Per stage instance of `view`'s latest snapshot: events in and out, batches waiting at its
/// inputs and for credit, and its watermark; one line each.
inline std::string describe_instances(const live_view& view) {
  const auto snapshot = view.latest();
  if (!snapshot) return "(no live counters yet)\n";
  std::string text;
  for (const auto& m : snapshot->instances) {
    std::uint64_t in = 0, out = 0;
    if (!m.operators.empty()) {
      in = m.operators.front().events_in;
      out = m.operators.back().events_out;
    }
    text += "  stage " + std::to_string(m.stage) + " instance " + std::to_string(m.instance) +
            ": " + std::to_string(in) + " events in, " + std::to_string(out) + " out, " +
            std::to_string(m.queued_batches) + " batches queued, " +
            std::to_string(m.blocked_batches) + " waiting for credit, watermark " +
            std::to_string(m.watermark) + "\n";
  }
  return text;
}

/// What one cluster run gave.
struct watched_run {
  job_result result;
  std::vector<std::string> results;  ///< the sink's lines, sorted
  std::vector<steady_ns> arrivals;   ///< when each result reached the sink's stage
  std::vector<steady_ns> kills;      ///< when each kill's SIGKILL was sent
  /// The longest pause between results at the sink, over the whole run or from the first kill.
  double longest_gap_ms() const { return tidemark::test::longest_gap_ms(arrivals); }
  double gap_from_kill_ms() const {
    return tidemark::test::longest_gap_ms(arrivals, kills.empty() ? 0 : kills.front());
  }
};

/// What the caller does while a run goes on (replicated_window::run's `during`).
class running_job {
 public:
  running_job(chaos::local_cluster& nodes, std::future<job_result>& job, arrival_file& arrivals,
              std::vector<steady_ns>& kills)
      : nodes_(nodes), job_(job), arrivals_(arrivals), kills_(kills) {}

  /// Results the sink received so far.
  std::size_t results() { return arrivals_.read().size(); }
  bool finished() const {
    return job_.wait_for(std::chrono::seconds{0}) == std::future_status::ready;
  }

  /// Returns once `f()` holds; throws std::runtime_error when the job ends first or after 10 s.
  void wait_until(const std::function<bool()>& f, const std::string& what) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
    while (!f()) {
      if (finished())
        throw std::runtime_error("the job finished before " + what + ": make it longer");
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("timed out waiting until " + what);
      std::this_thread::sleep_for(std::chrono::milliseconds{1});
    }
  }
  /// Waits until the sink received `n` results (see wait_until).
  void wait_for_results(std::size_t n) {
    wait_until([&] { return results() >= n; }, std::to_string(n) + " results reached the sink");
  }
  /// SIGKILL to node i (index into the cluster's nodes), noting when.
  void kill(std::size_t i) {
    kills_.push_back(steady_now());
    nodes_.kill(i);
  }

 private:
  chaos::local_cluster& nodes_;
  std::future<job_result>& job_;
  arrival_file& arrivals_;
  std::vector<steady_ns>& kills_;
};

/// A `during` for replicated_window::run: SIGKILL to node `i` once the sink received `n` results.
inline std::function<void(running_job&)> kill_after(std::size_t n, std::size_t i) {
  return [n, i](running_job& job) {
    job.wait_for_results(n);
    job.kill(i);
  };
}

/// Local node processes running example-window-count with a replicated window, and the job's
/// embedded reference. Run files (results, arrivals, checkpoints) go to the cluster's folder.
struct replicated_window {
  chaos::local_cluster nodes;
  job_registry registry;
  const job_spec& spec;
  const std::string window;

  explicit replicated_window(chaos::local_cluster_options o)
      : nodes(std::move(o)), spec(window_count_spec(registry)), window(window_name(spec)) {}

  /// Source on n1, both window instances on n2 and the gathering sink on n4 (or `sink_node`); with
  /// `replicas`, the window's copies go to n3 (the node after its primary's). A node is declared
  /// lost after 1 s without heartbeats.
  void lay_out(bool replicas, const std::string& sink_node = "n4") {
    nodes.cluster.pins = {{"readings", "n1"}, {window, "n2"}, {"gather", sink_node}};
    nodes.cluster.replicate.clear();
    if (replicas) nodes.cluster.replicate[window] = 1;
    nodes.cluster.heartbeat_timeout = std::chrono::milliseconds{1000};
  }

  /// Sorted results of the job embedded, unpaced (run once per event count).
  const std::vector<std::string>& reference(std::int64_t events) {
    auto known = references_.find(events);
    if (known != references_.end()) return known->second;
    const auto out = nodes.dir / ("reference-" + std::to_string(events) + ".txt");
    run_options quiet;
    quiet.print_summary = false;
    run_registered(spec, window_count(spec, events, 0, out), quiet);
    return references_[events] = sorted_lines(out);
  }

  static constexpr std::chrono::milliseconds checkpoint_interval{200};

  /// Options that quiet the summary and use small batches, as the cluster runs here do; with
  /// `checkpoints`, checkpoints every checkpoint_interval into a folder of their own (`name`).
  run_options options(const std::string& name, bool checkpoints) const {
    run_options ro;
    ro.print_summary = false;
    ro.batch_size = 64;
    if (checkpoints) {
      ro.checkpoints.dir = (nodes.dir / (name + "-checkpoints")).string();
      ro.checkpoints.interval = checkpoint_interval;
    }
    return ro;
  }

  /// Runs `events` readings at `rate` per second on the cluster as run `name` (files
  /// NAME.txt and NAME.arrivals, emptied first), calling `during` while the job runs. Rethrows
  /// what the run or `during` threw.
  watched_run run(std::int64_t events, std::int64_t rate, const std::string& name, run_options ro,
                  const std::function<void(running_job&)>& during = {}) {
    if (!ro.live) ro.live = std::make_shared<live_view>();
    const auto out = nodes.dir / (name + ".txt");
    const auto stamps = nodes.dir / (name + ".arrivals");
    std::filesystem::remove(out);
    std::filesystem::remove(stamps);
    arrival_file arrivals{stamps};
    watched_run r;
    auto job = std::async(std::launch::async, [&] {
      return run_on_cluster(spec, window_count(spec, events, rate, out, stamps), nodes.cluster, ro);
    });
    if (during) {
      running_job running{nodes, job, arrivals, r.kills};
      during(running);
    }
    // a run that outlasts its source by far hangs: what each stage instance did goes into the
    // error, and the nodes are stopped so that the coordinator gives up and the run returns
    const auto limit = std::chrono::seconds{rate > 0 ? events / rate + 60 : 60};
    if (job.wait_for(limit) != std::future_status::ready) {
      const auto stuck = describe_instances(*ro.live);
      for (std::size_t i = 0; i < nodes.size(); ++i)
        if (nodes.running(i)) nodes.kill(i);
      job.wait();
      throw std::runtime_error("run '" + name + "' did not end within " +
                               std::to_string(limit.count()) + " s; its stage instances:\n" +
                               stuck);
    }
    r.result = job.get();
    r.results = sorted_lines(out);
    r.arrivals = arrivals.read();
    return r;
  }

 private:
  static const job_spec& window_count_spec(job_registry& registry) {
    examples::register_jobs(registry);
    return registry.find("example-window-count");
  }

  std::map<std::int64_t, std::vector<std::string>> references_;
};

}  // namespace tidemark::test
