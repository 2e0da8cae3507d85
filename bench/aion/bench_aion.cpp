// The Aion paper's experiment scaled to this machine: for each workload and K = 1..10 past windows,
// the memory baseline and the tiered store — peak and median resident memory, ingestion rate
// (on-time and all events) and processing rate — plus the ablation for the average workload (no
// pre-staging, one serialization thread, several I/O threads without priorities). Every point
// runs in a child process (`--one`), so resident memory is not inherited from earlier runs.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <thread>

#include "support/bench_support.hpp"
#include "tidemark/aion/workloads.hpp"

using namespace tidemark;
using json = nlohmann::json;

namespace {

double rss_mb() {
  std::ifstream in{"/proc/self/status"};
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

struct workload {
  std::string job;
  std::string heavy;  // the window operator over raw events whose rates are reported
  std::vector<std::pair<std::string, std::string>> options;
};

const std::vector<workload>& workloads() {
  static const std::vector<workload> w{
      {"aion-average", "average", {{"events-per-window", "4000"}, {"window-ms", "1000"}}},
      {"aion-bigrams", "bigrams", {{"events-per-window", "1000"}, {"window-ms", "1000"}}},
      {"aion-stock", "warnings", {{"events-per-window", "2000"}, {"window-ms", "1000"}, {"symbols", "200"}}},
      {"aion-linear-road", "segment_stats",
       {{"events-per-window", "2000"}, {"window-ms", "1000"}, {"cars", "500"}, {"segments", "8"}}}};
  return w;
}

/// One run in this process: the job, sampled resident memory, and the rates.
json run_one(const std::string& job_name, const std::string& state, int k, double rate, int windows,
             const std::string& variant, std::uint64_t budget) {
  const auto& w = *std::find_if(workloads().begin(), workloads().end(),
                                [&](const workload& x) { return x.job == job_name; });
  job_registry registry;
  aion::register_jobs(registry);
  const auto& spec = registry.find(job_name);
  auto o = spec.make_options();
  for (const auto& [name, value] : w.options) o.set(name, value);
  const auto per_window = std::stoll(o.get("events-per-window"));
  o.set("state", state);
  o.set("past-windows", std::to_string(k));
  o.set("rate", std::to_string(rate));
  o.set("events", std::to_string(per_window * windows));
  o.set("memory-events", std::to_string(per_window));  // the current window fits the m-bucket
  // The papers' two-shot trigger: on time, and once more when the allowed lateness ends.
  o.set("late-trigger", "every-ms:3600000");
  run_options opts;
  opts.storage.cache_mb = 8;
  opts.tune_malloc = false;  // let freed memory go back to the kernel, or RSS shows the peak only
  o.set("block-events", "256");
  opts.storage.memory_budget_bytes = budget;
  if (variant == "no-prestaging") o.set("prestage", "false");
  if (variant == "one-serialization-thread") opts.storage.serialization_threads = 1;
  if (variant == "unprioritized-io") opts.storage.io_threads = 4;

  std::vector<double> samples;
  std::atomic<bool> done{false};
  std::thread sampler([&] {
    while (!done) {
      samples.push_back(rss_mb());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  auto r = run_registered(spec, o, opts);
  done = true;
  sampler.join();
  std::sort(samples.begin(), samples.end());
  double late = 0, processed = 0, busy_ms = 0;
  for (const auto& i : r.instances)
    for (const auto& op : i.operators)
      if (op.name == w.heavy) {
        late += op.extra.count("late_events_accepted") ? op.extra.at("late_events_accepted") : 0;
        processed += static_cast<double>(op.events_in);
        busy_ms += static_cast<double>(i.busy_ns) / 1e6;
      }
  const double events = static_cast<double>(per_window * windows);
  return {{"workload", job_name}, {"state", state}, {"k", k}, {"variant", variant},
          {"seconds", r.seconds}, {"events", events}, {"late_events", late},
          {"peak_rss_mb", samples.empty() ? 0 : samples.back()},
          {"median_rss_mb", samples.empty() ? 0 : samples[samples.size() / 2]},
          {"ingestion_rate_all", events / r.seconds},
          {"ingestion_rate_on_time", (events - late) / r.seconds},
          {"processing_rate", busy_ms > 0 ? processed / (busy_ms / 1000.0) : 0}};
}

json run_child(const std::string& self, const std::string& args) {
  const std::string cmd = self + " --one " + args;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("cannot run " + cmd);
  std::string out;
  char buf[4096];
  while (auto n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  if (pclose(p) != 0) throw std::runtime_error("failed: " + cmd);
  return json::parse(out.substr(out.rfind('{')));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Aion experiment: memory and throughput of the memory baseline and the tiered store"};
  std::string out = tidemark::bench::out_dir() + "/aion.json", one, state = "memory", variant = "full", only;
  int k = 1, max_k = 10, windows = 14;
  double rate = 20000;
  std::uint64_t budget = 48ull << 20;
  app.add_option("--out", out, "JSON report");
  app.add_option("--one", one, "(internal) run one point of this workload");
  app.add_option("--state", state);
  app.add_option("--k", k);
  app.add_option("--variant", variant);
  app.add_option("--max-k", max_k, "largest number of past windows");
  app.add_option("--windows", windows, "windows of events per run");
  app.add_option("--rate", rate, "offered events per second");
  app.add_option("--budget", budget, "tiered state memory budget of the node in bytes");
  app.add_option("--only", only, "run one workload only");
  CLI11_PARSE(app, argc, argv);
  if (!one.empty()) {
    std::cout << run_one(one, state, k, rate, std::max(windows, k + 4), variant, budget).dump() << "\n";
    return 0;
  }
  json report{{"rate", rate}, {"windows", windows}, {"budget_bytes", budget}, {"points", json::array()}};
  auto point = [&](const std::string& job, const std::string& st, int kk, const std::string& v) {
    auto r = run_child(argv[0], job + " --state " + st + " --k " + std::to_string(kk) + " --variant " + v +
                                    " --rate " + std::to_string(rate) + " --windows " + std::to_string(windows) +
                                    " --budget " + std::to_string(budget));
    std::cerr << r.dump() << "\n";
    report["points"].push_back(r);
  };
  for (const auto& w : workloads()) {
    if (!only.empty() && w.job != only) continue;
    for (int kk = 1; kk <= max_k; ++kk)
      for (const char* st : {"memory", "tiered"}) point(w.job, st, kk, "full");
  }
  if (only.empty() || only == "aion-average")
    for (int kk = 1; kk <= max_k; ++kk)
      for (const char* v : {"no-prestaging", "one-serialization-thread", "unprioritized-io"})
        point("aion-average", "tiered", kk, v);
  std::ofstream{out} << report.dump(1) << "\n";
  return 0;
}
