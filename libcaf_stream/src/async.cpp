// The worker pool behind blocking async operators (async.hpp).
#include "tidemark/core/async.hpp"

#include <condition_variable>
#include <thread>

namespace tidemark {

struct worker_pool::state {
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<std::function<void(std::size_t)>> tasks;
  bool stopping = false;
  std::vector<std::thread> threads;

  void run(std::size_t worker) {
    for (;;) {
      std::function<void(std::size_t)> task;
      {
        std::unique_lock<std::mutex> lock{mutex};
        ready.wait(lock, [&] { return stopping || !tasks.empty(); });
        if (stopping) return;
        task = std::move(tasks.front());
        tasks.pop_front();
      }
      task(worker);
    }
  }
};

worker_pool::worker_pool(std::size_t threads) : s_(std::make_unique<state>()) {
  for (std::size_t i = 0; i < std::max<std::size_t>(1, threads); ++i)
    s_->threads.emplace_back([s = s_.get(), i] { s->run(i); });
}

// Tasks not started yet are dropped: the operator that owns the pool is gone.
worker_pool::~worker_pool() {
  {
    std::lock_guard<std::mutex> lock{s_->mutex};
    s_->stopping = true;
  }
  s_->ready.notify_all();
  for (auto& t : s_->threads) t.join();
}

void worker_pool::submit(std::function<void(std::size_t)> task) {
  {
    std::lock_guard<std::mutex> lock{s_->mutex};
    s_->tasks.push_back(std::move(task));
  }
  s_->ready.notify_one();
}

}  // namespace tidemark
