// tidemark-node (tidemark::node_main): serves one host of a cluster. It runs whatever registered
// job the coordinator deploys until SIGINT or SIGTERM.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <thread>

#include <CLI/CLI.hpp>

#include <spdlog/spdlog.h>

#include "log_option.hpp"
#include "tidemark/cli/main.hpp"
#include "tidemark/observe/prometheus.hpp"
#include "tidemark/runtime/cluster.hpp"
#include "tidemark/runtime/heap.hpp"

namespace tidemark {

namespace {
std::atomic<bool> stop_requested{false};
void request_stop(int) { stop_requested = true; }

// Stops the node when `fd` reaches end of file: the process holding the pipe's other end (a test
// or `tidemark chaos run` that started this node) is gone, so nobody will stop the node any more.
// An orderly stop first; a node that has not ended 10 s later exits at once.
void watch_lifeline(int fd) {
  std::thread{[fd] {
    char byte = 0;
    for (;;) {
      const auto n = ::read(fd, &byte, 1);
      if (n == 0 || (n < 0 && errno != EINTR)) break;
    }
    spdlog::warn("the process that started this node is gone (lifeline {} closed): stopping", fd);
    stop_requested = true;
    std::this_thread::sleep_for(std::chrono::seconds{10});
    ::_exit(1);
  }}.detach();
}
}  // namespace

int node_main(int argc, char** argv, const job_registry& jobs) {
  tune_thread_cache(argv);
  CLI::App app{"tidemark-node — one host of a Tidemark cluster (see docs/deploy.md)"};
  node_options opts;
  add_log_level_option(app);
  app.add_option("--id", opts.id, "this node's id, as in the cluster file")->required();
  app.add_option("--listen", opts.listen,
                 "control endpoint to bind, e.g. tcp://0.0.0.0:7100 (data uses port + 1)")
      ->required();
  app.add_option("--data-dir", opts.data_dir, "node-local state (created at start)")->required();
  app.add_option("--keys", opts.keys_dir,
                 "folder with ID.key (this node's key pair) and the allowed peers' *.pub files");
  app.add_option("--coordinator-key", opts.coordinator_key,
                 "the coordinator's .pub file, the only key that may deploy, start and stop jobs "
                 "(default: KEYS/coordinator.pub, else KEYS/coordinator.key)");
  app.add_flag("--insecure", opts.insecure, "plain text, no keys: anyone who reaches the ports can "
                                            "deploy jobs and inject data");
  app.add_option("--max-message-bytes", opts.max_message_bytes, "largest frame accepted");
  app.add_flag("--allow-faults", opts.allow_faults,
               "accept injected faults (dropped, delayed frames, partitions, slow disks) from the "
               "coordinator's key when the cluster file says 'faults: allow'; for chaos tests only");
  std::string metrics_listen;
  app.add_option("--metrics-listen", metrics_listen,
                 "serve Prometheus metrics of this node at http://HOST:PORT/metrics");
  int lifeline = -1;
  app.add_option("--lifeline", lifeline,
                 "stop when this inherited file descriptor reaches end of file (the read end of a "
                 "pipe whose writer is the process that started the node, e.g. a test)");
  CLI11_PARSE(app, argc, argv);
  if (lifeline >= 0) {
    if (::fcntl(lifeline, F_GETFD) == -1) {
      spdlog::error("--lifeline {}: not an open file descriptor of this process", lifeline);
      return 2;
    }
    watch_lifeline(lifeline);
  }
  if (!opts.insecure && opts.keys_dir.empty()) {
    spdlog::error("--keys DIR is required (or --insecure for plain text)");
    return 2;
  }
  std::signal(SIGINT, request_stop);
  std::signal(SIGTERM, request_stop);
  try {
    if (!metrics_listen.empty()) opts.live = std::make_shared<tidemark::live_view>();
    tidemark::node_server server{opts, jobs};
    std::unique_ptr<tidemark::observe::http_server> metrics;
    if (!metrics_listen.empty()) {
      metrics = tidemark::observe::serve_metrics(metrics_listen, opts.live,
                                                 [&server] { return std::vector{server.status()}; });
      spdlog::info("node '{}' metrics: {}/metrics", opts.id, metrics->url());
    }
    server.run(stop_requested);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
  return 0;
}

}  // namespace tidemark
