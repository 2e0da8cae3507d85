// tidemark-test-service: serves remote_call requests with a configurable latency distribution
// until interrupted, e.g. `tidemark-test-service --bind tcp://127.0.0.1:5555 --latency uniform:200:2000`.
#include <csignal>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>

#include <spdlog/spdlog.h>

#include "tidemark/remote/test_service.hpp"

namespace {
volatile std::sig_atomic_t stop = 0;
}

int main(int argc, char** argv) {
  CLI::App app{"tidemark-test-service: a request/reply service with configurable latency"};
  std::string bind = "tcp://127.0.0.1:5555";
  std::string latency = "fixed:1000";
  std::uint64_t seed = 1;
  app.add_option("--bind", bind, "ZeroMQ endpoint to bind (port * picks one)");
  app.add_option("--latency", latency, "fixed:US, uniform:LO:HI or exp:MEAN, in microseconds");
  app.add_option("--seed", seed, "seed of the latency draws");
  CLI11_PARSE(app, argc, argv);
  try {
    tidemark::remote::test_service service{bind, tidemark::remote::latency_model::parse(latency), seed};
    spdlog::info("serving on {} ({})", service.endpoint(), latency);
    std::signal(SIGINT, [](int) { stop = 1; });
    std::signal(SIGTERM, [](int) { stop = 1; });
    while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::cout << service.served() << " requests served\n";
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
  return 0;
}
