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

/// A server socket (ROUTER) that accepts CURVE clients checked by the ZAP handler, or plain-text
/// peers when `insecure`. Sets the frame size limit.
void make_server(zmq::socket_t& s, const key_pair& own, bool insecure, std::int64_t max_bytes);
/// A client socket (DEALER) that authenticates with `own` and expects the server key `server`.
void make_client(zmq::socket_t& s, const key_pair& own, const std::string& server, bool insecure,
                 std::int64_t max_bytes);

/// The allow-list of a node: every *.pub and *.key file's public key in `dir`.
std::set<std::string> load_allow_list(const std::string& dir);

/// Prints the plain-text warning once per process.
void warn_insecure(const std::string& who);

}  // namespace tidemark::net
