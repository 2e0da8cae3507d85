// Run metrics of the RIoTBench applications (see metrics.hpp).
#include "tidemark/riot/apps/metrics.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <fstream>
#include <numeric>
#include <sstream>

#include <nlohmann/json.hpp>

namespace tidemark::riot::apps {

distribution distribution::of(std::vector<double>& xs) {
  distribution d;
  if (xs.empty()) return d;
  std::sort(xs.begin(), xs.end());
  auto rank = [&](double p) {
    auto i = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(xs.size())));
    return xs[std::clamp<std::size_t>(i, 1, xs.size()) - 1];
  };
  d.count = xs.size();
  d.mean = std::accumulate(xs.begin(), xs.end(), 0.0) / static_cast<double>(xs.size());
  d.min = xs.front();
  d.max = xs.back();
  d.p5 = rank(5), d.p25 = rank(25), d.p50 = rank(50), d.p75 = rank(75), d.p95 = rank(95), d.p99 = rank(99);
  return d;
}

resource_usage resource_usage::of(const std::vector<resource_sample>& samples) {
  resource_usage u;
  for (const auto& s : samples) {
    u.cpu_percent_mean += s.cpu_percent;
    u.rss_mb_max = std::max(u.rss_mb_max, s.rss_mb);
  }
  if (!samples.empty()) u.cpu_percent_mean /= static_cast<double>(samples.size());
  return u;
}

std::vector<double> jitter(const std::vector<std::uint64_t>& in, const std::vector<std::uint64_t>& out) {
  auto n = std::min(in.size(), out.size());
  std::vector<double> j;
  if (n == 0) return j;
  double total_in = std::accumulate(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n), 0.0);
  double total_out = std::accumulate(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n), 0.0);
  if (total_in == 0 || total_out == 0) return j;
  double s = total_out / total_in;
  double mean_in = total_in / static_cast<double>(n);
  for (std::size_t t = 0; t < n; ++t)
    j.push_back((static_cast<double>(out[t]) - s * static_cast<double>(in[t])) / (s * mean_in));
  return j;
}

namespace {

/// utime + stime of this process in seconds, and its resident set in MB.
std::pair<double, double> process_usage() {
  static const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  static const double page_mb = static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
  double cpu = 0, rss = 0;
  std::ifstream stat("/proc/self/stat");
  std::string s((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  auto close = s.rfind(')');  // the command name may contain spaces
  if (close != std::string::npos) {
    std::istringstream fields(s.substr(close + 2));
    std::string f;
    unsigned long long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && fields >> f; ++i) {
      if (i == 14) utime = std::stoull(f);
      if (i == 15) stime = std::stoull(f);
    }
    cpu = static_cast<double>(utime + stime) / ticks;
  }
  std::ifstream statm("/proc/self/statm");
  unsigned long long size = 0, resident = 0;
  if (statm >> size >> resident) rss = static_cast<double>(resident) * page_mb;
  return {cpu, rss};
}

void bump(std::vector<std::uint64_t>& per_second, std::int64_t ns, std::uint64_t n) {
  auto s = static_cast<std::size_t>(std::max<std::int64_t>(0, ns) / 1'000'000'000);
  if (per_second.size() <= s) per_second.resize(s + 1, 0);
  per_second[s] += n;
}

nlohmann::json json_of(const std::vector<resource_sample>& samples) {
  auto res = nlohmann::json::array();
  for (const auto& s : samples)
    res.push_back({{"t", s.seconds},
                   {"cpu_percent", s.cpu_percent},
                   {"rss_mb", s.rss_mb},
                   {"cache_mb", s.cache_mb},
                   {"record_mb", s.record_mb}});
  return res;
}

nlohmann::json json_of(const distribution& d) {
  return {{"count", d.count}, {"mean", d.mean}, {"min", d.min}, {"p5", d.p5},   {"p25", d.p25},
          {"p50", d.p50},     {"p75", d.p75},   {"p95", d.p95}, {"p99", d.p99}, {"max", d.max}};
}

}  // namespace

run_metrics::run_metrics(std::uint64_t expected, bool progress, std::chrono::milliseconds sample_period)
    : emit_ns_(expected + 1, -1), progress_(progress), sample_period_(sample_period) {}

run_metrics::~run_metrics() { stop(); }

void run_metrics::start() {
  std::call_once(started_, [this] {
    t0_ = std::chrono::steady_clock::now();
    start_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
    clock_started_ = true;
    start_sampling();
  });
}

void run_metrics::start_sampling() {
  if (sampling_.exchange(true)) return;
  sampling_t0_ = std::chrono::steady_clock::now();
  sampler_ = std::thread([this] { sample_loop(); });
}

std::int64_t run_metrics::wall_ns() const { return start_ns_ + now_ns(); }

std::int64_t run_metrics::now_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_).count();
}

