// bench_chaos (`scripts/dev bench chaos`): example-late-windows (paced, 3 window instances,
// checkpoints every 250 ms) on three local tidemark-node processes under a random schedule of
// every fault kind but disk errors, for --duration (default 5 min). Writes the checker's
// report as the benchmark JSON (violations, which must be 0, faults_injected by kind,
// recovery_p50_s, recovery_max_s, the timeline) and its plot beside it as chaos.png; exits 3 on a
// violation. The run's directory stays beside the JSON (chaos-run/) for `tidemark chaos check`;
// a progress line every 5 s and the machine's load average go to stderr and into the JSON.
#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "support/bench_support.hpp"
#include "tidemark/chaos/fixture.hpp"
#include "tidemark/chaos/schedule.hpp"
#include "tidemark/examples/example_jobs.hpp"

using namespace tidemark;

namespace {

// The 1-minute load average: the machine may be shared, which the figures must say.
double load_average() {
  double load[1] = {0};
  return ::getloadavg(load, 1) == 1 ? load[0] : -1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_chaos: a job under a random fault schedule, checked"};
  std::string out = tidemark::bench::out_dir() + "/chaos.json";
  std::string duration = "5m";
  std::uint64_t seed = 1;
  std::int64_t rate = 5000;
  app.add_option("--out", out, "JSON report (the plot goes beside it as chaos.png)");
  app.add_option("--duration", duration, "how long faults are injected (default 5m)");
  app.add_option("--seed", seed, "seed of the random schedule (default 1)");
  app.add_option("--rate", rate, "readings per second (default 5000)");
  CLI11_PARSE(app, argc, argv);
  try {
    job_registry registry;
    examples::register_jobs(registry);
    const auto& spec = registry.find("example-late-windows");
    chaos::run_settings s;
    s.seed = seed;
    s.duration = chaos::parse_duration(duration);
    s.checkpoint_interval = std::chrono::milliseconds{250};
    // enough readings to outlast the faults by about 20 s at the pace
    const auto seconds = s.duration.count() / 1000 + 20;
    auto o = spec.make_options();
    o.set("events", std::to_string(rate * seconds));
    o.set("keys", "20");
    o.set("parallelism", "3");
    o.set("rate", std::to_string(rate));
    const std::string schedule =
        "random:\n  kinds: [kill, pause, restart, partition, drop, delay, duplicate, reorder, "
        "slow-disk]\n  every: 5s..10s\n  duration: 1s..3s\n  start: 3s\n";
    const auto bench_dir = std::filesystem::absolute(out).parent_path();
    s.out = bench_dir / "chaos-run";
    std::filesystem::remove_all(s.out);  // the runner refuses a folder with an earlier run
    double load_max = load_average();
    const double load_start = load_max;
    s.progress = [&load_max](const std::string& line) {
      const double load = load_average();
      load_max = std::max(load_max, load);
      std::fprintf(stderr, "%s (load %.2f)\n", line.c_str(), load);
    };
    chaos::cluster_fixture cluster{3, tidemark::bench::node_binary()};
    const auto r = cluster.run(spec, o, schedule, s);
    auto j = nlohmann::json::parse(r.to_json());
    j["bench"] = {{"job", "example-late-windows"},
                  {"rate", rate},
                  {"duration_s", static_cast<double>(s.duration.count()) / 1000.0},
                  {"seed", seed},
                  {"checkpoint_interval_ms", s.checkpoint_interval.count()},
                  {"schedule", schedule},
                  {"load_average_start", load_start},
                  {"load_average_max", load_max},
                  {"cores", std::thread::hardware_concurrency()},
                  {"run_dir", s.out.string()},
                  {"plot", "chaos.png"}};
    std::ofstream{out} << j.dump(2);
    std::filesystem::copy_file(s.out / "timeline.png", bench_dir / "chaos.png",
                               std::filesystem::copy_options::overwrite_existing);
    std::printf("%s", r.summary().c_str());
    std::printf("load average: %.2f at the start, at most %.2f (%u cores)\n", load_start, load_max,
                std::thread::hardware_concurrency());
    return r.passed() ? 0 : 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_chaos: %s\n", e.what());
    return 1;
  }
}
