// A private mosquitto broker on a free loopback port: what a RIoTBench job starts when no broker is
// configured, and what the tests and benchmarks talk to. The process is killed when the object goes.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace tidemark::riot::io {

/// A loopback TCP port nobody listens on right now (the kernel picks it).
int free_loopback_port();

/// True when something accepts TCP connections on `host`:`port` (an IPv4 address).
bool accepts_connections(int port, const std::string& host = "127.0.0.1");

/// Something else listens on the address a broker was to start on.
struct port_taken : std::runtime_error {
  explicit port_taken(const std::string& address)
      : std::runtime_error("cannot start mosquitto on " + address + ": the port is taken") {}
};

/// mosquitto (Debian's /usr/sbin/mosquitto) listening on one address of this host (loopback by
/// default) with anonymous access and a minimal config written to a private temporary directory.
class local_mosquitto {
 public:
  /// Starts the broker on `host` (an IPv4 address of this host: another one than loopback lets
  /// other hosts, e.g. a cluster's nodes, reach it) and `port` (0: a free one) and waits until it
  /// accepts connections; throws std::runtime_error naming the address when something listens
  /// there already, and (naming the package too) when the broker does not accept within 5 s.
  explicit local_mosquitto(std::string host = "127.0.0.1", int port = 0);
  ~local_mosquitto();
  local_mosquitto(const local_mosquitto&) = delete;
  local_mosquitto& operator=(const local_mosquitto&) = delete;

  int port() const noexcept { return port_; }
  /// The broker's process id; -1 while it is stopped.
  pid_t pid() const noexcept { return pid_; }
  /// "<host>:<port>".
  std::string address() const { return host_ + ":" + std::to_string(port_); }

  /// (Re)starts the broker on the same port; throws port_taken when another process listens there
  /// (also when it took the port while this broker was starting).
  void start();
  /// Kills the broker (SIGKILL), as a crash would.
  void stop();

 private:
  bool exited();

  std::filesystem::path dir_;
  std::string host_;
  int port_;
  pid_t pid_ = -1;
};

}  // namespace tidemark::riot::io