void run_metrics::emitted(std::int64_t first_id, std::size_t n) {
  auto now = now_ns();
  for (std::size_t i = 0; i < n; ++i) {
    auto id = static_cast<std::uint64_t>(first_id) + i;
    if (id < emit_ns_.size()) emit_ns_[id] = now;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  in_ += n;
  last_emit_ns_ = now;
  bump(in_per_second_, now, n);
}

void run_metrics::delivered(const std::string& output, std::int64_t msg_id) {
  if (!clock_started_) start();  // the source runs in another process
  auto now = now_ns();
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, added] = outputs_.try_emplace(output);
  if (added) {
    output_order_.push_back(output);
    // room for a latency per expected message at once: the pages are touched only as latencies
    // arrive, whereas doubling the vector would leave each old buffer resident in the heap
    it->second.latency_ms.reserve(emit_ns_.size());
  }
  auto& o = it->second;
  ++o.count;
  o.last_ns = now;
  bump(o.per_second, now, 1);
  if (msg_id <= 0 || static_cast<std::uint64_t>(msg_id) >= emit_ns_.size()) return;
  if (auto emit = emit_ns_[static_cast<std::size_t>(msg_id)]; emit >= 0) {
    o.latency_ms.push_back(static_cast<double>(now - emit) / 1e6);
  } else {  // emitted in another process: the merge of the cluster's parts pairs them
    o.remote_ids.push_back(msg_id);
    o.remote_at_ns.push_back(start_ns_ + now);
  }
}

void run_metrics::stop() {
  if (!sampling_.exchange(false)) return;
  if (sampler_.joinable()) sampler_.join();
}

void run_metrics::sample_loop() {
  auto cpu0 = process_usage().first;
  auto t_prev = std::chrono::steady_clock::now();
  while (sampling_) {
    std::this_thread::sleep_for(sample_period_);
    auto [cpu, rss] = process_usage();
    auto t = std::chrono::steady_clock::now();
    double dt = std::chrono::duration<double>(t - t_prev).count();
    resource_sample s{std::chrono::duration<double>(t - sampling_t0_).count(), dt > 0 ? (cpu - cpu0) / dt * 100 : 0, rss};
    try {
      if (cache_mb_) s.cache_mb = cache_mb_();
    } catch (const std::exception&) {
      // a store that failed (a full disk panics its connection) says so to its writers; the
      // sample then counts its cache as 0 rather than stopping the sampler
    }
    cpu0 = cpu;
    t_prev = t;
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [name, o] : outputs_)
      s.record_mb += static_cast<double>(o.latency_ms.size() * sizeof(double) +
                                         o.remote_ids.size() * 2 * sizeof(std::int64_t)) /
                     1e6;
    samples_.push_back(s);
    if (progress_ && samples_.size() % std::max<std::size_t>(1, 1000 / sample_period_.count()) == 0) {
      std::uint64_t out = 0;
      std::vector<double> recent;
      for (const auto& name : output_order_) {
        const auto& o = outputs_.at(name);
        out = std::max(out, o.count);
        auto n = std::min<std::size_t>(o.latency_ms.size(), 2000);
        recent.insert(recent.end(), o.latency_ms.end() - static_cast<std::ptrdiff_t>(n), o.latency_ms.end());
      }
      auto d = distribution::of(recent);
      std::fprintf(stderr, "  %5.1f s: %llu messages in, %llu out, latency p50 %.2f ms p99 %.2f ms, CPU %.0f %%, RSS %.0f MB\n",
                   s.seconds, static_cast<unsigned long long>(in_), static_cast<unsigned long long>(out), d.p50, d.p99,
                   s.cpu_percent, s.rss_mb);
    }
  }
}

std::uint64_t run_metrics::messages_in() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_;
}

std::uint64_t run_metrics::messages_out(const std::string& output) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = outputs_.find(output);
  return it == outputs_.end() ? 0 : it->second.count;
}

distribution run_metrics::latency(const std::string& output) const {
  std::vector<double> xs;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = outputs_.find(output);
    if (it != outputs_.end()) xs = it->second.latency_ms;
  }
  return distribution::of(xs);
}

std::vector<std::string> run_metrics::outputs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return output_order_;
}

