// Benchmark `placement`: does packing stage instances by measured load (`tidemark run --cluster C
// --placement-load REPORT`, issue 18 point 7) beat round robin, which is what the default estimate
// (every operator costing the same) places when every operator is a stage of its own? riot-etl
// (every operator a stage of its own, the data-parallel tasks at --parallelism 2: 24 instances of
// unequal cost) runs as fast as the replay goes on three local tidemark-node processes. Each node
// process is held to the same CPU quota (0.5 core by default) in a cgroup of its own: with three
// nodes on a 2-core machine, pinning them to cores (taskset) cannot give them equal shares — two
// would share one core while the third had one alone — and the packing assumes equal nodes; a quota
// makes each node a bin of the same size, and 3 x 0.5 cores leave half a core to the coordinator,
// the broker and the rest of the machine. A first run embedded (no quota, so no stage's busy time
// is stretched by its node's throttling) measures each stage's load; then round robin and the
// packed placement alternate, --repeats runs each. Per run: input messages per second, the latency
// p99 of the MQTT output, each node's CPU; every run's operator counts and report counts must equal
// the embedded run's (a miss fails the benchmark).
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "jobs.hpp"
#include "support/bench_support.hpp"
#include "tidemark/chaos/local_cluster.hpp"
#include "tidemark/core/plan.hpp"
#include "tidemark/core/synchronizer.hpp"
#include "tidemark/runtime/cluster.hpp"

using namespace tidemark;

namespace {

/// One cgroup per node process with a CPU quota of `cores` (cgroup v1's cpu controller, or v2's
/// cpu.max); a node enters its cgroup before it execs (launcher()). Needs root. The cgroups are
/// removed when this goes, after the nodes ended.
class cpu_quota {
 public:
  cpu_quota(std::size_t nodes, double cores) {
    const std::filesystem::path v1 = "/sys/fs/cgroup/cpu", v2 = "/sys/fs/cgroup";
    const bool is_v1 = std::filesystem::exists(v1 / "cpu.cfs_quota_us");
    if (!is_v1 && !std::filesystem::exists(v2 / "cgroup.controllers"))
      throw std::runtime_error("no cgroup cpu controller at " + v1.string() + " or " + v2.string());
    const auto period = 100000;
    const auto quota = static_cast<long>(cores * period);
    for (std::size_t i = 0; i < nodes; ++i) {
      auto dir = (is_v1 ? v1 : v2) / ("tidemark-bench-placement-" + std::to_string(::getpid()) +
                                      "-n" + std::to_string(i + 1));
      if (::mkdir(dir.c_str(), 0755) != 0)
        throw std::runtime_error("cannot create the cgroup " + dir.string() +
                                 " (the benchmark limits each node's CPU there: run it as root)");
      dirs_.push_back(dir);
      if (is_v1) {
        write(dir / "cpu.cfs_period_us", std::to_string(period));
        write(dir / "cpu.cfs_quota_us", std::to_string(quota));
      } else {
        write(dir / "cpu.max", std::to_string(quota) + " " + std::to_string(period));
      }
    }
    kind = is_v1 ? "cgroup v1 cpu.cfs_quota_us" : "cgroup v2 cpu.max";
  }
  ~cpu_quota() {
    for (const auto& d : dirs_) ::rmdir(d.c_str());
  }
  cpu_quota(const cpu_quota&) = delete;
  cpu_quota& operator=(const cpu_quota&) = delete;

  /// The words before node i's binary: a shell that moves itself into the node's cgroup and
  /// execs the node (which keeps the cgroup, and the lifeline descriptor).
  std::vector<std::string> launcher(std::size_t i) const {
    return {"sh", "-c", "echo $$ > " + (dirs_.at(i) / "cgroup.procs").string() + " && exec \"$@\"",
            "sh"};
  }

  std::string kind;

 private:
  static void write(const std::filesystem::path& file, const std::string& value) {
    std::ofstream f{file};
    f << value;
    f.close();
    if (!f) throw std::runtime_error("cannot write '" + value + "' to " + file.string());
  }

