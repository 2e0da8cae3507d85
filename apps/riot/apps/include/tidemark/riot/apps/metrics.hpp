// Per-run metrics of a RIoTBench application, as the paper defines them: end-to-end latency per
// message (source emit -> sink), input and output throughput per second, jitter of the output
// rate, and the process's CPU and memory sampled over time. Thread-safe; shared by the job's
// source and sinks through a shared_ptr. On a cluster each node measures its part and the
// submitting process merges the parts into the cluster's figures, per node and in total.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tidemark/core/codec.hpp"
#include "tidemark/core/error.hpp"

namespace tidemark::riot::apps {

/// Percentiles of a sample (milliseconds for latencies).
struct distribution {
  std::uint64_t count = 0;
  double mean = 0, min = 0, p5 = 0, p25 = 0, p50 = 0, p75 = 0, p95 = 0, p99 = 0, max = 0;
  /// Nearest-rank percentiles of `xs` (sorted in place).
  static distribution of(std::vector<double>& xs);
};

/// The paper's jitter per interval t: J_t = (out_t - s * in_t) / (s * mean(in)), with selectivity
/// s = total out / total in. Only whole intervals where both series have data count.
std::vector<double> jitter(const std::vector<std::uint64_t>& in_per_interval,
                           const std::vector<std::uint64_t>& out_per_interval);

/// One CPU / memory sample of the process.
struct resource_sample {
  double seconds = 0;      ///< since the process's sampling started (the run's start embedded)
  double cpu_percent = 0;  ///< user + system time over the last interval (100 = one core)
  double rss_mb = 0;
  double cache_mb = 0;   ///< of it, what the job's WiredTiger stores hold in their caches
  double record_mb = 0;  ///< of it, the run_metrics' own record of latencies
  TIDEMARK_FIELDS(seconds, cpu_percent, rss_mb, cache_mb, record_mb)
};

/// A process's CPU and memory over its samples.
struct resource_usage {
  double cpu_percent_mean = 0;
  double rss_mb_max = 0;
  static resource_usage of(const std::vector<resource_sample>& samples);
};

/// What one process of a cluster run measured (run_metrics::part), for the submitting process to
/// merge (run_metrics::merged). Times are wall-clock nanoseconds since the epoch, so the emit
/// time on the source's node and the delivery time on a sink's node line up as far as the two
/// hosts' clocks agree (one host, or NTP).
struct metrics_part {
  struct output {
    std::string name;
    std::uint64_t count = 0;
    std::vector<std::uint64_t> per_second;  ///< since start_ns
    std::vector<double> latency_ms;         ///< of deliveries whose emit time is known here
    /// deliveries whose message left a source in another process: id and wall-clock time
    std::vector<std::int64_t> remote_ids;
    std::vector<std::int64_t> remote_at_ns;
    TIDEMARK_FIELDS(name, count, per_second, latency_ms, remote_ids, remote_at_ns)
  };
  std::string node;             ///< filled in by the receiver (the node's id)
  std::int64_t start_ns = 0;    ///< wall clock when this process's metrics started (0: never)
  std::uint64_t in = 0;         ///< messages emitted here
  std::int64_t last_emit_ns = 0;  ///< since start_ns
  std::vector<std::uint64_t> in_per_second;
  std::vector<std::int64_t> emit_ns;  ///< by message id, since start_ns (-1: not emitted here)
  std::vector<output> outputs;
  std::vector<resource_sample> resources;
  std::uint64_t task_errors = 0;
  std::vector<std::string> first_errors;
  TIDEMARK_FIELDS(node, start_ns, in, last_emit_ns, in_per_second, emit_ns, outputs, resources,
                  task_errors, first_errors)
};

class run_metrics {
 public:
  /// `expected` bounds the message ids (1..expected) whose emit times are kept. With `progress`,
  /// a line per second on standard error says how far the run is (in, out, latency, CPU).
  explicit run_metrics(std::uint64_t expected, bool progress = false,
                       std::chrono::milliseconds sample_period = std::chrono::milliseconds{200});
  ~run_metrics();
  run_metrics(const run_metrics&) = delete;
  run_metrics& operator=(const run_metrics&) = delete;

