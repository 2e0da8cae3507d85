// The storage service of a node: owns the WiredTiger connection of tiered window state and one
// I/O thread that serves block requests in priority order (pre-stage > late/overflow writes >
// destage), one block per step; FlatBuffers (de)serialization of blocks runs on a worker pool.
// It plays the design's "storage actor" as a dedicated thread with a priority queue (CAF 0.17
// mailboxes cannot reorder by priority). Implements tidemark::block_storage.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tidemark/core/tiered_state.hpp"

namespace tidemark::persistence {

class wt_connection;

/// Settings of a node's storage service.
struct storage_config {
  /// WiredTiger home of window state; empty: a temporary directory removed when the service ends.
  std::string data_dir;
  /// Block (de)serialization threads; 0: one per core.
  std::size_t serialization_threads = 0;
  /// I/O threads: 1 serves requests in priority order. More (an ablation) serve them concurrently
  /// in arrival order, without priorities.
  std::size_t io_threads = 1;
  /// Node budget for window-state memory in bytes (0: none, so never any pressure).
  std::uint64_t memory_budget_bytes = 0;
  /// Moderate pressure above this fraction of the budget in use.
  double moderate_fraction = 0.7;
  /// Severe pressure when less than this fraction of the budget is free.
  double severe_free_fraction = 0.1;
  /// WiredTiger cache in MB (it is resident memory too).
  std::size_t cache_mb = 32;
  /// Tests: no I/O thread; run_one() serves the next request on the caller's thread.
  bool manual_io = false;
  /// Tries of a block write before it is reported failed (a failing disk); the n-th retry
  /// waits n times `write_retry_pause` first.
  std::uint32_t write_attempts = 3;
  std::chrono::milliseconds write_retry_pause{10};
};

/// Counters of the service, per I/O class where that applies.
struct storage_stats {
  std::uint64_t served[3] = {};        ///< I/O steps per io_class
  double queue_ms_total[3] = {};       ///< time requests waited in the queue, per class
  double queue_ms_max[3] = {};
  std::uint64_t bytes_written = 0;
  std::uint64_t bytes_read = 0;
  std::uint64_t corrupt_blocks = 0;    ///< records that failed verification when staged
  std::uint64_t write_errors = 0;      ///< blocks not written after write_attempts tries
  std::uint64_t write_retries = 0;
  std::string last_write_error;
  std::int64_t memory_used = 0;        ///< window-state bytes accounted by the stores
  std::int64_t memory_peak = 0;
};

/// One step the I/O thread served (recorded for tests and traces).
struct served_step {
  io_class cls;
  char op;  ///< 'w' write, 's' stage step, 'e' erase step
  std::uint64_t position;
};

class storage_service final : public block_storage {
 public:
  explicit storage_service(storage_config cfg = {});
  ~storage_service() override;
  storage_service(const storage_service&) = delete;
  storage_service& operator=(const storage_service&) = delete;

  std::uint64_t register_store() override;
  void write(const bucket_address& b, std::uint64_t position, std::uint32_t events, io_class cls,
             std::function<std::string()> encode,
             std::function<void(bool ok, std::uint64_t bytes)> done) override;
  void stage(const bucket_address& b, block_fn on_block, std::function<void()> done,
             io_class cls) override;
  void erase(const bucket_address& b) override;
  void account(std::int64_t delta) override;
  memory_pressure pressure() const override;
  std::int64_t now_ms() const override;
  std::string last_write_error() const override;

  /// Manual mode: serves the highest-priority queued step; false when nothing is queued.
  bool run_one();
  /// Requests queued per class (steps of requests in progress included).
  std::size_t queued(io_class c) const;
  /// Blocks handed to the serialization workers that have not reached the I/O queue yet.
  std::size_t serializing() const;
  /// The steps served so far, in order (recorded in manual mode only).
  std::vector<served_step> served() const;
  storage_stats stats() const;
  /// The WiredTiger home (empty before the first store registered).
  std::string home() const;

  /// Fault injection: overwrite the stored record of a block with `bytes`, or remove it.
  void overwrite_block(const bucket_address& b, std::uint64_t position, const std::string& bytes);
  void remove_block(const bucket_address& b, std::uint64_t position);

 private:
  struct stage_request;
  struct io_item;
  struct io_session;

  void open();
  void enqueue(io_item item);
  void serve(io_item& item, io_session& s);
  /// serve() with the step counted in queued() until it returns.
  void serve_counted(io_item& item, io_session& s);
  void write_block(const io_item& item, io_session& s);
  void io_loop();
  void worker_loop();
  void submit(std::function<void()> job);

  storage_config cfg_;
  std::int64_t epoch_ms_;
  mutable std::mutex open_m_;
  bool opened_ = false;
  bool temp_dir_ = false;
  std::string home_;
  std::shared_ptr<wt_connection> conn_;
  std::unique_ptr<io_session> manual_session_;

  mutable std::mutex io_m_;
  std::condition_variable io_cv_;
  std::deque<io_item> queues_[3];
  std::size_t serving_[3] = {0, 0, 0};  // steps taken off a queue whose serve() has not returned
  bool stopping_ = false;
  std::vector<served_step> served_;
  storage_stats stats_;
  std::vector<std::thread> io_threads_;

  mutable std::mutex work_m_;
  std::condition_variable work_cv_;
  std::deque<std::function<void()>> work_;
  std::size_t serializing_ = 0;
  bool workers_stopping_ = false;
  std::vector<std::thread> workers_;

  std::atomic<std::uint64_t> next_store_{1};
  std::atomic<std::int64_t> memory_{0};
  std::atomic<std::int64_t> memory_peak_{0};
};

}  // namespace tidemark::persistence
