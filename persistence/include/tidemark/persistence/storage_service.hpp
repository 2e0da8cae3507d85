// The storage service of a node: owns the WiredTiger connection of tiered window state and the
// design's storage actor, a detached CAF actor that keeps block requests in its own priority queues
// (pre-stage > late/overflow writes > destage) and serves one block per step; FlatBuffers
// (de)serialization of blocks runs on a worker pool. Implements tidemark::block_storage.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tidemark/core/tiered_state.hpp"

namespace tidemark::persistence {

class wt_connection;

namespace detail {
struct io_item;  // a request (or what is left of it) waiting for its next step
class io_queue;
}  // namespace detail

/// Settings of a node's storage service.
struct storage_config {
  /// WiredTiger home of window state; empty: a temporary directory removed when the service ends.
  std::string data_dir;
  /// Block (de)serialization threads; 0: one per core.
  std::size_t serialization_threads = 0;
  /// Storage actors (each on its own thread): 1 serves requests in priority order. More (an
  /// ablation) serve them concurrently, each in arrival order without priorities; requests go to
  /// them round robin.
  std::size_t io_threads = 1;
  /// Node budget for window-state memory in bytes (0: none, so never any pressure).
  std::uint64_t memory_budget_bytes = 0;
  /// Moderate pressure above this fraction of the budget in use.
  double moderate_fraction = 0.7;
  /// Severe pressure when less than this fraction of the budget is free.
  double severe_free_fraction = 0.1;
  /// WiredTiger cache in MB (it is resident memory too).
  std::size_t cache_mb = 32;
  /// Tests: no storage actor; run_one() serves the next request on the caller's thread.
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

/// One step the storage actor served (recorded for tests and traces).
struct served_step {
  io_class cls;
  char op;  ///< 'w' write, 's' stage step, 'e' erase step
  std::uint64_t position;
};

/// Its storage actors run in an actor system of the service's own, started with WiredTiger when
/// the first store registers. The destructor drains every queued request (writes complete, their
/// callbacks run) before it returns. Do not let a service end during static destruction: a CAF
/// actor system cannot end there.
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
  std::int64_t headroom() const override;
  std::int64_t now_ms() const override;
  std::string last_write_error() const override;

  /// Manual mode: serves the highest-priority queued step; false when nothing is queued.
  bool run_one();
  /// Requests per class not finished yet (queued, in the storage actor's mailbox or in progress).
  std::size_t queued(io_class c) const;
  /// Blocks handed to the serialization workers that have not been sent to the storage actor yet.
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
  struct io_session;
  struct io_state;
  struct io_actors;

  void open();
  void spawn_actors();
  void enqueue(detail::io_item item);
  /// Serves one step of `item`; returns the item when it has more steps (back into its queue).
  std::optional<detail::io_item> step(detail::io_item item, io_session& s);
  /// One step of `item`; true when the request has more steps.
  bool serve(detail::io_item& item, io_session& s);
  void write_block(const detail::io_item& item, io_session& s);
  void worker_loop();
  void submit(std::function<void()> job);

  storage_config cfg_;
  std::int64_t epoch_ms_;
  mutable std::mutex open_m_;
  bool opened_ = false;
  bool temp_dir_ = false;
  std::string home_;
  std::shared_ptr<wt_connection> conn_;
  std::unique_ptr<io_actors> actors_;  // the storage actors and their actor system
  std::unique_ptr<io_session> manual_session_;

  mutable std::mutex io_m_;  // the manual queue, served_ and stats_
  std::unique_ptr<detail::io_queue> manual_queue_;
  std::atomic<std::size_t> pending_[3] = {};  // requests per class not finished yet
  std::vector<served_step> served_;
  storage_stats stats_;

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
