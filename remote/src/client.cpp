// The ZeroMQ request client: a DEALER socket and an eventfd owned by one I/O thread. Callers
// queue requests under a mutex and poke the eventfd; the thread sends them, matches replies by
// sequence number and fails requests whose deadline passed.
#include "tidemark/remote/client.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <zmq.hpp>

namespace tidemark::remote {

struct client::impl {
  using clock = std::chrono::steady_clock;
  struct request {
    std::uint64_t seq;
    std::string payload;
    std::function<void(std::string)> done;
    std::function<void(std::string)> failed;
  };
  struct waiting {
    clock::time_point deadline;
    std::function<void(std::string)> done;
    std::function<void(std::string)> failed;
  };

  std::string endpoint;
  std::chrono::milliseconds timeout;
  zmq::context_t ctx{1};
  zmq::socket_t socket{ctx, zmq::socket_type::dealer};
  int wake_fd = -1;
  std::mutex mutex;
  std::deque<request> outbox;
  std::uint64_t next_seq = 0;
  std::atomic<bool> stopping{false};
  std::thread io;

  void run() {
    std::map<std::uint64_t, waiting> in_flight;
    while (!stopping) {
      zmq::pollitem_t items[] = {{socket.handle(), 0, ZMQ_POLLIN, 0}, {nullptr, wake_fd, ZMQ_POLLIN, 0}};
      zmq::poll(items, 2, std::chrono::milliseconds(in_flight.empty() ? 100 : 5));
      if (items[1].revents & ZMQ_POLLIN) {
        std::uint64_t n;
        (void)!::read(wake_fd, &n, sizeof n);
      }
      std::deque<request> sending;
      {
        std::lock_guard<std::mutex> lock{mutex};
        sending.swap(outbox);
      }
      for (auto& r : sending) {
        socket.send(zmq::buffer(&r.seq, sizeof r.seq), zmq::send_flags::sndmore);
        socket.send(zmq::buffer(r.payload), zmq::send_flags::none);
        in_flight.emplace(r.seq, waiting{clock::now() + timeout, std::move(r.done), std::move(r.failed)});
      }
      for (;;) {
        zmq::message_t seq_part, reply;
        if (!socket.recv(seq_part, zmq::recv_flags::dontwait)) break;
        if (!seq_part.more() || !socket.recv(reply, zmq::recv_flags::none)) continue;
        if (seq_part.size() != sizeof(std::uint64_t)) continue;
        std::uint64_t seq;
        std::memcpy(&seq, seq_part.data(), sizeof seq);
        auto it = in_flight.find(seq);
        if (it == in_flight.end()) continue;  // late reply to a request that timed out
        auto done = std::move(it->second.done);
        in_flight.erase(it);
        done(reply.to_string());
      }
      auto now = clock::now();
      for (auto it = in_flight.begin(); it != in_flight.end();) {
        if (it->second.deadline > now) {
          ++it;
          continue;
        }
        it->second.failed("no reply from " + endpoint + " within " +
                          std::to_string(timeout.count()) + " ms");
        it = in_flight.erase(it);
      }
    }
  }
};

client::client(std::string endpoint, std::chrono::milliseconds timeout)
    : impl_(std::make_unique<impl>()) {
  impl_->endpoint = std::move(endpoint);
  impl_->timeout = timeout;
  try {
    impl_->socket.set(zmq::sockopt::linger, 0);
    impl_->socket.connect(impl_->endpoint);
  } catch (const zmq::error_t& e) {
    throw std::runtime_error("cannot connect to '" + impl_->endpoint + "': " + e.what());
  }
  impl_->wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (impl_->wake_fd < 0) throw std::runtime_error("remote client: eventfd failed");
  impl_->io = std::thread([i = impl_.get()] { i->run(); });
}

client::~client() {
  impl_->stopping = true;
  std::uint64_t one = 1;
  (void)!::write(impl_->wake_fd, &one, sizeof one);
  impl_->io.join();
  ::close(impl_->wake_fd);
}

void client::call(std::string payload, std::function<void(std::string)> done,
                  std::function<void(std::string)> failed) {
  {
    std::lock_guard<std::mutex> lock{impl_->mutex};
    impl_->outbox.push_back({impl_->next_seq++, std::move(payload), std::move(done), std::move(failed)});
  }
  std::uint64_t one = 1;
  (void)!::write(impl_->wake_fd, &one, sizeof one);
}

const std::string& client::endpoint() const noexcept { return impl_->endpoint; }

}  // namespace tidemark::remote
