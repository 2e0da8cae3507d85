// The registered jobs riot-etl, riot-stats, riot-train and riot-pred: options, a local broker
// when none is given, a fresh output directory when none is given, TRAIN's archive, and the
// report (JSON + summary) after the run. On a cluster the broker listens where the nodes reach
// it, TRAIN's archive is written on the node that scans it, and the report merges every node's
// metrics.
#include <stdlib.h>  // mkdtemp

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>

#include <spdlog/spdlog.h>

#include "common.hpp"
#include "tidemark/runtime/cluster.hpp"
#include "tidemark/runtime/job_registry.hpp"
#include "tidemark/riot/apps/jobs.hpp"
#include "tidemark/riot/io/local_broker.hpp"

namespace tidemark::riot::apps {

namespace {

std::vector<job_option_spec> option_specs(app a) {
  std::vector<job_option_spec> s{
      {"dataset", "city", "input stream: city, fit, grid or taxi (fit and grid are synthetic)"},
      {"scale", "1", "spatial scaling: copies of every sensor, with distinct ids, shifted in time"},
      {"speed", "1", "temporal scaling when --rate is 0: the recorded timing sped up this many times"},
      {"rate", "0", "target (peak) input rate in messages/s; 0 replays the recorded timing"},
      {"profile", "constant", "rate shape with --rate: constant or paper (the dataset's distribution)"},
      {"messages", "0", "messages to replay, cycling through the data (0: one pass over every copy)"},
      {"seed", "42", "seed of the fit and grid generators"},
      {"broker", "", "MQTT broker HOST:PORT (empty: start a private mosquitto on loopback)"},
      {"broker-node", "", "on a cluster: the node that starts mosquitto at --broker (set from the "
                          "cluster file's broker: {node: ..., port: ...})"},
      {"out", "", "directory for the table store, blobs, charts, models and report.json "
                  "(none: a fresh directory under the system temp dir, printed at start)"},
      {"data", "", "RIoTBench sample data directory "
                   "(none: $TIDEMARK_DATA_DIR, else the build's data/riotbench, else the installed copy)"},
      {"progress", "false", "print a progress line per second"},
      {"warmup", "0", "seconds at the start that report.json also leaves out "
                      "(latency_after_warmup_ms, throughput_in_after_warmup)"},
      {"parallelism", "1", "instances of every data-parallel task (sources, sinks and global-order tasks run one)"},
      {"task-parallelism", "",
       "instances per task, NAME=N,... (overrides --parallelism; `tidemark plan` shows the names)"},
  };
  if (a == app::stats) s.push_back({"window", "0", "observations per accumulated window (0: RIoTBench's)"});
  if (a == app::train) {
    s.push_back({"runs", "5", "training runs, each over the next slice of the archived rows"});
    s.push_back({"interval-ms", "1000", "time between runs when --rate is 0"});
  }
  return s;
}

// The output directory of a run without --out: one fresh directory per application and process
// under the system temp dir, so that a run never writes into the working directory (often a
// checkout). Per process, so that prepare, build and report of one run agree on it.
std::string fresh_out_dir(app a) {
  static std::mutex mutex;
  static std::map<app, std::string> dirs;
  std::lock_guard<std::mutex> lock(mutex);
  auto& dir = dirs[a];
  if (dir.empty()) {
    auto name = "tidemark-riot-" + std::string{to_string(a)} + "-XXXXXX";
    auto pattern = (std::filesystem::temp_directory_path() / name).string();
    if (mkdtemp(pattern.data()) == nullptr)
      throw job_error("cannot create an output directory " + pattern + " (pass --out DIR)");
    dir = pattern;
  }
  return dir;
}

}  // namespace

app_options options_of(app a, const job_options& j) {
  const auto name = "riot-" + std::string{to_string(a)};
  app_options o;
  auto& r = o.replay;
  try {
    r.dataset = riot::parse_dataset(j.get("dataset"));
    r.profile = parse_rate_profile(j.get("profile"));
  } catch (const std::invalid_argument& e) {
    throw job_error(name + ": " + e.what());
  }
  auto scale = j.get_int("scale");
  auto messages = j.get_int("messages");
  auto warmup = j.get_int("warmup");
  if (scale < 1 || messages < 0) throw job_error(name + ": --scale >= 1 and --messages >= 0");
  if (warmup < 0 || warmup > 86400)
    throw job_error(name + ": --warmup must be 0 to 86400 seconds, not " + std::to_string(warmup));
  r.scale = static_cast<std::uint32_t>(scale);
  r.speed = j.get_double("speed");
  r.rate = j.get_double("rate");
  r.messages = static_cast<std::uint64_t>(messages);
  r.seed = static_cast<std::uint64_t>(j.get_int("seed"));
  o.broker = j.get("broker");
  o.out_dir = j.get("out");
  if (o.out_dir.empty()) o.out_dir = fresh_out_dir(a);  // build() without prepare (`tidemark plan`)
  if (auto data = j.get("data"); !data.empty()) r.data_dir = data;
  o.progress = j.get_bool("progress");
  o.warmup_seconds = static_cast<std::uint32_t>(warmup);
  try {
    auto all = std::clamp<std::int64_t>(j.get_int("parallelism"), 0, 1025);  // out of range either way
    o.parallelism = parse_task_parallelism(a, static_cast<std::uint32_t>(all), j.get("task-parallelism"));
  } catch (const std::invalid_argument& e) {
    throw job_error(name + ": " + e.what());
  }
  if (a == app::stats) o.stats_window = static_cast<std::uint32_t>(std::max<std::int64_t>(0, j.get_int("window")));
  if (a == app::train) {
    o.train_runs = static_cast<std::uint32_t>(std::max<std::int64_t>(1, j.get_int("runs")));
    o.train_interval_ms = static_cast<std::uint32_t>(std::max<std::int64_t>(1, j.get_int("interval-ms")));
  }
  if (o.broker.empty()) o.broker = "127.0.0.1:1883";  // build() without prepare (e.g. `tidemark plan`)
  return o;
}

void print_summary(app a, const app_options& o, const run_metrics& m, const std::string& primary,
                   const std::string& report_path) {
  auto l = m.latency(primary);
  const auto nodes = m.nodes().size();
  std::printf(
      "riot-%s on %s%s: %llu messages in, %llu out (%s); latency ms p50 %.2f p95 %.2f p99 %.2f max %.2f\n",
      std::string{to_string(a)}.c_str(), std::string{riot::to_string(o.replay.dataset)}.c_str(),
      nodes ? (" (" + std::to_string(nodes) + " nodes)").c_str() : "",
      static_cast<unsigned long long>(m.messages_in()), static_cast<unsigned long long>(m.messages_out(primary)),
      primary.c_str(), l.p50, l.p95, l.p99, l.max);
  for (const auto& p : m.nodes()) {
    std::uint64_t out = 0;
    std::vector<double> latencies;
    for (const auto& x : p.outputs)
      if (x.name == primary) out = x.count, latencies = x.latency_ms;
    auto usage = resource_usage::of(p.resources);
    auto d = distribution::of(latencies);
    std::printf("  %-6s %8llu in %8llu out  latency p50 %7.2f p99 %7.2f ms  CPU %5.1f %%  RSS %6.1f MB\n",
                p.node.c_str(), static_cast<unsigned long long>(p.in),
                static_cast<unsigned long long>(out), d.p50, d.p99, usage.cpu_percent_mean,
                usage.rss_mb_max);
  }
  std::printf("report: %s\n", report_path.c_str());
}

void register_jobs(job_registry& registry) {
  struct entry {
    app a;
    const char* summary;
  };
  for (auto [a, summary] : {entry{app::etl, "RIoTBench ETL: parse, range and Bloom filters, interpolation, join, "
                                            "annotate, table insert, CSV->SenML, MQTT publish"},
                            entry{app::stats, "RIoTBench STATS: block average, Kalman + sliding regression, distinct "
                                              "count, accumulate, plot, zip, blob store"},
                            entry{app::train, "RIoTBench TRAIN: timer, table range scan, linear regression and "
                                              "decision tree training, blob upload, MQTT model notice"},
                            entry{app::pred, "RIoTBench PRED: decision tree classify, regression predict, residual "
                                             "error, MQTT publish; swaps in models announced on MQTT"}}) {
    job_spec spec;
    spec.name = "riot-" + std::string{to_string(a)};
    spec.summary = summary;
    spec.options = option_specs(a);
    spec.prepare = [a = a](job_options& j) -> std::shared_ptr<void> {
      if (!j.get("broker-node").empty())
        throw job_error("--broker-node names a node of a cluster: run with --cluster, whose file "
                        "pins the broker (broker: {node: ..., port: ...})");
      if (j.get("out").empty()) {
        j.set("out", fresh_out_dir(a));
        std::printf("no --out given: writing to %s\n", j.get("out").c_str());
        std::fflush(stdout);
      }
      std::shared_ptr<io::local_mosquitto> broker;
      if (j.get("broker").empty()) {
        broker = std::make_shared<io::local_mosquitto>();
        j.set("broker", broker->address());
        spdlog::info("started mosquitto on {} for this run", broker->address());
      }
      if (a == app::train) {
        auto rows = archive_rows(options_of(a, j));
        std::printf("archived %llu rows for training\n", static_cast<unsigned long long>(rows));
      }
      return broker;
    };
    // On a cluster: the same, except that the broker listens on the address through which this
    // host reaches the nodes, or runs on the node the cluster file pins it to (prepare_node
    // starts it there), and TRAIN's archive is left to the node that scans it.
    spec.prepare_cluster = [a = a](job_options& j, const cluster_config& cluster) -> std::shared_ptr<void> {
      if (j.get("out").empty()) {
        j.set("out", fresh_out_dir(a));
        std::printf("no --out given: the report goes to %s, the nodes write there too\n", j.get("out").c_str());
        std::fflush(stdout);
      }
      if (!cluster.broker.node.empty()) {
        if (!j.get("broker").empty() || !j.get("broker-node").empty())
          throw job_error("the cluster file pins the broker to node '" + cluster.broker.node +
                          "' (broker:), and --broker or --broker-node names one too: give one "
                          "of the two");
        j.set("broker", cluster.broker_address());
        j.set("broker-node", cluster.broker.node);
        spdlog::info("node {} starts mosquitto on {} for this run (broker: in the cluster file)",
                     cluster.broker.node, j.get("broker"));
        return nullptr;
      }
      std::shared_ptr<io::local_mosquitto> broker;
      if (j.get("broker").empty()) {
        broker = std::make_shared<io::local_mosquitto>(local_address_towards(cluster));
        j.set("broker", broker->address());
        spdlog::info("started mosquitto on {} for this run (pass --broker HOST:PORT for another)",
                     broker->address());
      }
      return broker;
    };
    spec.prepare_node = [a = a](const job_options& j, const std::string& node,
                                const std::vector<std::string>& hosted) {
      auto o = options_of(a, j);
      std::shared_ptr<io::local_mosquitto> broker;
      if (j.get("broker-node") == node) {
        const auto address = detail::broker_of(o.broker);
        try {
          broker = std::make_shared<io::local_mosquitto>(address.host, address.port);
        } catch (const std::exception& e) {
          throw job_error("cannot start the broker that the cluster file pins to this node "
                          "(broker:): " + std::string{e.what()});
        }
        spdlog::info("started mosquitto on {} for this deployment (pid {})", broker->address(),
                     broker->pid());
      }
      std::filesystem::create_directories(o.out_dir);
      if (auto m = detail::metrics_of(o.out_dir)) m->start_sampling();
      if (a == app::train && std::find(hosted.begin(), hosted.end(), "range_scan") != hosted.end())
        spdlog::info("archived {} rows for training", archive_rows(o));
      return broker;
    };
    spec.node_report = [](const job_options& j) {
      auto m = take_metrics(j.get("out"));
      if (!m) return std::string{};
      m->stop();
      std::vector<std::uint8_t> bytes;
      encode(m->part(), bytes);
      return std::string(bytes.begin(), bytes.end());
    };
    spec.build = [a = a](const job_options& j) { return build_app(a, options_of(a, j)).job; };
    spec.report = [a = a](const job_options& j, const job_result& result) {
      auto o = options_of(a, j);
      auto m = take_metrics(o.out_dir);
      if (!m) return;
      m->stop();
      if (!result.node_reports.empty()) {  // a cluster: the nodes measured, this process did not
        std::vector<metrics_part> parts;
        for (const auto& [node, bytes] : result.node_reports) {
          parts.push_back(decode<metrics_part>(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                               bytes.size()));
          parts.back().node = node;
        }
        m = run_metrics::merged(parts);
      }
      auto path = write_report(a, o, *m, primary_output_of(a), result.to_json());
      print_summary(a, o, *m, primary_output_of(a), path);
    };
    registry.add(std::move(spec));
  }
}

}  // namespace tidemark::riot::apps