std::string run_metrics::to_json(const std::string& primary, std::uint32_t warmup_seconds) const {
  std::lock_guard<std::mutex> lock(mutex_);
  nlohmann::json j;
  double seconds = static_cast<double>(last_emit_ns_) / 1e9;
  j["messages_in"] = in_;
  j["input_seconds"] = seconds;
  j["throughput_in"] = seconds > 0 ? static_cast<double>(in_) / seconds : 0.0;
  j["primary_output"] = primary;
  j["rate_in_per_second"] = in_per_second_;
  for (const auto& name : output_order_) {
    const auto& o = outputs_.at(name);
    auto xs = o.latency_ms;
    auto& out = j["outputs"][name];
    out["messages"] = o.count;
    out["latency_ms"] = json_of(distribution::of(xs));
    // an evenly spaced sample of the latencies in arrival order, for box and time plots
    std::vector<double> sample;
    auto step = std::max<std::size_t>(1, o.latency_ms.size() / 5000);
    for (std::size_t i = 0; i < o.latency_ms.size(); i += step) sample.push_back(o.latency_ms[i]);
    out["latency_sample_ms"] = sample;
    out["rate_per_second"] = o.per_second;
    // latency drift: median of the last third against the first third (unstable runs grow)
    auto third = o.latency_ms.size() / 3;
    if (third > 0) {
      std::vector<double> first(o.latency_ms.begin(), o.latency_ms.begin() + static_cast<std::ptrdiff_t>(third));
      std::vector<double> last(o.latency_ms.end() - static_cast<std::ptrdiff_t>(third), o.latency_ms.end());
      out["p50_first_third_ms"] = distribution::of(first).p50;
      out["p50_last_third_ms"] = distribution::of(last).p50;
    }
    // latencies are in arrival order and per_second counts the arrivals of each second
    if (warmup_seconds > 0 && parts_.empty()) {
      auto w = std::min<std::size_t>(warmup_seconds, o.per_second.size());
      auto early = std::accumulate(o.per_second.begin(), o.per_second.begin() + static_cast<std::ptrdiff_t>(w),
                                   std::uint64_t{0});
      std::vector<double> judged;
      if (early < o.latency_ms.size())
        judged.assign(o.latency_ms.begin() + static_cast<std::ptrdiff_t>(early), o.latency_ms.end());
      out["latency_after_warmup_ms"] = json_of(distribution::of(judged));
    }
  }
  if (warmup_seconds > 0 && parts_.empty()) {
    // whole seconds only, as for the jitter
    auto whole = std::min(in_per_second_.size(), static_cast<std::size_t>(seconds));
    double rate = 0;
    if (whole > warmup_seconds)
      rate = static_cast<double>(std::accumulate(in_per_second_.begin() + warmup_seconds,
                                                 in_per_second_.begin() + static_cast<std::ptrdiff_t>(whole),
                                                 std::uint64_t{0})) /
             static_cast<double>(whole - warmup_seconds);
    j["throughput_in_after_warmup"] = rate;
  }
  auto it = outputs_.find(primary);
  if (it != outputs_.end()) {
    // whole seconds only: the last, partial second would look like a rate drop
    auto in = in_per_second_;
    auto out = it->second.per_second;
    auto whole = static_cast<std::size_t>(seconds);
    in.resize(std::min(in.size(), whole));
    out.resize(std::min(out.size(), whole));
    auto js = jitter(in, out);
    j["jitter"] = js;
    auto copy = js;
    j["jitter_summary"] = json_of(distribution::of(copy));
    j["throughput_out"] = seconds > 0 ? static_cast<double>(it->second.count) / seconds : 0.0;
    // from the start to the last delivery: what a saturated run processed per second (the source
    // may finish long before its messages went through the queues)
    if (it->second.last_ns > 0) {
      const double to_last = static_cast<double>(it->second.last_ns) / 1e9;
      j["seconds_to_last_output"] = to_last;
      j["throughput_end_to_end"] = static_cast<double>(in_) / to_last;
    }
  }
  j["resources"] = json_of(samples_);
  auto usage = resource_usage::of(samples_);
  j["cpu_percent_mean"] = usage.cpu_percent_mean;
  j["rss_mb_max"] = usage.rss_mb_max;
  j["task_errors"] = {{"count", errors_.count()}, {"first", errors_.messages()}};
  if (parts_.empty()) return j.dump(1);
  // a cluster: each node's figures, and the cluster's CPU (100 = one core) and memory as sums
  double cpu = 0, rss = 0;
  std::uint64_t errors = 0;
  auto& nodes = j["nodes"];
  nodes = nlohmann::json::array();
  for (const auto& p : parts_) {
    auto u = resource_usage::of(p.resources);
    cpu += u.cpu_percent_mean;
    rss += u.rss_mb_max;
    errors += p.task_errors;
    nlohmann::json n{{"node", p.node},
                     {"messages_in", p.in},
                     {"cpu_percent_mean", u.cpu_percent_mean},
                     {"rss_mb_max", u.rss_mb_max},
                     {"resources", json_of(p.resources)},
                     {"task_errors", {{"count", p.task_errors}, {"first", p.first_errors}}}};
    n["outputs"] = nlohmann::json::object();
    for (const auto& o : p.outputs) {
      auto xs = o.latency_ms;
      n["outputs"][o.name] = {{"messages", o.count}, {"latency_ms", json_of(distribution::of(xs))}};
    }
    nodes.push_back(std::move(n));
  }
  j["cpu_percent_mean"] = cpu;
  j["rss_mb_max"] = rss;
  j["task_errors"]["count"] = errors;
  return j.dump(1);
}