  /// The source starts: the clock and the CPU/memory sampler start (only the first call counts;
  /// a delivery in a process whose source runs elsewhere starts them too).
  void start();
  /// Each CPU/memory sample also asks `cache_mb` what the job's stores hold in their caches, so
  /// memory growth beyond configured caches is measured. Call before the sampler starts.
  void measure_cache(std::function<double()> cache_mb) { cache_mb_ = std::move(cache_mb); }
  /// Starts only the CPU/memory sampler (if it is not running): a cluster node samples from its
  /// deployment on, whether its operators emit, deliver or neither.
  void start_sampling();
  /// Messages first_id .. first_id + n - 1 left the source now.
  void emitted(std::int64_t first_id, std::size_t n);
  /// Output `output` for message `msg_id` reached its sink now (an id outside 1..expected is
  /// counted as output without a latency).
  void delivered(const std::string& output, std::int64_t msg_id);
  /// Stops the sampler; later deliveries still count.
  void stop();

  /// Nanoseconds since start() on the metrics' clock.
  std::int64_t now_ns() const;
  std::uint64_t messages_in() const;
  std::uint64_t messages_out(const std::string& output) const;
  /// Latencies (ms) of an output.
  distribution latency(const std::string& output) const;
  /// Output names in first-delivery order.
  std::vector<std::string> outputs() const;
  /// Where the run's tasks report the inputs they reject (copies share the count and messages).
  const error_sink& errors() const noexcept { return errors_; }

  /// The report as JSON: counts, throughput, latency distributions and a sample of latencies per
  /// output, per-second rates, jitter, CPU/memory samples, rejected inputs; `primary` is the
  /// output whose rate the jitter and the output throughput use. With `warmup_seconds`, also the
  /// latencies of deliveries after the first that many seconds (`latency_after_warmup_ms` per
  /// output) and the input rate over the whole seconds after them (`throughput_in_after_warmup`);
  /// not for a merged cluster run, whose parts' latencies are not in arrival order.
  std::string to_json(const std::string& primary, std::uint32_t warmup_seconds = 0) const;

  /// This process's part of a cluster run (stops nothing; call stop() first for final samples).
  metrics_part part() const;
  /// The cluster's metrics from every node's part: messages in summed, each delivery's latency
  /// against its emit time on whichever node emitted it, rates on the earliest start's clock;
  /// to_json adds a "nodes" list with each node's counts, latencies, CPU and memory.
  static std::unique_ptr<run_metrics> merged(const std::vector<metrics_part>& parts);
  /// The parts a merged run_metrics was made of (empty otherwise).
  const std::vector<metrics_part>& nodes() const noexcept { return parts_; }

 private:
  struct output_series {
    std::vector<double> latency_ms;
    std::vector<std::uint64_t> per_second;
    std::uint64_t count = 0;
    std::vector<std::int64_t> remote_ids, remote_at_ns;  // see metrics_part::output
    std::int64_t last_ns = 0;  // the last delivery in this process, on the metrics' clock
  };
  void sample_loop();
  std::int64_t wall_ns() const;  // wall clock now, as start_ns_ + now_ns()

  std::chrono::steady_clock::time_point t0_;
  std::int64_t start_ns_ = 0;  // wall clock at t0_
  std::once_flag started_;
  std::atomic<bool> clock_started_{false};
  std::vector<std::int64_t> emit_ns_;
  mutable std::mutex mutex_;
  std::vector<std::uint64_t> in_per_second_;
  std::uint64_t in_ = 0;
  std::int64_t last_emit_ns_ = 0;
  std::map<std::string, output_series> outputs_;
  std::vector<std::string> output_order_;
  std::vector<resource_sample> samples_;
  std::function<double()> cache_mb_;
  bool progress_;
  std::chrono::milliseconds sample_period_;
  error_sink errors_;
  std::atomic<bool> sampling_{false};
  std::chrono::steady_clock::time_point sampling_t0_;
  std::thread sampler_;
  std::vector<metrics_part> parts_;
};

}  // namespace tidemark::riot::apps
