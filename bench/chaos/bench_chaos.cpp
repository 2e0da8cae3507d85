// bench_chaos (`scripts/dev bench chaos`): example-late-windows (paced, 3 window instances,
// checkpoints every 250 ms) on three local tidemark-node processes under a random schedule of
// every fault kind but disk errors, for --duration (default 5 min). Writes the checker's
// report as the benchmark JSON (violations, which must be 0, faults_injected by kind,
// recovery_p50_s, recovery_max_s, the timeline) and its plot beside it as chaos.png; exits 3 on a
// violation.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tidemark/chaos/fixture.hpp"
#include "tidemark/chaos/schedule.hpp"
#include "tidemark/examples/example_jobs.hpp"

using namespace tidemark;

int main(int argc, char** argv) {
  CLI::App app{"bench_chaos: a job under a random fault schedule, checked"};
  std::string out = TIDEMARK_BENCH_OUT_DIR "/chaos.json";
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
    chaos::cluster_fixture cluster{3, TIDEMARK_NODE_BIN};
    const auto r = cluster.run(spec, o, schedule, s);
    std::ofstream{out} << r.to_json();
    std::filesystem::copy_file(cluster.nodes().dir / "run-1" / "timeline.png",
                               std::filesystem::path{out}.parent_path() / "chaos.png",
                               std::filesystem::copy_options::overwrite_existing);
    std::printf("%s", r.summary().c_str());
    return r.passed() ? 0 : 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_chaos: %s\n", e.what());
    return 1;
  }
}