  std::vector<std::filesystem::path> dirs_;
};

/// Where every stage instance goes on `cluster` and the load the placement expects per node
/// (`operator_load` of the measured placement; the measurement also for round robin's, so the
/// two compare).
nlohmann::json describe(const job_spec& spec, const job_options& options,
                        const cluster_config& cluster, const cluster_config& measured) {
  const auto j = spec.build(options);
  const auto synced = synchronize(j.graph());
  const auto plan = compile(synced.graph, {false});
  const auto placement = place(synced.graph, plan, cluster);
  const auto loads = instance_loads(synced.graph, plan, measured);
  nlohmann::json instances = nlohmann::json::array();
  std::vector<double> node_load(cluster.nodes.size(), 0.0);
  std::size_t at = 0;
  for (const auto& st : plan.stages)
    for (std::uint32_t i = 0; i < st.parallelism; ++i, ++at) {
      instances.push_back({{"stage", synced.graph.node(st.ops.front().node).name},
                           {"instance", i},
                           {"node", cluster.nodes[placement[at]].id},
                           {"load_cores", loads[at]}});
      node_load[placement[at]] += loads[at];
    }
  nlohmann::json nodes;
  for (std::size_t n = 0; n < cluster.nodes.size(); ++n) nodes[cluster.nodes[n].id] = node_load[n];
  return {{"instances", instances}, {"expected_node_load_cores", nodes}};
}

/// What must not depend on the placement: every operator's events in and out, and the report's
/// messages in and per output.
std::map<std::string, std::uint64_t> counts_of(const job_result& r, const nlohmann::json& report) {
  std::map<std::string, std::uint64_t> c;
  for (const auto& o : r.per_operator()) {
    c[o.name + " in"] += o.events_in;
    c[o.name + " out"] += o.events_out;
  }
  c["report messages_in"] = report["messages_in"].get<std::uint64_t>();
  for (const auto& [name, o] : report["outputs"].items())
    c["report output " + name] = o["messages"].get<std::uint64_t>();
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"riot-etl on three CPU-limited nodes: round robin against placement by load"};
  std::string out = bench::out_dir() + "/placement.json";
  int repeats = 3;
  std::int64_t messages = 100000;
  int parallelism = 2;
  double node_cores = 0.5;
  app.add_option("--out", out, "JSON report");
  app.add_option("--repeats", repeats, "runs of each placement (alternated)");
  app.add_option("--messages", messages, "riot-etl --messages: input messages per run");
  app.add_option("--parallelism", parallelism, "riot-etl --parallelism");
  app.add_option("--node-cores", node_cores, "CPU quota of each node process, in cores");
  CLI11_PARSE(app, argc, argv);

