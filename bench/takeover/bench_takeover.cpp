// Benchmark `takeover`: the pause in the output when the node of a replicated window's primary
// is killed (issue 16). Four local tidemark-node processes run example-window-count with its
// window's two instances on n2 and a replica of each on n3, checkpoints on; each run SIGKILLs n2
// once results flow, and the replicas take over without a recovery while the coordinator
// restores the lost copies on n4 from the latest checkpoint. Per kill: the longest pause between
// results at the sink from the kill on (the sink's stage stamps each arrival with the steady
// clock), results missing and repeated against the embedded run, and the restore times. Fault-free
// runs of the same job on the same nodes give the baseline pause. One kill per run: the killed
// node is started again before the next run (a second kill in the same run would hit copies that
// a restore made, not the primaries the run was laid out with).
#include <algorithm>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "replicated_window.hpp"
#include "support/bench_support.hpp"

using namespace tidemark;

namespace {

constexpr std::size_t window_node = 1;  // n2, where lay_out puts the window's primaries

double max_of(const std::vector<double>& xs) {
  return xs.empty() ? 0 : *std::max_element(xs.begin(), xs.end());
}

/// The first `most` result lines of `a` that `b` lacks (both sorted, as multisets).
std::vector<std::string> lacking(const std::vector<std::string>& a,
                                 const std::vector<std::string>& b, std::size_t most = 10) {
  std::vector<std::string> d;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(d));
  if (d.size() > most) d.resize(most);
  return d;
}

