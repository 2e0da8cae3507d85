// The remote call operator: each element becomes a request to a service over ZeroMQ; up to
// `concurrency` requests per instance are in flight and complete out of order, so the operator
// is delayed and the rest of the job is synchronized (docs/timezones.md).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <type_traits>

#include "tidemark/core/job.hpp"
#include "tidemark/remote/client.hpp"

namespace tidemark::remote {

struct call_options {
  std::uint32_t concurrency = 16;
  /// A request without a reply after this long fails the element (and the job, unless skipped).
  std::chrono::milliseconds timeout{5000};
};

/// Sends `encode(x)` to `endpoint` for each element x and emits `decode(x, reply)`.
template <class T, class Encode, class Decode>
auto remote_call(const stream<T>& in, std::string endpoint, Encode encode, Decode decode,
                 call_options opts = {}, std::string name = "") {
  static_assert(std::is_invocable_r_v<std::string, Encode&, const T&>,
                "remote_call(..., encode, ...): encode must be callable as encode(const T&) and "
                "return the request (std::string)");
  static_assert(std::is_invocable_v<Decode&, const T&, std::string>,
                "remote_call(..., decode): decode must be callable as decode(const T&, "
                "std::string reply)");
  using U = std::decay_t<std::invoke_result_t<Decode&, const T&, std::string>>;
  auto s = in.template transform<U>(
      "remote_call",
      [endpoint, encode, decode, opts](const instance_info&) {
        auto c = std::make_shared<client>(endpoint, opts.timeout);
        auto start = [c, encode, decode](const T& x, async_result<U> r) {
          auto shared = std::make_shared<async_result<U>>(std::move(r));
          c->call(encode(x),
                  [shared, x, decode](std::string reply) mutable {
                    try {
                      shared->complete(decode(x, std::move(reply)));
                    } catch (const std::exception& e) {
                      shared->fail(e.what());
                    }
                  },
                  [shared](std::string what) { shared->fail(std::move(what)); });
        };
        return std::make_unique<ops::async_logic<T, U, decltype(start)>>(start, opts.concurrency);
      },
      std::move(name));
  s.delayed(opts.concurrency);
  return s;
}

}  // namespace tidemark::remote
