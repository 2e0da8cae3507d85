// The test service: a ROUTER socket on one thread; every request is answered after its drawn
// latency, from a queue ordered by due time, so replies overtake each other.
#include "tidemark/remote/test_service.hpp"

#include <atomic>
#include <queue>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include <zmq.hpp>

namespace tidemark::remote {

latency_model latency_model::parse(const std::string& text) {
  auto fail = [&] {
    return std::invalid_argument("latency '" + text +
                                 "': expected fixed:US, uniform:LO:HI or exp:MEAN (microseconds)");
  };
  std::vector<std::string> parts;
  std::size_t from = 0;
  for (auto at = text.find(':'); ; at = text.find(':', from)) {
    parts.push_back(text.substr(from, at == std::string::npos ? std::string::npos : at - from));
    if (at == std::string::npos) break;
    from = at + 1;
  }
  latency_model m;
  try {
    if (parts[0] == "fixed" && parts.size() == 2) {
      m.shape = kind::fixed;
      m.a = std::stod(parts[1]);
    } else if (parts[0] == "uniform" && parts.size() == 3) {
      m.shape = kind::uniform;
      m.a = std::stod(parts[1]);
      m.b = std::stod(parts[2]);
      if (m.b < m.a) throw fail();
    } else if (parts[0] == "exp" && parts.size() == 2) {
      m.shape = kind::exponential;
      m.a = std::stod(parts[1]);
      if (m.a <= 0) throw fail();
    } else {
      throw fail();
    }
  } catch (const std::logic_error&) {
    throw fail();
  }
  if (m.a < 0) throw fail();
  return m;
}

struct test_service::impl {
  using clock = std::chrono::steady_clock;
  struct reply {
    clock::time_point due;
    std::string identity, seq, body;
    bool operator>(const reply& o) const { return due > o.due; }
  };

  latency_model latency;
  std::mt19937_64 rng;
  std::function<std::string(const std::string&)> handler;
  zmq::context_t ctx{1};
  zmq::socket_t socket{ctx, zmq::socket_type::router};
  std::string endpoint;
  std::atomic<bool> stopping{false};
  std::atomic<std::uint64_t> served{0};
  std::thread thread;

  std::chrono::microseconds draw() {
    double us = latency.a;
    if (latency.shape == latency_model::kind::uniform)
      us = std::uniform_real_distribution<double>(latency.a, latency.b)(rng);
    else if (latency.shape == latency_model::kind::exponential)
      us = std::exponential_distribution<double>(1.0 / latency.a)(rng);
    return std::chrono::microseconds(static_cast<std::int64_t>(us));
  }

  void run() {
    std::priority_queue<reply, std::vector<reply>, std::greater<>> due;
    while (!stopping) {
      auto wait = std::chrono::milliseconds(50);
      if (!due.empty())
        wait = std::max(std::chrono::milliseconds(0),
                        std::chrono::duration_cast<std::chrono::milliseconds>(due.top().due - clock::now()));
      zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::min(wait, std::chrono::milliseconds(50)));
      for (;;) {
        zmq::message_t id, seq, body;
        if (!socket.recv(id, zmq::recv_flags::dontwait)) break;
        if (!id.more() || !socket.recv(seq) || !seq.more() || !socket.recv(body)) continue;
        due.push({clock::now() + draw(), id.to_string(), seq.to_string(),
                  handler ? handler(body.to_string()) : "reply:" + body.to_string()});
      }
      // poll's millisecond resolution: spin on the sub-millisecond rest
      while (!due.empty() && due.top().due <= clock::now() + std::chrono::microseconds(200)) {
        while (clock::now() < due.top().due) std::this_thread::yield();
        const auto& r = due.top();
        ++served;  // before the reply leaves: a client that has every reply sees the full count
        socket.send(zmq::buffer(r.identity), zmq::send_flags::sndmore);
        socket.send(zmq::buffer(r.seq), zmq::send_flags::sndmore);
        socket.send(zmq::buffer(r.body), zmq::send_flags::none);
        due.pop();
      }
    }
  }
};

test_service::test_service(std::string endpoint, latency_model latency, std::uint64_t seed,
                           std::function<std::string(const std::string&)> handler)
    : impl_(std::make_unique<impl>()) {
  impl_->latency = latency;
  impl_->rng.seed(seed);
  impl_->handler = std::move(handler);
  try {
    impl_->socket.set(zmq::sockopt::linger, 0);
    impl_->socket.bind(endpoint);
  } catch (const zmq::error_t& e) {
    throw std::runtime_error("test service cannot bind '" + endpoint + "': " + e.what());
  }
  impl_->endpoint = impl_->socket.get(zmq::sockopt::last_endpoint);
  impl_->thread = std::thread([i = impl_.get()] { i->run(); });
}

test_service::~test_service() {
  impl_->stopping = true;
  impl_->thread.join();
}

const std::string& test_service::endpoint() const noexcept { return impl_->endpoint; }
std::uint64_t test_service::served() const noexcept { return impl_->served; }

}  // namespace tidemark::remote
