// The job subcommands of the tool. Options after the job name belong to the job (`--events 10`);
// the tool's own options come before it.
#include "job_commands.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "tidemark/core/plan.hpp"
#include "tidemark/core/synchronizer.hpp"
#include "tidemark/observe/dashboard.hpp"
#include "tidemark/observe/progress.hpp"
#include "tidemark/persistence/checkpoint_store.hpp"
#include "tidemark/observe/prometheus.hpp"
#include "tidemark/runtime/cluster.hpp"
#include "tidemark/runtime/live.hpp"

namespace tidemark {

namespace {

void list_jobs(const job_registry& registry) {
  for (const auto* spec : registry.all()) {
    std::printf("%s\n    %s\n", spec->name.c_str(), spec->summary.c_str());
    for (const auto& o : spec->options)
      std::printf("    --%-16s %s (default: %s)\n", o.name.c_str(), o.help.c_str(),
                  o.default_value.empty() ? "none" : o.default_value.c_str());
  }
}

/// The cluster file `path`, with replicas planned on `spare` CPU (--spare; may be empty) and the
/// measured load of `report` (a previous run's --report; may be empty) for place().
cluster_config load_cluster(const std::string& path, const std::string& report,
                            const std::string& spare) {
  auto cluster = cluster_config::load(path);
  if (!spare.empty()) {
    if (!replication::parse_spare(spare, 1))
      throw std::runtime_error("--spare '" + spare + "' is not a number of cores >= 0 or a share "
                               "such as 50%");
    if (!cluster.replicate.empty())
      throw std::runtime_error("--spare lets the planner choose the replicas, and the cluster file "
                               "names them (replication: replicate): give one of the two");
    cluster.planned.spare = spare;
  }
  if (report.empty()) return cluster;
  std::ifstream in{report};
  if (!in) throw std::runtime_error("--placement-load: cannot read '" + report + "'");
  std::stringstream text;
  text << in.rdbuf();
  try {
    cluster.operator_load = stage_load_from_report(text.str());
  } catch (const std::exception& e) {
    throw std::runtime_error("--placement-load " + report + ": " + e.what());
  }
  return cluster;
}

constexpr const char* spare_help =
    "with --cluster: spend this much spare CPU on replicas the replication planner chooses "
    "(\"50%\": that share of the job's load, \"1.5\": cores), as replication: {spare: ...} in "
    "the cluster file does (docs/replication.md)";

constexpr const char* placement_load_help =
    "with --cluster: place instances by the load measured in this report of an earlier run "
    "(tidemark run --report), heaviest first on the least loaded node, instead of by an estimate "
    "(every operator costing the same)";

/// One line per completed checkpoint in the checkpoint database `dir`, oldest first.
void list_checkpoints(const std::string& dir) {
  if (!std::filesystem::exists(dir)) throw std::runtime_error("no checkpoints: '" + dir + "' does not exist");
  persistence::checkpoint_store store{dir};
  const auto all = store.list();
  if (all.empty()) {
    std::printf("no completed checkpoint in '%s'\n", dir.c_str());
    return;
  }
  std::printf("%8s  %-24s %-20s %7s %12s %10s %10s  %s\n", "id", "job", "completed (UTC)",
              "pieces", "bytes", "took ms", "align ms", "copies on");
  for (const auto& c : all) {
    const std::time_t t = c.completed_ms / 1000;
    char when[32];
    std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", std::gmtime(&t));
    std::string holders;
    for (const auto& h : c.holders) holders += (holders.empty() ? "" : ", ") + h;
    std::printf("%8llu  %-24s %-20s %7u %12llu %10.1f %10.1f  %s\n",
                static_cast<unsigned long long>(c.id), c.job.c_str(), when, c.pieces,
                static_cast<unsigned long long>(c.bytes), c.duration_ms, c.alignment_ms,
                holders.empty() ? "-" : holders.c_str());
  }
}

/// What every node of the cluster keeps of checkpoint copies (`checkpoint: {copies: N}`).
void list_checkpoint_copies(const cluster_config& cluster) {
  for (const auto& node : query_checkpoint_copies(cluster, cluster.connect_timeout)) {
    if (!node.answered) {
      std::printf("node %s: no answer (down, or the coordinator's key is not allowed)\n",
                  node.node.c_str());
      continue;
    }
    if (!node.error.empty()) {
      std::printf("node %s: cannot read its copies: %s\n", node.node.c_str(), node.error.c_str());
      continue;
    }
    if (node.checkpoints.empty()) std::printf("node %s: no checkpoint copies\n", node.node.c_str());
    for (const auto& c : node.checkpoints) {
      std::string pieces;
      for (const auto& [stage, instance] : c.pieces)
        pieces += (pieces.empty() ? "" : " ") + std::to_string(stage) + "/" + std::to_string(instance);
      std::printf("node %s: checkpoint %llu of job '%s': %zu pieces (stage/instance) %s\n",
                  node.node.c_str(), static_cast<unsigned long long>(c.record.id),
                  c.record.job.c_str(), c.pieces.size(), pieces.c_str());
    }
  }
}

/// What watches a run from this process: HTTP servers (--metrics-listen, --dashboard; each address
/// serves /metrics, the dashboard page and /api/job) and, when standard error is a terminal, the
/// progress line. Any of them turns the run's live view on (on the coordinator it holds the whole
/// cluster job).
struct run_observers {
  std::vector<std::unique_ptr<observe::http_server>> servers;
  std::unique_ptr<observe::progress_printer> progress;