  try {
    const double load_before = bench::load_average();
    cpu_quota quota{3, node_cores};
    chaos::local_cluster_options o;
    o.node_binary = bench::node_binary();
    o.nodes = 3;
    o.launcher = [&quota](std::size_t i) { return quota.launcher(i); };
    chaos::local_cluster nodes{o};
    // a node held to its quota on a busy machine may fall silent for more than the default 1 s
    nodes.cluster.heartbeat_timeout = std::chrono::seconds{10};

    job_registry registry;
    register_all_jobs(registry);
    const auto& spec = registry.find("riot-etl");
    auto options_in = [&](const std::filesystem::path& dir) {
      return parse_job_arguments(
          spec, {"--dataset", "city", "--speed", "1e9", "--messages", std::to_string(messages),
                 "--parallelism", std::to_string(parallelism), "--out", dir.string()});
    };
    const auto work = nodes.dir / "runs";
    run_options ro;
    ro.fuse = false;  // every operator a stage: unequal stages for the placement to spread

    std::printf("profile: riot-etl embedded, %lld messages\n", static_cast<long long>(messages));
    std::fflush(stdout);
    const auto profile = run_registered(spec, options_in(work / "profile"), ro);
    auto packed = nodes.cluster;
    packed.operator_load = stage_load_from_report(profile.to_json());
    // what every cluster run must count: the embedded run's
    const auto reference =
        counts_of(profile, nlohmann::json::parse(std::ifstream{work / "profile" / "report.json"}));

    struct mode {
      std::string name;
      const cluster_config* cluster;
      std::vector<double> throughput, p99_ms;
    };
    std::vector<mode> modes{{"round_robin", &nodes.cluster, {}, {}}, {"by_load", &packed, {}, {}}};
    nlohmann::json runs = nlohmann::json::array();
    std::vector<std::string> failures;
    for (int r = 0; r < repeats; ++r)
      for (int k = 0; k < 2; ++k) {
        auto& m = modes[static_cast<std::size_t>((r + k) % 2)];  // AB, BA, AB, ...
        const auto dir = work / (m.name + "-" + std::to_string(r));
        const auto result = run_on_cluster(spec, options_in(dir), *m.cluster, ro);
        const auto report = nlohmann::json::parse(std::ifstream{dir / "report.json"});
        const auto primary = report["primary_output"].get<std::string>();
        const double throughput = report["messages_in"].get<double>() / result.seconds;
        const double p99 = report["outputs"][primary]["latency_ms"]["p99"].get<double>();
        m.throughput.push_back(throughput);
        m.p99_ms.push_back(p99);
        nlohmann::json cpu;
        for (const auto& n : report["nodes"])
          cpu[n["node"].get<std::string>()] = n["cpu_percent_mean"];
        const auto counts = counts_of(result, report);
        if (counts != reference)
          failures.push_back(m.name + " run " + std::to_string(r) +
                             ": operator or report counts differ from the embedded run's");
        runs.push_back({{"mode", m.name},
                        {"repeat", r},
                        {"seconds", result.seconds},
                        {"messages_in", report["messages_in"]},
                        {"throughput_msgs_per_s", throughput},
                        {"p99_ms", p99},
                        {"node_cpu_percent", cpu}});
        std::printf("%-12s run %d: %.0f messages/s, p99 %.1f ms, %.2f s\n", m.name.c_str(), r + 1,
                    throughput, p99, result.seconds);
        std::fflush(stdout);
      }

    const auto options = options_in(work / "describe");
    nlohmann::json per_mode;
    for (const auto& m : modes)
      per_mode[m.name] = {{"throughput_msgs_per_s", bench::spread(m.throughput)},
                          {"p99_ms", bench::spread(m.p99_ms)},
                          {"placement", describe(spec, options, *m.cluster, packed)}};
    const double speedup = bench::percentile(modes[1].throughput, 0.5) /
                           bench::percentile(modes[0].throughput, 0.5);
    const nlohmann::json doc{
        {"benchmark", "placement"},
        {"job", "riot-etl"},
        {"modes", per_mode},
        {"by_load_over_round_robin_throughput", speedup},
        {"measured_stage_load_cores", packed.operator_load},
        {"runs", runs},
        {"results_equal", failures.empty()},
        {"failures", failures},
        {"load_average_before", load_before},
        {"load_average_after", bench::load_average()},
        {"settings",
         {{"nodes", 3},
          {"node_cpu_cores", node_cores},
          {"node_cpu_limit", quota.kind},
          {"machine_cores", std::thread::hardware_concurrency()},
          {"repeats", repeats},
          {"order", "round robin and by load alternate: AB, BA, AB, ..."},
          {"job_options", "--dataset city --speed 1e9 --messages " + std::to_string(messages) +
                              " --parallelism " + std::to_string(parallelism)},
          {"fuse", false},
          {"profile", "one embedded run with the same options (no quota): each stage's busy "
                      "time over the run's time"}}},
        {"definitions",
         {{"throughput_msgs_per_s", "the report's messages_in over the job's run time"},
          {"p99_ms", "99th percentile of the MQTT output's latency (emit at the source to the "
                     "publish), from the run's report.json"},
          {"expected_node_load_cores", "the profile's load of the instances placed on a node"}}}};
    std::ofstream{out} << doc.dump(2) << '\n';
    std::printf("round robin median %.0f messages/s, by load %.0f (x%.2f); p99 %.1f / %.1f ms; "
                "load average %.2f -> %.2f; wrote %s\n",
                bench::percentile(modes[0].throughput, 0.5),
                bench::percentile(modes[1].throughput, 0.5), speedup,
                bench::percentile(modes[0].p99_ms, 0.5), bench::percentile(modes[1].p99_ms, 0.5),
                load_before, bench::load_average(), out.c_str());
    for (const auto& f : failures) std::fprintf(stderr, "%s\n", f.c_str());
    return failures.empty() ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench placement: %s\n", e.what());
    return 1;
  }
}