/// How a run's results differ from the reference's, with examples of each difference (for
/// finding the cause: which windows and sensors).
nlohmann::json difference(const test::result_difference& diff,
                          const std::vector<std::string>& expected,
                          const std::vector<std::string>& got) {
  nlohmann::json d{{"missing", diff.missing}, {"duplicated", diff.duplicated}};
  if (diff.missing) d["missing_examples"] = lacking(expected, got);
  if (diff.duplicated) d["duplicated_examples"] = lacking(got, expected);
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"output gap at the kill of a replicated window's primary node"};
  std::string out = bench::out_dir() + "/takeover.json";
  int kills = 20;
  int baseline_runs = 3;
  // 50,000 readings per second: the job's watermark every 1024 readings releases results every
  // 20 ms, finer than the pause being measured (at 5000 per second, as in replica_takeover, the
  // 205 ms between watermarks hides it); 4 s per run
  std::int64_t events = 200000;
  std::int64_t rate = 50000;
  double kill_at = 0.25;
  app.add_option("--out", out, "JSON report");
  app.add_option("--kills", kills, "runs with one kill each");
  app.add_option("--baseline-runs", baseline_runs, "fault-free runs for the baseline pause");
  app.add_option("--events", events, "readings per run");
  app.add_option("--rate", rate, "readings per second");
  app.add_option("--kill-at", kill_at, "fraction of the results at the sink before the kill");
  CLI11_PARSE(app, argc, argv);

  chaos::local_cluster_options nodes;
  nodes.node_binary = bench::node_binary();
  nodes.nodes = 4;
  test::replicated_window cluster{nodes};
  cluster.lay_out(true);
  const double load_before = bench::load_average();
  const auto& expected = cluster.reference(events);
  const auto kill_after = static_cast<std::size_t>(kill_at * static_cast<double>(expected.size()));
  std::printf("%zu results per run (embedded reference); %d fault-free runs, then %d kills\n",
              expected.size(), baseline_runs, kills);

  std::vector<std::string> failures;
  auto check = [&](bool ok, const std::string& run, const std::string& what) {
    if (ok) return;
    failures.push_back(run + ": " + what);
    std::fprintf(stderr, "%s: %s\n", run.c_str(), what.c_str());
  };

  nlohmann::json baseline = nlohmann::json::array();
  std::vector<double> baseline_gaps;
  for (int k = 0; k < baseline_runs; ++k) {
    const auto name = "calm-" + std::to_string(k);
    const auto r = cluster.run(events, rate, name, cluster.options(name, true));
    const auto diff = test::compare_results(expected, r.results);
    check(diff == test::result_difference{}, name, "results differ from the reference");
    baseline_gaps.push_back(r.longest_gap_ms());
    auto run = difference(diff, expected, r.results);
    run["gap_ms"] = r.longest_gap_ms();
    run["seconds"] = r.result.seconds;
    baseline.push_back(run);
    std::printf("fault-free run %d/%d: longest pause %.1f ms, %.2f s\n", k + 1, baseline_runs,
                r.longest_gap_ms(), r.result.seconds);
    std::fflush(stdout);
  }
  const double baseline_gap = bench::percentile(baseline_gaps, 0.5);

  nlohmann::json per_kill = nlohmann::json::array();
  std::vector<double> gaps, restores;
  std::size_t missing = 0, duplicated = 0, recoveries = 0;
  for (int k = 0; k < kills; ++k) {
    const auto name = "kill-" + std::to_string(k);
    if (!cluster.nodes.running(window_node)) cluster.nodes.start(window_node);
    test::watched_run r;
    try {
      r = cluster.run(events, rate, name, cluster.options(name, true),
                      test::kill_after(kill_after, window_node));
    } catch (const std::exception& e) {
      check(false, name, e.what());
      continue;
    }
    const auto diff = test::compare_results(expected, r.results);
    // the level is restored when every lost copy caught up: the slowest of them
    std::vector<double> restored_ms;
    for (auto s : r.result.restores) restored_ms.push_back(s * 1000);
    bool took_over = false;
    for (const auto& w : r.result.warnings)
      took_over |= w.find("node 'n2'") != std::string::npos &&
                   w.find("replicas took over") != std::string::npos;
    check(diff == test::result_difference{}, name,
          std::to_string(diff.missing) + " results missing, " + std::to_string(diff.duplicated) +
              " duplicated");
    check(r.result.recoveries == 0 && took_over, name, "the replicas did not take over");
    check(restored_ms.size() == 2, name,
          std::to_string(restored_ms.size()) + " of the 2 lost copies restored");
    const double gap = r.gap_from_kill_ms();
    gaps.push_back(gap);
    if (!restored_ms.empty()) restores.push_back(max_of(restored_ms));
    missing += diff.missing;
    duplicated += diff.duplicated;
    recoveries += r.result.recoveries;
    auto run = difference(diff, expected, r.results);
    run["gap_ms"] = gap;
    const auto killed = std::lower_bound(r.arrivals.begin(), r.arrivals.end(), r.kills.front());
    run["results_before_kill"] = killed - r.arrivals.begin();
    run["gap_before_kill_ms"] = test::longest_gap_ms({r.arrivals.begin(), killed});
    run["restores_ms"] = restored_ms;
    run["recoveries"] = r.result.recoveries;
    run["took_over"] = took_over;
    run["warnings"] = r.result.warnings;
    run["seconds"] = r.result.seconds;
    per_kill.push_back(run);
    std::printf(
        "kill %d/%d: longest pause from the kill %.1f ms (baseline %.1f ms), missing %zu, "
        "duplicated %zu, level restored after %.0f ms\n",
        k + 1, kills, gap, baseline_gap, diff.missing, diff.duplicated, max_of(restored_ms));
    std::fflush(stdout);
  }

  const nlohmann::json doc{
      {"benchmark", "takeover"},
      {"kills", gaps.size()},  // measured: a run that failed is in `failures` instead
      {"kills_requested", kills},
      {"gap_p50_ms", bench::percentile(gaps, 0.5)},
      {"gap_min_ms", bench::percentile(gaps, 0)},
      {"gap_max_ms", bench::percentile(gaps, 1)},
      {"baseline_gap_ms", baseline_gap},
      {"missing", missing},
      {"duplicated", duplicated},
      {"recoveries", recoveries},
      {"restore_p50_ms", bench::percentile(restores, 0.5)},
      {"restore_max_ms", bench::percentile(restores, 1)},
      {"per_kill", per_kill},
      {"baseline_runs", baseline},
      {"settings",
       {{"nodes", 4},
        {"events", events},
        {"rate", rate},
        {"results_per_run", expected.size()},
        {"kill_after_results", kill_after},
        {"checkpoint_interval_ms", test::replicated_window::checkpoint_interval.count()},
        {"heartbeat_timeout_ms", cluster.nodes.cluster.heartbeat_timeout.count()},
        {"layout",
         "source n1, window primaries n2, replicas n3, sink n4; n2 killed once per run"}}},
      {"definitions",
       {{"gap_ms",
         "longest time between two consecutive results arriving at the sink's stage (steady "
         "clock) of which the second arrived after the SIGKILL"},
        {"baseline_gap_ms",
         "median over the fault-free runs of the longest time between two consecutive results "
         "over the whole run"},
        {"restore_ms",
         "per kill, the slowest lost copy's time from noticing the loss to caught "
         "up at every receiver (job_result::restores)"},
        {"missing, duplicated", "results against the embedded run's, as multisets"}}},
      {"failures", failures},
      {"load_average_before", load_before},
      {"load_average_after", bench::load_average()}};
  std::ofstream{out} << doc.dump(2) << '\n';
  std::printf(
      "%zu kills: longest pause p50 %.1f ms, max %.1f ms (baseline %.1f ms); missing %zu, "
      "duplicated %zu; restored p50 %.0f ms, max %.0f ms; report %s\n",
      gaps.size(), static_cast<double>(doc["gap_p50_ms"]), static_cast<double>(doc["gap_max_ms"]),
      baseline_gap, missing, duplicated, static_cast<double>(doc["restore_p50_ms"]),
      static_cast<double>(doc["restore_max_ms"]), out.c_str());
  return failures.empty() ? 0 : 1;
}
