// The chaos subcommands: options, the schedule and the cluster in, the summary out. The work is
// tidemark::chaos::run_chaos / check_run (chaos/), which the chaos fixture uses as well.
#include "chaos_command.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include "job_commands.hpp"
#include "tidemark/chaos/runner.hpp"

namespace tidemark {

namespace {

// Exit code of a check that found violations (1 is any other failure, 2 a usage error).
constexpr int violations_exit_code = 3;

struct chaos_run_args {
  job_invocation job;
  std::string cluster_file;
  std::string schedule_file;
  std::uint64_t seed = 1;
  std::string duration = "60s";
  std::string out;
  std::int64_t checkpoint_ms = 1000;
  bool start_nodes = false;
  std::string keys_dir;
  std::string node_binary;
  std::size_t threads = 0;
  std::size_t batch_size = 0;
  std::vector<std::string> netns;
};

// Without --out: a fresh folder under the system temp folder, printed (runs write nothing into
// the working directory unless told to).
std::filesystem::path fresh_out_dir(const std::string& job) {
  auto pattern =
      (std::filesystem::temp_directory_path() / ("tidemark-chaos-" + job + "-XXXXXX")).string();
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("cannot create a folder " + pattern);
  std::fprintf(stderr, "chaos: the run's directory is %s\n", pattern.c_str());
  return pattern;
}

void finish(const chaos::report& r, const std::string& out) {
  std::cout << r.summary();
  std::cout << "report: " << out << "/report.json, timeline: " << out << "/timeline.png\n";
  std::cout.flush();
  if (!r.passed())
    throw CLI::RuntimeError(r.run.error ? "the run failed" : "the checker found violations",
                            violations_exit_code);
}

}  // namespace

void add_chaos_commands(CLI::App& app, const job_registry& registry) {
  auto* chaos_cmd = app.add_subcommand(
      "chaos", "run a job under faults and check its results against a fault-free run");
  chaos_cmd->require_subcommand(1);

  auto a = std::make_shared<chaos_run_args>();
  auto* run = chaos_cmd->add_subcommand(
      "run", "run JOB on --cluster under --schedule, record its history and check it");
  run->add_option("--cluster", a->cluster_file, "cluster file (YAML, docs/deploy.md)")->required();
  run->add_option("--schedule", a->schedule_file, "fault schedule (YAML, docs/fault-injection.md)")
      ->required();
  run->add_option("--seed", a->seed,
                  "seed of the random faults and of the nodes' draws (default 1)");
  run->add_option("--duration", a->duration,
                  "faults start within this long (e.g. 90s, 5m; default 60s); the job then runs "
                  "to its end");
  run->add_option("--out", a->out,
                  "the run's directory (default: a fresh one under the system temp folder)");
  run->add_option("--checkpoint-interval", a->checkpoint_ms,
                  "milliseconds between checkpoints (0: none, so every lost node fails the job; "
                  "default 1000)");
  run->add_flag("--start-nodes", a->start_nodes,
                "start the cluster file's nodes here as tidemark-node processes (needed for "
                "kill, pause and restart); their data goes to OUT/nodes");
  run->add_option("--keys", a->keys_dir,
                  "with --start-nodes: folder with each node's ID.key and the peers' .pub files "
                  "(tidemark-node --keys)");
  run->add_option("--node-binary", a->node_binary,
                  "with --start-nodes: the node binary (default: tidemark-node beside this tool)");
  run->add_option("--netns", a->netns,
                  "ID=NAMESPACE[:DEVICE]: node ID runs in that network namespace, where netem "
                  "faults act on DEVICE (default eth0); repeat for each node");
  run->add_option("--threads", a->threads, "scheduler threads of the coordinator");
  run->add_option("--batch-size", a->batch_size, "elements per batch between actors");
  add_job_positional(*run, a->job);
  run->callback([&registry, a, run] {
    const auto& spec = registry.find(a->job.name);
    auto options = parse_job_arguments(spec, run->remaining());
    auto cluster = cluster_config::load(a->cluster_file);
    chaos::chaos_options o;
    o.seed = a->seed;
    o.duration = chaos::parse_duration(a->duration);
    o.checkpoint_interval = std::chrono::milliseconds{a->checkpoint_ms};
    o.out = a->out.empty() ? fresh_out_dir(spec.name) : std::filesystem::path{a->out};
    if (a->threads) o.run.threads = a->threads;
    if (a->batch_size) o.run.batch_size = a->batch_size;
    o.inject = chaos::default_injector();
    for (const auto& text : a->netns) {
      try {
        o.netns.insert(chaos::parse_netns(text));
      } catch (const std::invalid_argument& e) {
        throw CLI::ValidationError("--netns", e.what());
      }
    }
    o.progress = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
    std::vector<std::string> ids;
    for (const auto& n : cluster.nodes) ids.push_back(n.id);
    auto faults = chaos::expand(chaos::load_schedule(a->schedule_file), a->seed, o.duration, ids);
    std::unique_ptr<chaos::local_cluster> nodes;
    if (a->start_nodes) {
      if (a->keys_dir.empty())
        throw std::runtime_error(
            "--start-nodes needs --keys DIR: the folder with each node's "
            "ID.key and the peers' .pub files");
      if (cluster.insecure)
        throw std::runtime_error(
            "--start-nodes starts nodes with keys: the cluster file must not "
            "say 'insecure: true'");
      chaos::local_cluster_options lo;
      lo.node_binary =
          a->node_binary.empty() ? chaos::sibling_binary("tidemark-node") : a->node_binary;
      lo.allow_faults = cluster.faults_allowed;
      nodes = std::make_unique<chaos::local_cluster>(cluster, a->keys_dir, o.out / "nodes", lo);
      o.processes = nodes.get();
    }
    auto r = chaos::run_chaos(spec, options, cluster, faults, o);
    nodes.reset();  // the nodes stop before the verdict
    finish(r, o.out.string());
  });

  auto dir = std::make_shared<std::string>();
  auto* check = chaos_cmd->add_subcommand(
      "check", "check a recorded chaos run again (its histories and faults.json)");
  check->add_option("dir", *dir, "the run's directory (--out of chaos run)")->required();
  check->callback([dir] { finish(chaos::check_run(*dir), *dir); });
}

}  // namespace tidemark
