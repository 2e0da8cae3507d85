// Per-run metrics of a RIoTBench application, as the paper defines them: end-to-end latency per
// message (source emit -> sink), input and output throughput per second, jitter of the output
// rate, and the process's CPU and memory sampled over time. Thread-safe; shared by the job's
// source and sinks through a shared_ptr.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

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
  double seconds = 0;      ///< since the run started
  double cpu_percent = 0;  ///< user + system time over the last interval (100 = one core)
  double rss_mb = 0;
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

  /// The source starts: the clock and the CPU/memory sampler start (only the first call counts).
  void start();
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
  /// output whose rate the jitter and the output throughput use.
  std::string to_json(const std::string& primary) const;

 private:
  struct output_series {
    std::vector<double> latency_ms;
    std::vector<std::uint64_t> per_second;
    std::uint64_t count = 0;
  };
  void sample_loop();

  std::chrono::steady_clock::time_point t0_;
  std::atomic<bool> started_{false};
  std::vector<std::int64_t> emit_ns_;
  mutable std::mutex mutex_;
  std::vector<std::uint64_t> in_per_second_;
  std::uint64_t in_ = 0;
  std::int64_t last_emit_ns_ = 0;
  std::map<std::string, output_series> outputs_;
  std::vector<std::string> output_order_;
  std::vector<resource_sample> samples_;
  bool progress_;
  std::chrono::milliseconds sample_period_;
  error_sink errors_;
  std::atomic<bool> sampling_{false};
  std::thread sampler_;
};

}  // namespace tidemark::riot::apps
