// A real mosquitto broker for tests and benchmarks (riot_io's local_mosquitto: a free loopback
// port, anonymous access, killed when the object goes away) and a polling helper.
#pragma once

#include <chrono>
#include <thread>

#include "temp_dir.hpp"
#include "tidemark/riot/io/local_broker.hpp"
#include "tidemark/riot/io/mqtt_tasks.hpp"

namespace tidemark::test {

using riot::io::accepts_connections;
/// A loopback port nobody listens on right now (the kernel picks it).
inline int free_port() { return riot::io::free_loopback_port(); }

/// Polls `pred` every 20 ms until it holds (true) or `limit` passed (false).
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  }
  return true;
}

using mosquitto_broker = riot::io::local_mosquitto;

/// Client settings for a broker on loopback `port`: a short connect timeout and reconnects every
/// second, so tests that kill and restart the broker do not wait long.
inline riot::io::mqtt_broker broker_at(int port) {
  riot::io::mqtt_broker b;
  b.port = port;
  b.connect_timeout = std::chrono::seconds{5};
  b.reconnect_min_s = 1;
  b.reconnect_max_s = 1;
  return b;
}

}  // namespace tidemark::test
