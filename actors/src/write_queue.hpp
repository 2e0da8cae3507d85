// A thread of its own that runs tasks in the order they are posted: the synced writes of a
// checkpoint store (the driver's pieces and records, a node's copies), so the thread that posts
// them (the embedded driver's loop, the coordinator's or a node's I/O loop with its heartbeats)
// never waits for the disk. A synced write can take seconds on a busy disk.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace tidemark::detail {

class write_queue {
 public:
  write_queue() : thread_([this] { run(); }) {}
  /// What is still queued is dropped (no checkpoint is recorded half); the running task ends.
  ~write_queue() {
    {
      std::lock_guard<std::mutex> lock{mutex_};
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  write_queue(const write_queue&) = delete;
  write_queue& operator=(const write_queue&) = delete;

  void post(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock{mutex_};
      tasks_.push_back(std::move(task));
      ++pending_;
    }
    wake_.notify_all();
  }
  /// Returns once every task posted so far ran.
  void drain() {
    std::unique_lock<std::mutex> lock{mutex_};
    idle_.wait(lock, [&] { return pending_ == 0; });
  }
  bool busy() {
    std::lock_guard<std::mutex> lock{mutex_};
    return pending_ > 0;
  }

 private:
  void run() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock{mutex_};
        wake_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
        if (stop_) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
      {
        std::lock_guard<std::mutex> lock{mutex_};
        --pending_;
      }
      idle_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<std::function<void()>> tasks_;
  std::size_t pending_ = 0;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the rest is there
};

}  // namespace tidemark::detail
