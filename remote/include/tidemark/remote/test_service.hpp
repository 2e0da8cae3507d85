// A request/reply test service over ZeroMQ (ROUTER) that answers every request after a latency
// drawn from a configurable distribution, out of order when latencies differ. Tests, benchmarks
// and `tidemark-test-service` use it to stand in for a remote service.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace tidemark::remote {

/// Latency per request in microseconds: "fixed:US", "uniform:LO:HI" or "exp:MEAN".
struct latency_model {
  enum class kind { fixed, uniform, exponential } shape = kind::fixed;
  double a = 0;  ///< fixed value, lower bound, or mean
  double b = 0;  ///< upper bound (uniform)
  /// Parses the text form; throws std::invalid_argument saying what is expected.
  static latency_model parse(const std::string& text);
};

class test_service {
 public:
  /// Binds `endpoint` (a port of * picks a free one, see endpoint()) and serves from a thread:
  /// each request's reply is `handler(payload)` (default: "reply:" + payload), sent after a
  /// latency drawn from `latency` with `seed`.
  test_service(std::string endpoint, latency_model latency, std::uint64_t seed = 1,
               std::function<std::string(const std::string&)> handler = {});
  ~test_service();
  test_service(const test_service&) = delete;
  test_service& operator=(const test_service&) = delete;

  /// The bound endpoint, with the actual port.
  const std::string& endpoint() const noexcept;
  /// Requests answered so far.
  std::uint64_t served() const noexcept;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace tidemark::remote
