// A real mosquitto broker for tests and benchmarks: started on a free loopback port with a
// minimal config (listener on 127.0.0.1, anonymous access), killed when the object goes away.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "temp_dir.hpp"

namespace tidemark::test {

inline sockaddr_in loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

/// A loopback port nobody listens on right now (the kernel picks it).
inline int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  auto addr = loopback(0);
  socklen_t len = sizeof addr;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw std::runtime_error("cannot find a free loopback port");
  close(fd);
  return ntohs(addr.sin_port);
}

inline bool accepts_connections(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  auto addr = loopback(port);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

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

class mosquitto_broker {
 public:
  /// Starts the broker and waits until it accepts connections; throws when it does not.
  mosquitto_broker() : port_(free_port()) {
    std::ofstream conf(dir_ / "mosquitto.conf");
    conf << "listener " << port_ << " 127.0.0.1\nallow_anonymous true\nlog_type error\n";
    conf.close();
    start();
  }
  ~mosquitto_broker() { stop(); }
  mosquitto_broker(const mosquitto_broker&) = delete;
  mosquitto_broker& operator=(const mosquitto_broker&) = delete;

  int port() const noexcept { return port_; }

  /// (Re)starts the broker on the same port.
  void start() {
    auto conf = dir_ / "mosquitto.conf";
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("cannot fork for mosquitto");
    if (pid_ == 0) {
      execl("/usr/sbin/mosquitto", "mosquitto", "-c", conf.c_str(), static_cast<char*>(nullptr));
      execlp("mosquitto", "mosquitto", "-c", conf.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    bool up = eventually([&] { return accepts_connections(port_) || exited(); }, std::chrono::seconds{5});
    if (!up || exited())
      throw std::runtime_error("mosquitto did not start on port " + std::to_string(port_) +
                               " (is the mosquitto package installed?)");
  }

  /// Kills the broker (SIGKILL), as a crash would.
  void stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  bool exited() {
    if (waitpid(pid_, nullptr, WNOHANG) != pid_) return false;
    pid_ = -1;
    return true;
  }

  temp_dir dir_{"mosquitto"};
  int port_;
  pid_t pid_ = -1;
};

}  // namespace tidemark::test
