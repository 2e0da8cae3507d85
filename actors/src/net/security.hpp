// CURVE on every socket and a ZAP handler that admits only allow-listed public keys
// (ZMQ_ZAP_ENFORCE_DOMAIN on, so a socket without a ZAP domain cannot bypass it).
#pragma once

#include <atomic>
#include <set>
#include <string>
#include <thread>

#include <zmq.hpp>

#include "tidemark/runtime/cluster.hpp"

namespace tidemark::net {

/// The ZAP domain of every Tidemark server socket.
inline constexpr const char* zap_domain = "tidemark";

/// Answers ZAP requests on inproc://zeromq.zap.01 of `ctx` from its own thread: CURVE clients
/// whose public key is allowed get 200 (their key becomes the message's User-Id), all others 400
/// and are counted.
class zap_handler {
 public:
  zap_handler(zmq::context_t& ctx, std::set<std::string> allowed_z85, std::string owner);
  ~zap_handler();
  zap_handler(const zap_handler&) = delete;
  zap_handler& operator=(const zap_handler&) = delete;
  std::uint64_t refused() const noexcept { return refused_.load(); }

 private:
  void serve();

  zmq::socket_t socket_;
  std::set<std::string> allowed_;
  std::string owner_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> refused_{0};
  std::thread thread_;
};

/// Counts and logs the connections ZeroMQ drops on a socket after the handshake, which it does
/// without telling the application when a peer sends a frame above ZMQ_MAXMSGSIZE. Works on
/// server sockets (a node's) and client sockets (the coordinator's links). Its own thread reads
/// the socket's monitor, the only one a socket can have; create it before the socket binds or
/// connects (see security.cpp for how a drop is told apart from a peer that hangs up).
class drop_watch {
 public:
  drop_watch(zmq::context_t& ctx, zmq::socket_t& server, std::string owner, std::int64_t max_bytes);
  ~drop_watch();
  drop_watch(const drop_watch&) = delete;
  drop_watch& operator=(const drop_watch&) = delete;
  std::uint64_t dropped() const noexcept { return dropped_.load(); }
  /// Every connection of the socket that ended so far, whoever ended it.
  std::uint64_t disconnects() const noexcept { return disconnects_.load(); }

 private:
  void serve();

  zmq::socket_t& server_;
  zmq::socket_t events_;
  std::string owner_;
  std::int64_t max_bytes_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> dropped_{0};
  std::atomic<std::uint64_t> disconnects_{0};
  std::thread thread_;
};

/// Bytes ZMQ_MAXMSGSIZE allows beyond a frame limit: CURVE wraps each frame in a MESSAGE command
/// (33 bytes), and ZeroMQ checks the wrapped size. With the headroom a frame of exactly the limit
/// passes, and one a little above it reaches verification, which refuses it without dropping the
/// connection.
inline constexpr std::int64_t curve_headroom = 64;

/// A server socket (ROUTER) that accepts CURVE clients checked by the ZAP handler, or plain-text
/// peers when `insecure`. Sets the frame size limit (ZMQ_MAXMSGSIZE: `max_bytes` + curve_headroom).
void make_server(zmq::socket_t& s, const key_pair& own, bool insecure, std::int64_t max_bytes);
/// A client socket (DEALER) that authenticates with `own` and expects the server key `server`.
void make_client(zmq::socket_t& s, const key_pair& own, const std::string& server, bool insecure,
                 std::int64_t max_bytes);

/// The allow-list of a node: every *.pub and *.key file's public key in `dir`.
std::set<std::string> load_allow_list(const std::string& dir);

/// Prints the plain-text warning once per process.
void warn_insecure(const std::string& who);

}  // namespace tidemark::net
