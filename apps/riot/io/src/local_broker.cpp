// The private loopback mosquitto broker (see local_broker.hpp).
#include "tidemark/riot/io/local_broker.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>
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

/// `use(fd, address)` on a fresh TCP socket and `host`:`port` (an IPv4 address), the socket
/// closed afterwards; false when the address or the socket cannot be had.
template <class Use>
bool with_socket(int port, const std::string& host, Use use) {
  auto addr = loopback(port);
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) return false;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  bool result = use(fd, reinterpret_cast<const sockaddr*>(&addr));
  close(fd);
  return result;
}

/// True when some socket is bound to `host`:`port`, listening or not (a bind of our own fails).
bool bound_elsewhere(int port, const std::string& host) {
  return with_socket(port, host, [](int fd, const sockaddr* addr) {
    int on = 1;  // a closed broker's TIME_WAIT is no owner
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    return bind(fd, addr, sizeof(sockaddr_in)) != 0 && errno == EADDRINUSE;
  });
}

/// The inode of the socket listening on TCP `port` (any IPv4 address), 0 when there is none.
unsigned long listening_inode(int port) {
  std::ifstream tcp("/proc/net/tcp");
  std::string line;
  std::getline(tcp, line);  // the header
  while (std::getline(tcp, line)) {
    std::istringstream in(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout;
    unsigned long inode = 0;
    in >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >>
        inode;
    auto colon = local.find(':');
    if (state == "0A" && colon != std::string::npos &&
        std::stoi(local.substr(colon + 1), nullptr, 16) == port)
      return inode;
  }
  return 0;
}

/// True when process `pid` holds the socket that listens on TCP `port`: an ownership test, where
/// accepts_connections() alone would also be satisfied by another broker on the same port.
bool listens(pid_t pid, int port) {
  auto inode = listening_inode(port);
  if (inode == 0) return false;
  auto socket = "socket:[" + std::to_string(inode) + "]";
  std::error_code ec;
  for (const auto& fd :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    std::error_code unreadable;
    if (std::filesystem::read_symlink(fd.path(), unreadable).string() == socket) return true;
  }
  return false;
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
  return with_socket(port, host, [](int fd, const sockaddr* addr) {
    return connect(fd, addr, sizeof(sockaddr_in)) == 0;
  });
}

local_mosquitto::local_mosquitto(std::string host, int port)
    : host_(std::move(host)), port_(port ? port : free_loopback_port()) {
  const char* base = std::getenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe): read once at start
  std::string pattern = std::string{base ? base : "/tmp"} + "/tidemark-mosquitto-XXXXXX";
  if (!mkdtemp(pattern.data())) throw std::runtime_error("cannot create a temp dir " + pattern);
  dir_ = pattern;
  try {
    // A port the kernel picked can be picked for a concurrent broker too (another test process)
    // before either listens: the one that loses the bind tries a fresh port.
    for (int attempt = 1;; ++attempt) {
      std::ofstream conf(dir_ / "mosquitto.conf");
      conf << "listener " << port_ << " " << host_ << "\nallow_anonymous true\nlog_type error\n";
      conf.close();
      try {
        start();
        return;
      } catch (const port_taken&) {
        if (port != 0 || attempt == 5) throw;
        port_ = free_loopback_port();
      }
    }
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
  if (accepts_connections(port_, host_)) throw port_taken(address());
  auto conf = (dir_ / "mosquitto.conf").string();
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("cannot fork for mosquitto");
  if (pid_ == 0) {
    execl("/usr/sbin/mosquitto", "mosquitto", "-c", conf.c_str(), static_cast<char*>(nullptr));
    execlp("mosquitto", "mosquitto", "-c", conf.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{5};
  while (!listens(pid_, port_) && !exited() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  if (pid_ > 0 && listens(pid_, port_)) return;
  stop();
  if (bound_elsewhere(port_, host_)) throw port_taken(address());
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
