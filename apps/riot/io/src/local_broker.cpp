// The private loopback mosquitto broker (see local_broker.hpp).
#include "tidemark/riot/io/local_broker.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace tidemark::riot::io {

namespace {

sockaddr_in loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

}  // namespace

int free_loopback_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  auto addr = loopback(0);
  socklen_t len = sizeof addr;
  bool ok = fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
            getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  if (fd >= 0) close(fd);
  if (!ok) throw std::runtime_error("cannot find a free loopback port");
  return ntohs(addr.sin_port);
}

bool accepts_connections(int port, const std::string& host) {
  auto addr = loopback(port);
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) return false;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

local_mosquitto::local_mosquitto(std::string host, int port)
    : host_(std::move(host)), port_(port ? port : free_loopback_port()) {
  if (accepts_connections(port_, host_))
    throw std::runtime_error("cannot start mosquitto on " + address() + ": the port is taken");
  const char* base = std::getenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe): read once at start
  std::string pattern = std::string{base ? base : "/tmp"} + "/tidemark-mosquitto-XXXXXX";
  if (!mkdtemp(pattern.data())) throw std::runtime_error("cannot create a temp dir " + pattern);
  dir_ = pattern;
  std::ofstream conf(dir_ / "mosquitto.conf");
  conf << "listener " << port_ << " " << host_ << "\nallow_anonymous true\nlog_type error\n";
  conf.close();
  try {
    start();
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    throw;
  }
}

local_mosquitto::~local_mosquitto() {
  stop();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

void local_mosquitto::start() {
  auto conf = (dir_ / "mosquitto.conf").string();
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("cannot fork for mosquitto");
  if (pid_ == 0) {
    execl("/usr/sbin/mosquitto", "mosquitto", "-c", conf.c_str(), static_cast<char*>(nullptr));
    execlp("mosquitto", "mosquitto", "-c", conf.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{5};
  while (!accepts_connections(port_, host_) && !exited() &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  if (pid_ <= 0 || !accepts_connections(port_, host_))
    throw std::runtime_error("mosquitto did not start on " + address() +
                             " (is the mosquitto package installed? scripts/dev setup installs it)");
}

void local_mosquitto::stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

bool local_mosquitto::exited() {
  if (pid_ <= 0) return true;
  if (waitpid(pid_, nullptr, WNOHANG) != pid_) return false;
  pid_ = -1;
  return true;
}

}  // namespace tidemark::riot::io
