// A request/reply client over ZeroMQ (DEALER): many requests in flight, replies matched by a
// sequence number in any order, a deadline per request. One I/O thread per client; callbacks run
// on it. No ZeroMQ header here, so operators can include it cheaply.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace tidemark::remote {

class client {
 public:
  /// Connects to `endpoint` (e.g. "tcp://127.0.0.1:5555"); requests without a reply after
  /// `timeout` fail. Throws std::runtime_error naming the endpoint when it cannot connect.
  client(std::string endpoint, std::chrono::milliseconds timeout);
  ~client();
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  /// Sends `payload`; later exactly one of `done(reply)` or `failed(message)` runs on the I/O
  /// thread. Thread-safe.
  void call(std::string payload, std::function<void(std::string)> done,
            std::function<void(std::string)> failed);

  const std::string& endpoint() const noexcept;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace tidemark::remote