metrics_part run_metrics::part() const {
  std::lock_guard<std::mutex> lock(mutex_);
  metrics_part p;
  p.resources = samples_;
  p.task_errors = errors_.count();
  p.first_errors = errors_.messages();
  if (!clock_started_) return p;  // neither emitted nor delivered here
  p.start_ns = start_ns_;
  p.in = in_;
  p.last_emit_ns = last_emit_ns_;
  p.in_per_second = in_per_second_;
  if (in_ > 0) p.emit_ns = emit_ns_;
  for (const auto& name : output_order_) {
    const auto& o = outputs_.at(name);
    p.outputs.push_back({name, o.count, o.per_second, o.latency_ms, o.remote_ids, o.remote_at_ns});
  }
  return p;
}

std::unique_ptr<run_metrics> run_metrics::merged(const std::vector<metrics_part>& parts) {
  std::size_t ids = 1;
  // the run's clock: the first start among the nodes that emitted (else among all that started)
  std::int64_t base = 0;
  bool base_emitted = false;
  for (const auto& p : parts) {
    ids = std::max(ids, p.emit_ns.size());
    if (p.start_ns == 0) continue;
    const bool emitted = p.in > 0;
    if (base == 0 || (emitted && !base_emitted) || (emitted == base_emitted && p.start_ns < base)) {
      base = p.start_ns;
      base_emitted = emitted;
    }
  }
  auto m = std::make_unique<run_metrics>(ids - 1);
  m->start_ns_ = base;
  auto shifted = [&](std::vector<std::uint64_t>& into, const std::vector<std::uint64_t>& from,
                     std::int64_t start_ns) {
    for (std::size_t s = 0; s < from.size(); ++s)
      bump(into, start_ns - base + static_cast<std::int64_t>(s) * 1'000'000'000, from[s]);
  };
  for (const auto& p : parts) {
    if (p.start_ns == 0) continue;
    m->in_ += p.in;
    if (p.in > 0) m->last_emit_ns_ = std::max(m->last_emit_ns_, p.start_ns - base + p.last_emit_ns);
    shifted(m->in_per_second_, p.in_per_second, p.start_ns);
    for (std::size_t id = 0; id < p.emit_ns.size(); ++id)
      if (p.emit_ns[id] >= 0) m->emit_ns_[id] = p.start_ns - base + p.emit_ns[id];
  }
  m->parts_ = parts;
  for (auto& p : m->parts_) {
    for (auto& o : p.outputs) {
      // remote deliveries get their latency from the emit time on the source's node
      for (std::size_t k = 0; k < o.remote_ids.size(); ++k) {
        auto id = static_cast<std::size_t>(o.remote_ids[k]);
        if (id < m->emit_ns_.size() && m->emit_ns_[id] >= 0)
          o.latency_ms.push_back(static_cast<double>(o.remote_at_ns[k] - base - m->emit_ns_[id]) / 1e6);
      }
      o.remote_ids.clear();
      o.remote_at_ns.clear();
      auto [it, added] = m->outputs_.try_emplace(o.name);
      if (added) m->output_order_.push_back(o.name);
      auto& into = it->second;
      into.count += o.count;
      into.latency_ms.insert(into.latency_ms.end(), o.latency_ms.begin(), o.latency_ms.end());
      shifted(into.per_second, o.per_second, p.start_ns);
    }
  }
  return m;
}

}  // namespace tidemark::riot::apps
