// Key pairs, the ZAP handler and socket security settings (see security.hpp).
#include "security.hpp"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <stdexcept>

#include <spdlog/spdlog.h>

#ifndef ZMQ_ZAP_ENFORCE_DOMAIN
#define ZMQ_ZAP_ENFORCE_DOMAIN 93  // a DRAFT option in libzmq 4.3 headers, honoured by the library
#endif

namespace tidemark {
namespace {

std::string field(const std::string& path, const std::string& text, const std::string& name) {
  auto at = text.find(name + " = ");
  if (at == std::string::npos)
    throw std::runtime_error("key file '" + path + "' has no '" + name + " = ...' line");
  auto start = at + name.size() + 3;
  auto value = text.substr(start, text.find('\n', start) - start);
  if (value.size() != 40)
    throw std::runtime_error("key file '" + path + "': " + name + " must be 40 Z85 characters");
  return value;
}

std::string read_file(const std::string& path) {
  std::ifstream in{path};
  if (!in) throw std::runtime_error("cannot read key file '" + path + "'");
  return {std::istreambuf_iterator<char>{in}, {}};
}

}  // namespace

key_pair key_pair::generate() {
  std::array<char, 41> pub{}, sec{};
  if (zmq_curve_keypair(pub.data(), sec.data()) != 0)
    throw std::runtime_error("libzmq has no CURVE support: cannot generate keys");
  return {pub.data(), sec.data()};
}

key_pair key_pair::load(const std::string& path) {
  auto text = read_file(path);
  return {field(path, text, "public-key"), field(path, text, "secret-key")};
}

std::string key_pair::load_public(const std::string& path) {
  return field(path, read_file(path), "public-key");
}

void key_pair::save(const std::string& dir, const std::string& name) const {
  std::filesystem::create_directories(dir);
  auto base = (std::filesystem::path{dir} / name).string();
  {
    std::ofstream out{base + ".key"};
    if (!out) throw std::runtime_error("cannot write '" + base + ".key'");
    out << "# Tidemark CURVE key pair of '" << name << "': keep secret\n"
        << "public-key = " << public_key << "\nsecret-key = " << secret_key << "\n";
  }
  ::chmod((base + ".key").c_str(), 0600);
  std::ofstream pub{base + ".pub"};
  if (!pub) throw std::runtime_error("cannot write '" + base + ".pub'");
  pub << "# Tidemark public key of '" << name << "'\npublic-key = " << public_key << "\n";
}

namespace net {

zap_handler::zap_handler(zmq::context_t& ctx, std::set<std::string> allowed, std::string owner)
    : socket_(ctx, zmq::socket_type::rep), allowed_(std::move(allowed)), owner_(std::move(owner)) {
  socket_.bind("inproc://zeromq.zap.01");
  socket_.set(zmq::sockopt::rcvtimeo, 100);
  thread_ = std::thread{[this] { serve(); }};
}

zap_handler::~zap_handler() {
  stop_ = true;
  thread_.join();
}

void zap_handler::serve() {
  while (!stop_) {
    std::vector<zmq::message_t> req;
    zmq::message_t part;
    if (!socket_.recv(part)) continue;
    req.push_back(std::move(part));
    while (req.back().more()) {
      zmq::message_t next;
      (void)socket_.recv(next);
      req.push_back(std::move(next));
    }
    // version, request id, domain, address, identity, mechanism, credentials...
    std::string status = "400", text = "not allowed", user;
    auto str = [&](std::size_t i) { return i < req.size() ? req[i].to_string() : std::string{}; };
    const auto domain = str(2), address = str(3), mechanism = str(5);
    if (str(0) != "1.0") {
      text = "bad ZAP version";
    } else if (domain != zap_domain) {
      text = "wrong ZAP domain";
    } else if (mechanism != "CURVE" || req.size() < 7 || req[6].size() != 32) {
      text = "CURVE required";
    } else {
      std::array<char, 41> z85{};
      zmq_z85_encode(z85.data(), static_cast<const std::uint8_t*>(req[6].data()), 32);
      if (allowed_.count(z85.data())) {
        status = "200";
        text = "OK";
        user = z85.data();
      }
    }
    if (status != "200") {
      ++refused_;
      spdlog::warn("{}: refused peer {} ({}): {}", owner_, address, mechanism, text);
    }
    socket_.send(zmq::buffer(std::string{"1.0"}), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(str(1)), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(status), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(text), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(user), zmq::send_flags::sndmore);
    socket_.send(zmq::message_t{}, zmq::send_flags::none);
  }
}

// What libzmq 4.3.4 (Debian 12) reports, by experiment: a frame above ZMQ_MAXMSGSIZE makes the
// receiving engine close the connection at once, and the monitor sees only ZMQ_EVENT_DISCONNECTED
// with the file descriptor — the very event of a peer that hangs up. No HANDSHAKE_FAILED_* event
// (the handshake succeeded), no frame, no error reaches the application. The peer's DEALER then
// reconnects and goes on with its next frames.
//
// So the watch duplicates each accepted or connected connection's descriptor (ZMQ_EVENT_ACCEPTED
// on a server socket, ZMQ_EVENT_CONNECTED on a client socket: both carry it): the socket
// stays open in the kernel after ZeroMQ closes its descriptor, and on ZMQ_EVENT_DISCONNECTED a
// look at it (recv with MSG_PEEK) says who ended the connection. EOF or a reset: the peer did.
// Unread bytes (the rest of the oversized frame) or nothing to read yet (EAGAIN): the peer is
// still there, so ZeroMQ closed it. A handshake that fails (refused key, plain-text peer, timeout)
// also ends with a close by ZeroMQ; libzmq emits its HANDSHAKE_FAILED_* event right before that
// connection's DISCONNECTED from the same call, so a DISCONNECTED after one is not counted (the
// ZAP handler counts refused keys). After the handshake ZeroMQ closes a connection only on a
// protocol error: a frame above its limit, or bytes that are not ZMTP or fail CURVE
// decryption — all counted here as oversized_frames, the first being the only one our own peers
// can cause.
//
// Limits: the descriptor is duplicated when the watch's thread reads the ACCEPTED (CONNECTED)
// event; a connection that ZeroMQ closed before that (opened, handshaken and dropped within the
// thread's wake-up time) is not seen, and a peer that closes its side right after sending an
// oversized frame may look like one that hung up. A duplicate is not taken when a later opening
// with the same descriptor is already queued (the number was reused by then), so a drop is not
// reported for the wrong connection — unless a whole connection came and went and its number was
// reused in the microseconds between reading the queue and dup(). Needs one ZeroMQ I/O thread
// (the node's and the coordinator's contexts have one): a failed handshake's two events then
// come back to back.
drop_watch::drop_watch(zmq::context_t& ctx, zmq::socket_t& server, std::string owner,
                       std::int64_t max_bytes)
    : server_(server),
      events_(ctx, zmq::socket_type::pair),
      owner_(std::move(owner)),
      max_bytes_(max_bytes) {
  static std::atomic<int> watches{0};
  const auto address = "inproc://tidemark-drop-watch-" + std::to_string(watches++);
  const int wanted = ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED |
                     ZMQ_EVENT_MONITOR_STOPPED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                     ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;
  if (zmq_socket_monitor(server_.handle(), address.c_str(), wanted) != 0) throw zmq::error_t{};
  events_.set(zmq::sockopt::linger, 0);
  events_.set(zmq::sockopt::rcvtimeo, 100);
  events_.connect(address);
  thread_ = std::thread{[this] { serve(); }};
}

drop_watch::~drop_watch() {
  (void)zmq_socket_monitor(server_.handle(), nullptr, 0);
  stop_ = true;
  thread_.join();
}

namespace {

struct socket_event {
  std::uint16_t id = 0;
  std::int32_t value = 0;  // the descriptor for ACCEPTED, CONNECTED and DISCONNECTED
};

/// "10.0.0.5:41234" of a connected socket, or "an unknown peer".
std::string peer_address(int fd) {
  sockaddr_storage a{};
  socklen_t n = sizeof a;
  std::array<char, NI_MAXHOST> host{};
  std::array<char, NI_MAXSERV> port{};
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &n) != 0 ||
      ::getnameinfo(reinterpret_cast<sockaddr*>(&a), n, host.data(), host.size(), port.data(),
                    port.size(), NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return "an unknown peer";
  return std::string{host.data()} + ":" + port.data();
}

/// True when the peer of this (duplicated) connection has not ended it: bytes wait to be read or
/// none have come yet.
bool peer_still_there(int fd) {
  char byte = 0;
  const auto n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
}

constexpr bool opened(std::uint16_t id) {
  return id == ZMQ_EVENT_ACCEPTED || id == ZMQ_EVENT_CONNECTED;
}

constexpr bool handshake_failed(std::uint16_t id) {
  return id == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL || id == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL ||
         id == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;
}

}  // namespace

void drop_watch::serve() {
  std::map<int, int> duplicates;  // ZeroMQ's descriptor -> ours
  std::deque<socket_event> queued;
  bool after_failed_handshake = false;
  auto read = [&](bool wait) {
    zmq::message_t event;
    if (!events_.recv(event, wait ? zmq::recv_flags::none : zmq::recv_flags::dontwait))
      return false;
    for (bool more = event.more(); more;) {  // the endpoint part
      zmq::message_t part;
      (void)events_.recv(part);
      more = part.more();
    }
    socket_event e;
    if (event.size() >= 6) {
      std::memcpy(&e.id, event.data(), 2);
      std::memcpy(&e.value, static_cast<const char*>(event.data()) + 2, 4);
    }
    queued.push_back(e);
    return true;
  };
  while (!stop_) {
    if (queued.empty() && !read(true)) continue;
    while (read(false)) {
    }
    const auto e = queued.front();
    queued.pop_front();
    if (e.id == ZMQ_EVENT_MONITOR_STOPPED) break;
    if (opened(e.id)) {
      const bool reused = std::any_of(queued.begin(), queued.end(), [&](const socket_event& later) {
        return opened(later.id) && later.value == e.value;
      });
      if (int mine = reused ? -1 : ::dup(e.value); mine >= 0) duplicates[e.value] = mine;
    } else if (e.id == ZMQ_EVENT_DISCONNECTED) {
      ++disconnects_;
      if (auto it = duplicates.find(e.value); it != duplicates.end()) {
        if (!after_failed_handshake && peer_still_there(it->second)) {
          spdlog::warn(
              "{}: ZeroMQ dropped the connection from {}: it sent a frame above the "
              "limit of {} bytes (--max-message-bytes, max_message_bytes in a cluster "
              "file) or bytes that are not ZMTP ({} so far)",
              owner_, peer_address(it->second), max_bytes_, ++dropped_);
        }
        ::close(it->second);
        duplicates.erase(it);
      }
    }
    after_failed_handshake = handshake_failed(e.id);
  }
  for (auto& [theirs, mine] : duplicates) ::close(mine);
}

void make_server(zmq::socket_t& s, const key_pair& own, bool insecure, std::int64_t max_bytes) {
  s.set(zmq::sockopt::maxmsgsize, max_bytes + curve_headroom);
  s.set(zmq::sockopt::linger, 0);
  if (insecure) return;
  s.set(zmq::sockopt::curve_server, 1);
  s.set(zmq::sockopt::curve_secretkey, own.secret_key);
  s.set(zmq::sockopt::zap_domain, zap_domain);
  int on = 1;
  s.setsockopt(ZMQ_ZAP_ENFORCE_DOMAIN, &on, sizeof on);
}

void make_client(zmq::socket_t& s, const key_pair& own, const std::string& server, bool insecure,
                 std::int64_t max_bytes) {
  s.set(zmq::sockopt::maxmsgsize, max_bytes + curve_headroom);
  s.set(zmq::sockopt::linger, 0);
  if (insecure) return;
  s.set(zmq::sockopt::curve_serverkey, server);
  s.set(zmq::sockopt::curve_publickey, own.public_key);
  s.set(zmq::sockopt::curve_secretkey, own.secret_key);
}

std::set<std::string> load_allow_list(const std::string& dir) {
  std::set<std::string> keys;
  for (const auto& e : std::filesystem::directory_iterator{dir}) {
    auto ext = e.path().extension();
    if (ext == ".pub" || ext == ".key") keys.insert(key_pair::load_public(e.path().string()));
  }
  return keys;
}

void warn_insecure(const std::string& who) {
  spdlog::warn(
      "{} runs with --insecure: ZeroMQ traffic is plain text and unauthenticated; anyone "
      "who can reach its ports can deploy jobs and inject data",
      who);
}

}  // namespace net
}  // namespace tidemark