  run_observers(const std::vector<std::string>& listen, run_options& opts) {
    const bool terminal = ::isatty(STDERR_FILENO) == 1;
    std::vector<std::string> addresses;
    for (const auto& a : listen)
      if (!a.empty() && std::find(addresses.begin(), addresses.end(), a) == addresses.end())
        addresses.push_back(a);
    if (addresses.empty() && !terminal) return;
    opts.live = std::make_shared<live_view>();
    for (const auto& a : addresses) {
      auto& server = servers.emplace_back(std::make_unique<observe::http_server>(a));
      observe::add_metrics_route(*server, opts.live);
      observe::add_dashboard(*server, opts.live);
      server->start();
      spdlog::info("dashboard: {0}/ metrics: {0}/metrics", server->url());
    }
    if (terminal) progress = std::make_unique<observe::progress_printer>(opts.live, stderr);
  }

  /// `spec` with the summary and report printed after the progress line is erased, so they do not
  /// share a line with it.
  job_spec around(job_spec spec, run_options& opts) {
    if (!progress || !opts.print_summary) return spec;
    opts.print_summary = false;
    spec.report = [report = std::move(spec.report), line = progress.get()](const job_options& o,
                                                                         const job_result& r) {
      line->stop();
      std::cout << r.summary();
      if (report) report(o, r);
    };
    return spec;
  }
};

}  // namespace

void confirm_insecure(const cluster_config& cluster, bool insecure) {
  if (insecure && !cluster.insecure)
    throw std::runtime_error(
        "--insecure needs 'insecure: true' in the cluster file too: the "
        "nodes must agree to run in plain text");
  if (cluster.insecure && !insecure)
    throw std::runtime_error(
        "the cluster file says 'insecure: true': pass --insecure to confirm "
        "plain-text traffic");
}

void add_job_positional(CLI::App& cmd, job_invocation& inv) {
  cmd.add_option("job", inv.name, "registered job name (see `tidemark jobs`)")->required();
  cmd.allow_extras();
  cmd.prefix_command();
}

void add_job_commands(CLI::App& app, const job_registry& registry) {
  app.add_subcommand("jobs", "list the registered jobs and their options")
      ->callback([&registry] { list_jobs(registry); });

  auto run_inv = std::make_shared<job_invocation>();
  auto opts = std::make_shared<run_options>();
  auto cluster_file = std::make_shared<std::string>();
  auto insecure = std::make_shared<bool>(false);
  auto* run_cmd = app.add_subcommand(
      "run", "run a registered job embedded in this process, or on the nodes of --cluster");
  run_cmd->add_option("--cluster", *cluster_file,
                      "cluster file (YAML, see docs/deploy.md): deploy on its nodes");
  auto placement_load = std::make_shared<std::string>();
  run_cmd->add_option("--placement-load", *placement_load, placement_load_help);
  auto spare = std::make_shared<std::string>();
  run_cmd->add_option("--spare", *spare, spare_help);
  run_cmd->add_flag("--insecure", *insecure,
                    "talk to the nodes in plain text without keys (prints a warning)");
  run_cmd->add_option("--report", opts->report_path, "write the JSON metrics report here");
  run_cmd->add_option("--threads", opts->threads, "scheduler threads (default: one per core)");
  run_cmd->add_option("--batch-size", opts->batch_size, "elements per batch between actors");
  auto linger_ms = std::make_shared<std::int64_t>(opts->linger.count());
  run_cmd->add_option("--linger-ms", *linger_ms,
                      "how long a partly filled batch waits before it is sent (latency vs. batching)");
  run_cmd->add_option("--adaptive-batching", opts->adaptive_batching,
                      "true (default): send a partly filled batch as soon as its stage is idle, so a "
                      "trickle is not delayed and a flood still fills batches; false: wait for "
                      "--batch-size or --linger-ms");
  auto data_dir = std::make_shared<std::string>();
  run_cmd->add_option("--data-dir", *data_dir,
                      "durable state of the job: tiered window state (DIR/window_state) and "
                      "checkpoints (DIR/checkpoints; with --cluster only these, kept by the "
                      "coordinator); default: a temporary directory, no checkpoints");
  auto checkpoint_ms = std::make_shared<std::int64_t>(opts->checkpoints.interval.count());
  run_cmd->add_option("--checkpoint-interval", *checkpoint_ms,
                      "with --data-dir: milliseconds between checkpoints (0: none; default 1000)");
  run_cmd->add_flag("--resume", opts->checkpoints.resume,
                    "with --data-dir: continue from the newest usable checkpoint in it");
  run_cmd->add_flag("--unaligned", opts->checkpoints.unaligned,
                    "with --data-dir: unaligned checkpoints (barriers overtake queued batches, "
                    "which are stored with the checkpoint: checkpoints complete under backpressure)");
  run_cmd->add_option("--max-checkpoint-failures", opts->checkpoints.max_consecutive_failures,
                      "with --data-dir: fail the job after this many checkpoints in a row could "
                      "not be written (a full or failing disk; 0: never; default 10)");
  run_cmd->add_option("--state-budget", opts->storage.memory_budget_bytes,
                      "node memory budget of tiered window state in bytes (default: none)");
  run_cmd->add_option("--serialization-threads", opts->storage.serialization_threads,
                      "block (de)serialization threads of tiered state (default: one per core)");
  run_cmd->add_option("--io-threads", opts->storage.io_threads,
                      "storage actors (a thread each) of tiered state; more than 1 drops the priorities (ablation)");
  run_cmd->add_option("--time-slice", opts->synchronizers.time_slice,
                      "event-time width of the slices synchronizers admit at once");
  auto dashboard = std::make_shared<std::string>();
  run_cmd->add_flag("--dashboard{127.0.0.1:8080}", *dashboard,
                    "serve the live dashboard while the job runs; --dashboard=HOST:PORT picks the "
                    "address (default 127.0.0.1:8080, port 0: any free port)");
  run_cmd->add_flag("--no-synchronizers", [opts](std::int64_t) { opts->synchronizers.enabled = false; },
                    "debug: let timezones see elements out of order");
  auto metrics_listen = std::make_shared<std::string>();
  run_cmd->add_option("--metrics-listen", *metrics_listen,
                      "serve Prometheus metrics at http://HOST:PORT/metrics while the job runs");
  add_job_positional(*run_cmd, *run_inv);
  run_cmd->callback([&registry, run_inv, opts, run_cmd, linger_ms, cluster_file, insecure,
                     metrics_listen, dashboard, data_dir, checkpoint_ms, placement_load, spare] {
    opts->print_summary = true;
    opts->linger = std::chrono::milliseconds{*linger_ms};
    if (!data_dir->empty()) {
      opts->storage.data_dir = *data_dir + "/window_state";
      opts->checkpoints.dir = *data_dir + "/checkpoints";
      opts->checkpoints.interval = std::chrono::milliseconds{*checkpoint_ms};
    } else if (opts->checkpoints.resume) {
      throw std::runtime_error("--resume needs --data-dir: the checkpoints live there");
    }
    const auto& registered = registry.find(run_inv->name);
    auto options = parse_job_arguments(registered, run_cmd->remaining());
    run_observers observers{{*metrics_listen, *dashboard}, *opts};
    const auto spec = observers.around(registered, *opts);
    if (cluster_file->empty()) {
      if (!placement_load->empty() || !spare->empty())
        throw std::runtime_error("--placement-load and --spare need --cluster: they place "
                                 "instances and replicas on nodes");
      run_registered(spec, std::move(options), *opts);
      return;
    }
    // on a cluster, --data-dir holds the checkpoint database only: the coordinator stores every
    // node's pieces there; window state stays under each node's own --data-dir
    auto cluster = load_cluster(*cluster_file, *placement_load, *spare);
    confirm_insecure(cluster, *insecure);
    // each node's share of the traffic: what its data socket took in during the run
    auto traffic = [&cluster] {
      std::vector<std::optional<node_status>> counters;
      for (const auto& n : cluster.nodes)
        counters.push_back(query_status(n.endpoint, cluster, std::chrono::milliseconds{2000}));
      return counters;
    };
    const auto before = traffic();
    run_on_cluster(spec, std::move(options), cluster, *opts);
    const auto after = traffic();
    for (std::size_t i = 0; i < cluster.nodes.size(); ++i)
      if (before[i] && after[i])
        std::cout << "node " << cluster.nodes[i].id << " received "
                  << (after[i]->data_bytes_in - before[i]->data_bytes_in) << " bytes of data in "
                  << (after[i]->batch_frames_in - before[i]->batch_frames_in) << " batch frames\n";
  });

  auto list_dir = std::make_shared<std::string>();
  auto list_cluster = std::make_shared<std::string>();
  auto* list_cmd = app.add_subcommand(
      "checkpoints", "list the completed checkpoints of a job (--data-dir: the coordinator's, "
                     "with the nodes holding copies; --cluster: the copies each node keeps)");
  auto* list_dir_opt = list_cmd->add_option("--data-dir", *list_dir, "the job's --data-dir");
  list_cmd->add_option("--cluster", *list_cluster, "cluster file: ask every node for its copies")
      ->excludes(list_dir_opt);
  list_cmd->callback([list_dir, list_cluster] {
    if (!list_cluster->empty())
      list_checkpoint_copies(cluster_config::load(*list_cluster));
    else if (!list_dir->empty())
      list_checkpoints(*list_dir + "/checkpoints");
    else
      throw std::runtime_error("tidemark checkpoints: give --data-dir DIR or --cluster FILE");
  });

  auto keygen_dir = std::make_shared<std::string>(".");
  auto keygen_names = std::make_shared<std::vector<std::string>>();
  auto* keygen = app.add_subcommand(
      "keygen", "write CURVE key pairs: DIR/NAME.key (secret, mode 0600) and DIR/NAME.pub");
  keygen->add_option("--dir", *keygen_dir, "where to write the keys (default: .)");
  keygen->add_option("names", *keygen_names, "one key pair per name (node ids, 'coordinator')")
      ->required();
  keygen->callback([keygen_dir, keygen_names] {
    for (const auto& name : *keygen_names) {
      auto keys = key_pair::generate();
      keys.save(*keygen_dir, name);
      std::printf("%s/%s.key  public key %s\n", keygen_dir->c_str(), name.c_str(),
                  keys.public_key.c_str());
    }
  });

  auto plan_inv = std::make_shared<job_invocation>();
  auto dot = std::make_shared<bool>(false);
  auto plan_cluster = std::make_shared<std::string>();
  auto plan_load = std::make_shared<std::string>();
  auto* plan_cmd = app.add_subcommand("plan", "print the physical plan of a registered job");
  plan_cmd->add_flag("--dot", *dot, "print Graphviz DOT instead of text");
  plan_cmd->add_option("--cluster", *plan_cluster,
                       "cluster file: also print the node of every stage instance");
  plan_cmd->add_option("--placement-load", *plan_load, placement_load_help);
  auto plan_spare = std::make_shared<std::string>();
  plan_cmd->add_option("--spare", *plan_spare, spare_help);
  add_job_positional(*plan_cmd, *plan_inv);
  plan_cmd->callback([&registry, plan_inv, dot, plan_cmd, plan_cluster, plan_load, plan_spare] {
    const auto& spec = registry.find(plan_inv->name);
    auto options = parse_job_arguments(spec, plan_cmd->remaining());
    auto j = spec.build(options);
    if (auto problem = validate(j.graph())) throw job_error("job '" + j.name() + "': " + *problem);
    auto synced = synchronize(j.graph());
    auto plan = compile(synced.graph);
    std::cout << (*dot ? to_dot(synced, plan) : to_text(synced, plan));
    if (plan_cluster->empty()) {
      if (!plan_load->empty() || !plan_spare->empty())
        throw std::runtime_error("--placement-load and --spare need --cluster");
      return;
    }
    const auto cluster = load_cluster(*plan_cluster, *plan_load, *plan_spare);
    const auto placement = place(synced.graph, plan, cluster);
    std::cout << "placement on " << cluster.nodes.size() << " nodes ("
              << (cluster.operator_load.empty() ? "by estimated load" : "by measured load") << "):\n";
    // the replicas the coordinator would deploy: named, or planned on spare CPU for the load
    // measured in --placement-load's report (estimated without one)
    std::optional<spare_plan> spare;
    if (!cluster.planned.spare.empty())
      spare = plan_spare_replicas(synced.graph, plan, placement, cluster,
                                  instance_loads(synced.graph, plan, cluster));
    const auto replicas =
        spare ? spare->replicas : place_replicas(synced.graph, plan, placement, cluster);
    std::size_t at = 0;
    for (std::size_t s = 0; s < plan.stages.size(); ++s)
      for (std::uint32_t i = 0; i < plan.stages[s].parallelism; ++i, ++at) {
        std::cout << "  stage " << s << " (" << synced.graph.node(plan.stages[s].ops.front().node).name
                  << ") instance " << i << " -> " << cluster.nodes[placement[at]].id;
        for (std::size_t r = 0; r < replicas[at].size(); ++r)
          std::cout << (r ? ", " : ", replicas on ") << cluster.nodes[replicas[at][r]].id;
        std::cout << '\n';
      }
    if (spare)
      std::printf("replicas on spare CPU: budget %.3f cores, replicas use %.3f; predicted "
                  "availability %.2f %% (without replicas %.2f %%) when each node fails with "
                  "probability %g\n",
                  spare->budget, spare->replica_load, 100 * spare->availability,
                  100 * spare->availability_without, cluster.planned.failure_probability);
  });
}

}  // namespace tidemark
