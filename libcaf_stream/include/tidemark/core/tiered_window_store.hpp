// The tiered (Aion) window store: every (window, key) has an m-bucket in memory and a p-bucket of
// blocks in the node's block_storage. The operator reads only memory: iteration hands out the
// m-bucket first while the p-bucket is staged behind it. Implements the standard policy (fill the
// m-bucket, overflow to the p-bucket, destage on expiry, late events to the p-bucket, pre-stage Δt
// ahead of re-executions, free staged events after each) plus ρ_min, τ and memory-pressure policies.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tidemark/core/state_block.hpp"
#include "tidemark/core/detail/flat_hash_map.hpp"
#include "tidemark/core/operator.hpp"
#include "tidemark/core/tiered_state.hpp"
#include "tidemark/core/window_store.hpp"

namespace tidemark {

template <class K, class T>
class tiered_window_store final : public window_store<K, T> {
 public:
  /// `allowed_lateness` lets the store predict when expired windows fire for the last time.
  tiered_window_store(tiered cfg, std::shared_ptr<block_storage> storage, event_time allowed_lateness)
      : cfg_(cfg), storage_(std::move(storage)), lateness_(allowed_lateness) {
    if (!storage_)
      throw std::invalid_argument(
          "tiered window state needs the node's storage service: run the job with tidemark::run "
          "(it supplies one) or pass a block_storage");
    if (cfg_.block_events == 0) throw std::invalid_argument("tiered{}.block_events must be > 0");
    if (cfg_.bootstrap_fraction < 0 || cfg_.bootstrap_fraction > 1)
      throw std::invalid_argument("tiered{}.bootstrap_fraction must be in [0, 1]");
    store_id_ = storage_->register_store();
  }

  ~tiered_window_store() override {
    // Callbacks reference only inbox_; wait for the writes in flight, then drop what is left.
    inbox_->wait_idle();
    drain(/*report_failures=*/false);
    for (auto& [serial, b] : buckets_)
      if (!b.blocks.empty()) erase_blocks(b);
    storage_->account(-inbox_->memory.load());
  }

  void append(const window_id& w, std::uint64_t h, const K& k, T x) override {
    drain();
    auto& b = bucket_of(w, h, k);
    b.last_activity_ms = storage_->now_ms();
    const auto fp = static_cast<std::int64_t>(event_footprint(x));
    if (!destaged_at_expiry(b) && b.blocks.empty() && b.tail.empty() && fits(b, fp)) {
      b.mem.push_back(std::move(x));
      b.mem_bytes += fp;
    } else {
      if (b.tail.empty()) {
        b.tail_pos = b.next_pos;
        b.tail_since_ms = b.last_activity_ms;
      }
      b.tail.push_back(std::move(x));
      b.tail_bytes += fp;
      if (b.tail.size() >= cfg_.block_events) seal_tail(b, io_class::write);
    }
    ++b.next_pos;
    add_memory(fp);
    if (++appends_ % 256 == 0) relieve_pressure();
  }

  std::unique_ptr<event_cursor<T>> events(const window_id& w, std::uint64_t h, const K& k) override {
    drain();
    bucket* b = find(w, h, k);
    if (b && on_disk(*b)) {
      if (b->staging) {
        ++(b->staging->finished() ? stats_.prestage_hits : stats_.prestage_misses);
      } else {
        start_stage(*b);
        ++stats_.demand_stages;
        stage_window(w);
      }
    }
    return std::make_unique<cursor>(*this, b);
  }

  void merge(const window_id& from, const window_id& into, std::uint64_t h, const K& k) override {
    std::vector<T> moved;
    {
      window_events<T> events{this->events(from, h, k)};
      for (const auto& x : events) moved.push_back(x);
    }
    purge(from, h, k);
    for (auto& x : moved) append(into, h, k, std::move(x));
  }

  void expire(const window_id& w, std::uint64_t h, const K& k) override {
    drain();
    if (bucket* b = find(w, h, k)) {
      b->expired = true;
      if (cfg_.destage_on_expiry) destage(*b, io_class::destage);
    }
  }

  void purge(const window_id& w, std::uint64_t h, const K& k) override {
    drain();
    auto it = index_.find(w);
    if (it == index_.end()) return;
    auto* serial = it->second.find(h, k);
    if (!serial) return;
    auto& b = buckets_.at(*serial);
    it->second.erase(h, k);
    if (it->second.empty()) index_.erase(it);
    release_staging(b);
    add_memory(-(b.mem_bytes + b.tail_bytes));
    b.mem = {};
    b.tail = {};
    b.mem_bytes = b.tail_bytes = 0;
    b.purged = true;
    finish_purge(b);
  }

  void expect_fire(const window_id& w, std::uint64_t h, const K& k, std::int64_t delay_ms) override {
    if (bucket* b = find(w, h, k)) {
      b->fire_at_ms = storage_->now_ms() + delay_ms;
      maybe_prestage(*b);
    }
  }

  void on_watermark(event_time wm) override {
    const auto now = storage_->now_ms();
    if (last_wm_ != std::numeric_limits<event_time>::min() && wm > last_wm_ && now > last_wm_ms_) {
      const double rate = static_cast<double>(wm - last_wm_) / static_cast<double>(now - last_wm_ms_);
      wm_rate_ = wm_rate_ > 0 ? 0.7 * wm_rate_ + 0.3 * rate : rate;
    }
    if (wm > last_wm_) {
      last_wm_ = wm;
      last_wm_ms_ = now;
    }
    tick();
  }

  std::int64_t tick_ms() const override {
    return cfg_.idle_destage_ms > 0 ? std::max<std::int64_t>(1, cfg_.idle_destage_ms / 4) : 50;
  }

  void tick() override {
    drain();
    const auto now = storage_->now_ms();
    for (auto& [serial, b] : buckets_) {
      if (b.purged) continue;
      if (b.expired && !b.tail.empty() && now - b.tail_since_ms >= cfg_.late_flush_ms)
        seal_tail(b, io_class::write);  // late events to disk
      if (cfg_.idle_destage_ms > 0 && !destaged_at_expiry(b) && !b.idle_destaged &&
          now - b.last_activity_ms >= cfg_.idle_destage_ms) {
        b.idle_destaged = true;
        destage(b, io_class::destage);
        ++stats_.idle_destages;
      }
      maybe_prestage(b);
    }
    relieve_pressure();
  }

  std::uint64_t memory_events() const override {
    std::uint64_t n = in_flight_events_;
    for (const auto& [serial, b] : buckets_) {
      n += b.mem.size() + b.tail.size();
      if (b.staging) {
        std::lock_guard<std::mutex> l(b.staging->m);
        n += b.staging->events;
      }
    }
    return n;
  }
  std::uint64_t memory_bytes() const override { return static_cast<std::uint64_t>(inbox_->memory.load()); }

  void add_metrics(std::map<std::string, double>& out) const override {
    auto put = [&](const char* name, double v) { out[name] = v; };
    put("state_memory_bytes", static_cast<double>(memory_bytes()));
    put("state_memory_events", static_cast<double>(memory_events()));
    put("state_disk_events", static_cast<double>(disk_events_));
    put("state_disk_bytes", static_cast<double>(disk_bytes_));
    put("state_stages", static_cast<double>(stats_.stages));
    put("state_stages_done", static_cast<double>(stats_.stages_done));
    put("state_demand_stages", static_cast<double>(stats_.demand_stages));
    put("state_window_stages", static_cast<double>(stats_.window_stages));
    put("state_prestage_hits", static_cast<double>(stats_.prestage_hits));
    put("state_prestage_misses", static_cast<double>(stats_.prestage_misses));
    put("state_stage_ms_mean", stats_.stages_done ? stats_.stage_ms_total / static_cast<double>(stats_.stages_done) : 0.0);
    put("state_stage_ms_max", stats_.stage_ms_max);
    put("state_destage_blocks", static_cast<double>(stats_.blocks[2]));
    put("state_write_blocks", static_cast<double>(stats_.blocks[1]));
    put("state_write_ms_mean", stats_.blocks_done ? stats_.write_ms_total / static_cast<double>(stats_.blocks_done) : 0.0);
    put("state_io_wait_ms", stats_.io_wait_ms);
    put("state_backpressure_ms", stats_.backpressure_ms);
    put("state_idle_destages", static_cast<double>(stats_.idle_destages));
    put("state_pressure_destages", static_cast<double>(stats_.pressure_destages));
    put("state_blocks_lost", static_cast<double>(stats_.blocks_lost));
    put("state_blocks_corrupt", static_cast<double>(inbox_->corrupt.load()));
    put("state_snapshot_block_reads", static_cast<double>(inbox_->snapshot_reads.load()));
    put("state_write_errors", static_cast<double>(stats_.write_errors));
  }

  /// Writes every (window, key) with all its events, those in memory and those on disk, plus the
  /// watermark speed that pre-staging predicts from. Throws job_error when a block cannot be read
  /// (the checkpoint would miss events), or when T has no codec.
  void snapshot(state_writer& out) override { capture(0)(out); }

  /// What snapshot would write, taken without waiting for the disk: the buckets' bookkeeping and
  /// their memory events are copied, blocks still in memory (written but not yet durable, or
  /// staged) are shared, and the blocks on disk are named by position. Writing the capture reads
  /// those from the storage service at `io_class::write`, below pre-staging, and no p-bucket it
  /// names is erased until it has been written or dropped: a purge in between defers the erase.
  state_capture capture(std::uint64_t) override {
    drain();
    auto buckets = std::make_shared<std::vector<captured_bucket>>();
    const auto now = storage_->now_ms();
    for (auto& entry : index_)
      entry.second.for_each_slot([&](std::size_t, std::uint64_t, const K&, std::uint64_t serial) {
        const auto& b = buckets_.at(serial);
        auto& c = buckets->emplace_back();
        c.w = b.w;
        c.h = b.h;
        c.key = b.key;
        c.expired = b.expired;
        c.idle_destaged = b.idle_destaged;
        c.fire_in = b.fire_at_ms >= 0 ? std::max<std::int64_t>(0, b.fire_at_ms - now) : -1;
        c.at = address(b);
        c.mem = b.mem;
        c.tail = b.tail;
        for (const auto& [pos, blk] : b.blocks) c.blocks.emplace_back(pos, blk.in_flight);
        if (b.staging) {
          std::lock_guard<std::mutex> l(b.staging->m);
          for (auto& [pos, data] : c.blocks)
            if (auto it = b.staging->blocks.find(pos); !data && it != b.staging->blocks.end())
              data = it->second;
        }
      });
    auto pin = std::make_shared<const erase_pin>(inbox_, storage_);
    return [buckets, pin, wm = last_wm_, rate = wm_rate_](state_writer& out) {
      out.write(wm);
      out.write(rate);
      out.write(static_cast<std::uint64_t>(buckets->size()));
      std::vector<T> events;
      for (const auto& c : *buckets) {
        out.write(c.w);
        out.write(c.h);
        out.write(c.key);
        out.write(c.expired);
        out.write(c.idle_destaged);
        out.write(c.fire_in);
        events = c.mem;
        const auto from_disk = read_blocks(*pin->storage, c);
        pin->in->snapshot_reads += from_disk.size();
        for (const auto& [pos, data] : c.blocks) {
          const auto& block = data ? *data : from_disk.at(pos);
          events.insert(events.end(), block.begin(), block.end());
        }
        events.insert(events.end(), c.tail.begin(), c.tail.end());
        out.write(events);
      }
    };
  }

  /// Rebuilds the buckets of a snapshot in this (empty) store: each bucket's events are appended
  /// again in their order, so a live window fills its m-bucket and overflows to new blocks, and an
  /// expired one goes to disk only if expire() would have put it there (destage on expiry; under
  /// the lazy policy it stays as it was, its open tail included). The blocks get this store's own
  /// addresses; p-buckets of the store that wrote the snapshot are not reused.
  void restore(state_reader& in) override {
    if (!buckets_.empty()) throw job_error("tiered window store: restore into a store in use");
    in.read(last_wm_);
    in.read(wm_rate_);
    last_wm_ms_ = storage_->now_ms();
    std::vector<T> events;
    for (auto n = detail::read_count(in); n > 0; --n) {
      const auto w = in.read<window_id>();
      const auto h = in.read<std::uint64_t>();
      const auto k = in.read<K>();
      auto& b = bucket_of(w, h, k);
      in.read(b.expired);
      in.read(b.idle_destaged);
      const auto fire_in = in.read<std::int64_t>();
      in.read(events);
      for (auto& x : events) append(w, h, k, std::move(x));
      if (destaged_at_expiry(b)) seal_tail(b, io_class::destage);
      if (fire_in >= 0) b.fire_at_ms = storage_->now_ms() + fire_in;
    }
  }

  /// Δt: how long before a predicted re-execution pre-staging starts, learned from past staging
  /// times weighted by the events staged. Before the first measurement it is pessimistic: one
  /// window length of processing time when the watermark's speed is known (the paper starts when
  /// the preceding window is purged), otherwise infinite (stage at once).
  double prestage_lead_ms(std::uint64_t events, event_time window_length = 0) const {
    if (stats_.staged_events == 0)
      return wm_rate_ > 0 && window_length > 0 ? static_cast<double>(window_length) / wm_rate_
                                               : std::numeric_limits<double>::infinity();
    return 1.5 * stats_.stage_ms_total / static_cast<double>(stats_.staged_events) *
               static_cast<double>(events) + 2.0;
  }

 private:
  using block_ptr = std::shared_ptr<const std::vector<T>>;

  /// Staged p-bucket blocks, filled by serialization workers.
  struct stage_ticket {
    std::mutex m;
    std::condition_variable cv;
    std::map<std::uint64_t, block_ptr> blocks;  // by position
    std::uint64_t events = 0;                   // in `blocks`
    bool done = false;
    bool released = false;  // the store dropped it: late deliveries are discarded
    std::int64_t started_ms = 0;
    // Bytes accounted at the start for the blocks still to come (their size on disk), so that
    // the budget sees a stage at once and stages that start together cannot overrun it; each
    // decoded block takes its footprint out of it, and what is left is returned at the end.
    std::int64_t reserved = 0;
    bool finished() {
      std::lock_guard<std::mutex> l(m);
      return done;
    }
  };

  /// What the service's threads report back; drained on the operator's thread.
  struct completion {
    std::uint64_t serial;
    std::uint64_t position;
    bool ok;
    std::uint64_t bytes;
    std::int64_t ms;
  };
  struct inbox {
    std::mutex m;
    std::condition_variable cv;
    std::vector<completion> done;
    std::uint64_t in_flight = 0;  // writes and stages not completed yet
    std::atomic<std::int64_t> memory{0};
    std::atomic<std::uint64_t> corrupt{0};
    std::atomic<std::uint64_t> snapshot_reads{0};  // blocks captures read back from disk
    std::uint32_t pins = 0;                     // captures not yet written (erase_pin)
    std::vector<bucket_address> deferred_erase; // p-buckets purged while pinned
    void wait_idle() {
      std::unique_lock<std::mutex> l(m);
      cv.wait(l, [&] { return in_flight == 0; });
    }
    void finish_one() {
      std::lock_guard<std::mutex> l(m);
      --in_flight;
      cv.notify_all();
    }
  };

  struct block_ref {
    std::uint32_t events = 0;
    std::uint64_t bytes = 0;      // on disk
    std::int64_t footprint = 0;   // in memory while in flight
    block_ptr in_flight;          // set until the write completed (then it is on disk)
    std::int64_t sealed_ms = 0;
  };

  struct bucket {
    window_id w;
    std::uint64_t h = 0;
    K key;
    std::uint64_t serial = 0;
    std::vector<T> mem;  // positions [0, mem.size())
    std::int64_t mem_bytes = 0;
    std::map<std::uint64_t, block_ref> blocks;  // the p-bucket, by first position
    std::uint64_t block_events = 0;             // in `blocks`
    std::int64_t disk_bytes = 0;                // of `blocks` written (not in flight)
    std::vector<T> tail;                        // the open p-bucket block, from tail_pos
    std::uint64_t tail_pos = 0;
    std::int64_t tail_bytes = 0;
    std::uint64_t next_pos = 0;
    std::uint32_t writes = 0;  // blocks in flight
    bool expired = false;
    bool purged = false;
    bool idle_destaged = false;
    std::int64_t last_activity_ms = 0;
    std::int64_t tail_since_ms = 0;  // when the open tail got its first event
    std::int64_t fire_at_ms = -1;  // predicted late re-execution (service clock)
    std::shared_ptr<stage_ticket> staging;
  };

  class cursor final : public event_cursor<T> {
   public:
    /// The staged blocks are freed afterwards.
    cursor(tiered_window_store& s, bucket* b) : s_(s), b_(b) {
      if (b_) next_block_ = b_->blocks.begin();
    }
    ~cursor() override {
      if (b_) s_.release_staging(*b_);
    }
    event_block<T> next() override {
      if (!b_) return {};
      if (phase_ == 0) {
        phase_ = 1;
        if (!b_->mem.empty()) return {b_->mem.data(), b_->mem.size()};
      }
      if (phase_ == 1) {
        while (next_block_ != b_->blocks.end()) {
          auto& [pos, blk] = *next_block_++;
          if (blk.in_flight) return {blk.in_flight->data(), blk.in_flight->size()};
          if (auto staged = s_.wait_for(*b_, pos)) return {staged->data(), staged->size()};
          complete_ = false;
          ++s_.stats_.blocks_lost;
        }
        phase_ = 2;
        if (!b_->tail.empty()) return {b_->tail.data(), b_->tail.size()};
      }
      return {};
    }
    bool complete() const override { return complete_; }

   private:
    tiered_window_store& s_;
    bucket* b_;
    int phase_ = 0;
    typename std::map<std::uint64_t, block_ref>::iterator next_block_;
    bool complete_ = true;
  };

  /// One bucket as capture() took it; a block's events are null when they are on disk only.
  struct captured_bucket {
    window_id w;
    std::uint64_t h = 0;
    K key;
    bool expired = false;
    bool idle_destaged = false;
    std::int64_t fire_in = -1;  // ms until the predicted re-execution, -1: none
    bucket_address at;
    std::vector<T> mem;
    std::vector<std::pair<std::uint64_t, block_ptr>> blocks;  // by position
    std::vector<T> tail;
  };

  /// Held by a capture until it is written or dropped: p-buckets purged meanwhile are erased
  /// only then, so the capture can still read the blocks it names.
  struct erase_pin {
    erase_pin(std::shared_ptr<inbox> in, std::shared_ptr<block_storage> s)
        : in(std::move(in)), storage(std::move(s)) {
      std::lock_guard<std::mutex> l(this->in->m);
      ++this->in->pins;
    }
    ~erase_pin() {
      std::vector<bucket_address> erase;
      {
        std::lock_guard<std::mutex> l(in->m);
        if (--in->pins == 0) erase.swap(in->deferred_erase);
      }
      for (const auto& a : erase) storage->erase(a);
    }
    std::shared_ptr<inbox> in;
    std::shared_ptr<block_storage> storage;
  };

  /// Erases a p-bucket, or defers it while a capture is pinned.
  void erase_blocks(const bucket& b) {
    {
      std::lock_guard<std::mutex> l(inbox_->m);
      if (inbox_->pins > 0) {
        inbox_->deferred_erase.push_back(address(b));
        return;
      }
    }
    storage_->erase(address(b));
  }

  /// The events of a staged payload; false when it is corrupt.
  static bool decode_staged(std::string_view payload, bool intact, std::vector<T>& events) {
    std::uint32_t count = 0;
    if (payload.size() >= sizeof count) std::memcpy(&count, payload.data(), sizeof count);
    return intact && decode_block(payload, count, events);
  }

  /// Reads the blocks of a captured bucket that are on disk only, on the calling thread (a
  /// snapshot writer), waiting for the storage service; throws job_error naming the window when
  /// one is missing or corrupt.
  static std::map<std::uint64_t, std::vector<T>> read_blocks(block_storage& storage,
                                                             const captured_bucket& c) {
    std::map<std::uint64_t, std::vector<T>> read;
    if (std::all_of(c.blocks.begin(), c.blocks.end(), [](const auto& b) { return b.second != nullptr; }))
      return read;
    struct reading {
      std::mutex m;
      std::condition_variable cv;
      std::map<std::uint64_t, std::vector<T>> blocks;
      bool done = false;
    };
    auto r = std::make_shared<reading>();
    storage.stage(
        c.at,
        [r](std::uint64_t pos, std::string_view payload, bool intact) {
          std::vector<T> events;
          if (!decode_staged(payload, intact, events)) return;
          std::lock_guard<std::mutex> l(r->m);
          r->blocks.emplace(pos, std::move(events));
        },
        [r] {
          {
            std::lock_guard<std::mutex> l(r->m);
            r->done = true;
          }
          r->cv.notify_all();
        },
        io_class::write);
    std::unique_lock<std::mutex> l(r->m);
    r->cv.wait(l, [&] { return r->done; });
    for (const auto& [pos, data] : c.blocks) {
      if (data) continue;
      auto it = r->blocks.find(pos);
      if (it == r->blocks.end())
        throw job_error("cannot checkpoint tiered window state: the block at position " +
                        std::to_string(pos) + " of window [" + std::to_string(c.w.start) + "," +
                        std::to_string(c.w.end) + ") could not be read back from disk");
      read.insert(r->blocks.extract(it));
    }
    return read;
  }

  struct statistics {
    std::uint64_t stages = 0, stages_done = 0, demand_stages = 0, window_stages = 0,
                  prestage_hits = 0, prestage_misses = 0;
    std::uint64_t staged_events = 0;
    double stage_ms_total = 0, stage_ms_max = 0;
    std::uint64_t blocks[3] = {};
    std::uint64_t blocks_done = 0;
    double write_ms_total = 0;
    double io_wait_ms = 0;
    double backpressure_ms = 0;  // the operator waited for writes under severe pressure
    std::uint64_t idle_destages = 0, pressure_destages = 0, blocks_lost = 0, write_errors = 0;
  };

  static constexpr std::uint64_t stage_done_position = std::numeric_limits<std::uint64_t>::max();

  bucket_address address(const bucket& b) const { return {store_id_, b.w, b.h, b.serial}; }

  bool fits(const bucket& b, std::int64_t fp) const {
    return (cfg_.memory_events == 0 || b.mem.size() < cfg_.memory_events) &&
           (cfg_.memory_bytes == 0 || static_cast<std::uint64_t>(b.mem_bytes + fp) <= cfg_.memory_bytes);
  }

  static bool on_disk(const bucket& b) { return b.disk_bytes > 0; }

  /// Whether expiry moved the bucket to disk (its late events then go to the p-bucket).
  bool destaged_at_expiry(const bucket& b) const { return b.expired && cfg_.destage_on_expiry; }

  void add_memory(std::int64_t bytes) {
    inbox_->memory += bytes;
    storage_->account(bytes);
  }

  bucket* find(const window_id& w, std::uint64_t h, const K& k) {
    auto it = index_.find(w);
    if (it == index_.end()) return nullptr;
    auto* serial = it->second.find(h, k);
    return serial ? &buckets_.at(*serial) : nullptr;
  }

  bucket& bucket_of(const window_id& w, std::uint64_t h, const K& k) {
    auto& serial = index_[w].find_or_insert(h, k, [&] {
      const auto s = next_serial_++;
      auto& b = buckets_[s];
      b.w = w;
      b.h = h;
      b.key = k;
      b.serial = s;
      return s;
    });
    return buckets_.at(serial);
  }

  /// Writes `events` (positions from `pos`) as one block of the p-bucket.
  void write_block(bucket& b, std::uint64_t pos, std::vector<T> events, std::int64_t footprint,
                   io_class cls) {
    auto data = std::make_shared<const std::vector<T>>(std::move(events));
    auto& blk = b.blocks[pos];
    blk.events = static_cast<std::uint32_t>(data->size());
    blk.footprint = footprint;
    blk.in_flight = data;
    blk.sealed_ms = storage_->now_ms();
    b.block_events += blk.events;
    in_flight_events_ += blk.events;
    in_flight_bytes_ += footprint;
    ++b.writes;
    ++writes_in_flight_;
    ++stats_.blocks[static_cast<int>(cls)];
    {
      std::lock_guard<std::mutex> l(inbox_->m);
      ++inbox_->in_flight;
    }
    // Callbacks run on the service's threads, so the service is alive while they do; a raw pointer
    // (not a shared_ptr) keeps the last reference from ever being dropped on its own thread.
    block_storage* storage = storage_.get();
    storage_->write(
        address(b), pos, blk.events, cls, [data] { return encode_block(data->data(), data->size()); },
        [in = inbox_, serial = b.serial, pos, storage](bool ok, std::uint64_t bytes) {
          {
            std::lock_guard<std::mutex> l(in->m);
            in->done.push_back({serial, pos, ok, bytes, storage->now_ms()});
          }
          in->finish_one();
        });
  }

  void seal_tail(bucket& b, io_class cls) {
    if (b.tail.empty()) return;
    const auto fp = b.tail_bytes;
    b.tail_bytes = 0;
    write_block(b, b.tail_pos, std::exchange(b.tail, {}), fp, cls);
  }

  /// Moves the m-bucket (but its ρ_min bootstrap prefix) and the open tail to the p-bucket, and
  /// frees its staged events unless `keep_staged`.
  void destage(bucket& b, io_class cls, bool keep_staged = false) {
    if (!keep_staged) release_staging(b);
    seal_tail(b, cls);
    const auto keep = static_cast<std::size_t>(cfg_.bootstrap_fraction * static_cast<double>(b.mem.size()));
    if (b.mem.size() <= keep) return;
    for (std::size_t from = keep; from < b.mem.size(); from += cfg_.block_events) {
      const auto to = std::min<std::size_t>(b.mem.size(), from + cfg_.block_events);
      std::vector<T> block(std::make_move_iterator(b.mem.begin() + from),
                           std::make_move_iterator(b.mem.begin() + to));
      std::int64_t fp = 0;
      for (const auto& x : block) fp += static_cast<std::int64_t>(event_footprint(x));
      b.mem_bytes -= fp;
      write_block(b, from, std::move(block), fp, cls);
    }
    b.mem.resize(keep);
    b.mem.shrink_to_fit();
  }

  void start_stage(bucket& b) {
    auto t = std::make_shared<stage_ticket>();
    t->started_ms = storage_->now_ms();
    t->reserved = b.disk_bytes;
    add_memory(t->reserved);
    b.staging = t;
    ++stats_.stages;
    {
      std::lock_guard<std::mutex> l(inbox_->m);
      ++inbox_->in_flight;
    }
    block_storage* storage = storage_.get();  // see write_block
    auto in = inbox_;
    storage_->stage(
        address(b),
        [t, in, storage](std::uint64_t pos, std::string_view payload, bool intact) {
          // Runs on a serialization worker: decode, account, publish.
          std::vector<T> events;
          if (!decode_staged(payload, intact, events)) {
            ++in->corrupt;
            return;
          }
          std::int64_t fp = 0;
          for (const auto& x : events) fp += static_cast<std::int64_t>(event_footprint(x));
          {
            std::lock_guard<std::mutex> l(t->m);
            const auto n = events.size();
            if (t->released ||
                !t->blocks.emplace(pos, std::make_shared<const std::vector<T>>(std::move(events))).second)
              return;
            t->events += n;
            const auto reserved = std::min(fp, t->reserved);
            t->reserved -= reserved;
            fp -= reserved;
            in->memory += fp;  // under the lock, so release_staging sees it
          }
          storage->account(fp);
        },
        [t, in, storage, serial = b.serial] {
          std::int64_t left = 0;
          {
            std::lock_guard<std::mutex> l(t->m);
            t->done = true;
            left = std::exchange(t->reserved, 0);
            in->memory -= left;
          }
          storage->account(-left);
          t->cv.notify_all();
          {
            std::lock_guard<std::mutex> l(in->m);
            in->done.push_back({serial, stage_done_position, true, 0, storage->now_ms() - t->started_ms});
          }
          in->finish_one();
        },
        io_class::prestage);
  }

  /// A firing reads every key of its window in turn: when one had to be staged on demand, the
  /// window's other buckets on disk are staged at once, so their reads overlap the firing's work
  /// instead of each waiting in turn (a window destaged under memory pressure before its on-time
  /// firing read back 200 keys one after the other). Only those that fit the headroom below
  /// severe pressure, which each stage's reservation takes as soon as it starts.
  void stage_window(const window_id& w) {
    auto it = index_.find(w);
    if (it == index_.end()) return;
    it->second.for_each_slot([&](std::size_t, std::uint64_t, const K&, std::uint64_t serial) {
      auto& o = buckets_.at(serial);
      if (!o.staging && on_disk(o) && o.disk_bytes <= storage_->headroom()) {
        start_stage(o);
        ++stats_.window_stages;
      }
    });
  }

  /// The staged block at `pos`, waiting for staging to deliver it; null when it cannot.
  const std::vector<T>* wait_for(bucket& b, std::uint64_t pos) {
    if (!b.staging) start_stage(b);
    auto& t = *b.staging;
    std::unique_lock<std::mutex> l(t.m);
    auto has = [&] { return t.blocks.count(pos) > 0 || t.done; };
    if (!has()) {
      const auto start = std::chrono::steady_clock::now();
      t.cv.wait(l, has);
      stats_.io_wait_ms +=
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    }
    auto it = t.blocks.find(pos);
    return it == t.blocks.end() ? nullptr : it->second.get();
  }

  /// Frees staged events (after a re-execution, on destage, on purge).
  void release_staging(bucket& b) {
    if (!b.staging) return;
    std::int64_t fp = 0;
    {
      std::lock_guard<std::mutex> l(b.staging->m);
      b.staging->released = true;
      for (const auto& [pos, data] : b.staging->blocks)
        for (const auto& x : *data) fp += static_cast<std::int64_t>(event_footprint(x));
      fp += std::exchange(b.staging->reserved, 0);
    }
    b.staging.reset();
    b.fire_at_ms = -1;
    add_memory(-fp);
  }

  /// Pre-stages an expired bucket Δt ahead of its predicted re-execution: the late trigger's
  /// next firing, or the last one when its allowed lateness ends (watermark speed). Only when
  /// its blocks fit the headroom below severe memory pressure: a pre-stage that pushed memory into
  /// severe pressure made the operator wait for destages (128 MB windows, K = 10: 2.5 s of back
  /// pressure, processing at 0.58 x the rate without pre-staging). The re-execution then stages
  /// what it reads.
  void maybe_prestage(bucket& b) {
    if (!cfg_.prestage || !b.expired || b.purged || b.staging || !on_disk(b) ||
        b.disk_bytes > storage_->headroom())
      return;
    const auto now = storage_->now_ms();
    double due_in = std::numeric_limits<double>::infinity();
    if (b.fire_at_ms >= 0) due_in = static_cast<double>(b.fire_at_ms - now);
    if (wm_rate_ > 0 && last_wm_ != std::numeric_limits<event_time>::min()) {
      const auto final_at = b.w.end > end_of_time - lateness_ ? end_of_time : b.w.end + lateness_;
      due_in = std::min(due_in, static_cast<double>(final_at - last_wm_) / wm_rate_ -
                                    static_cast<double>(now - last_wm_ms_));
    }
    if (due_in == std::numeric_limits<double>::infinity()) return;
    if (due_in <= prestage_lead_ms(b.block_events, b.w.end - b.w.start)) start_stage(b);
  }

  /// Global policies under the node's memory budget: moderate pressure destages this store's
  /// windows (largest or least active first) until a quarter of its memory is on its way out;
  /// severe pressure destages everything but the ρ_min bootstrap sets. Staged events stay: they
  /// were staged for a re-execution that is due and are freed after it, so freeing them earlier
  /// only moves the read into the re-execution — and a pre-stage started again at the next
  /// watermark would be freed again 256 events later, pressure and pre-staging taking turns at
  /// reading the same window (at 128 MB windows this cut the ingestion rate tenfold). A pre-stage
  /// starts only within the headroom below severe pressure (maybe_prestage). Moderate pressure
  /// destages only buckets with a block's worth of events in memory: pressure that stays while
  /// earlier destages are being written would otherwise seal every key's few newest events into a
  /// block of their own every 256 appends.
  void relieve_pressure() {
    const auto p = storage_->pressure();
    if (p == memory_pressure::none) return;
    const bool severe = p == memory_pressure::severe;
    std::vector<bucket*> candidates;
    for (auto& [serial, b] : buckets_) {
      const auto keep = static_cast<std::size_t>(cfg_.bootstrap_fraction * static_cast<double>(b.mem.size()));
      const auto in_memory = b.mem.size() - keep + b.tail.size();
      if (!b.purged && in_memory > 0 && (severe || in_memory >= cfg_.block_events))
        candidates.push_back(&b);
    }
    if (p == memory_pressure::moderate) {
      // Expired windows first: they are read again only by their late re-execution. Of those,
      // the latest window first: its re-execution is the farthest away (Belady's choice), so the
      // windows that re-execute next stay and fire from memory, and a budget that holds a few of
      // the K past windows spares those few the write and the read. Open windows after them, in
      // the configured order.
      std::sort(candidates.begin(), candidates.end(), [this](bucket* a, bucket* b) {
        if (a->expired != b->expired) return a->expired;
        if (a->expired) return b->w < a->w;
        if (cfg_.order == pressure_order::largest_first) return a->mem_bytes > b->mem_bytes;
        return a->last_activity_ms < b->last_activity_ms;
      });
    }
    const std::int64_t goal =
        severe ? std::numeric_limits<std::int64_t>::max() : inbox_->memory.load() / 4;
    // Blocks on their way to disk count as released: their events leave memory when the writes
    // complete, and destaging more while they are written sent windows to disk that fit.
    std::int64_t released = severe ? 0 : in_flight_bytes_;
    for (auto* b : candidates) {
      if (released >= goal) break;
      released += b->mem_bytes + b->tail_bytes;
      destage(*b, io_class::destage, true);
      ++stats_.pressure_destages;
    }
    if (severe) await_writes();
  }

  /// Destage back pressure: under severe pressure, while blocks of this store are on their way to
  /// disk, the operator waits for their writes (their events leave memory as they complete), so
  /// ingestion slows to the disk's pace instead of memory growing past the budget.
  void await_writes() {
    while (writes_in_flight_ > 0 && storage_->pressure() == memory_pressure::severe) {
      const auto start = std::chrono::steady_clock::now();
      {
        std::unique_lock<std::mutex> l(inbox_->m);
        inbox_->cv.wait_for(l, std::chrono::milliseconds(10),
                            [&] { return !inbox_->done.empty(); });
      }
      drain();
      stats_.backpressure_ms +=
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
    }
  }

  /// Applies what the service's threads reported: finished writes and stages. A block the
  /// service could not write (it retried already) throws job_error, unless `report_failures` is
  /// off: its events are still in memory, but a disk that fails writes would leave memory to grow
  /// without bound and the next checkpoint or commit to fail, so the job stops with the cause.
  void drain(bool report_failures = true) {
    std::vector<completion> done;
    {
      std::lock_guard<std::mutex> l(inbox_->m);
      if (inbox_->done.empty()) return;
      done.swap(inbox_->done);
    }
    const bucket* failed = nullptr;
    for (const auto& c : done) {
      auto it = buckets_.find(c.serial);
      if (c.position == stage_done_position) {
        ++stats_.stages_done;
        stats_.stage_ms_total += static_cast<double>(c.ms);
        stats_.stage_ms_max = std::max(stats_.stage_ms_max, static_cast<double>(c.ms));
        if (it != buckets_.end()) stats_.staged_events += it->second.block_events;
        continue;
      }
      --writes_in_flight_;
      if (it == buckets_.end()) continue;
      auto& b = it->second;
      --b.writes;
      auto blk = b.blocks.find(c.position);
      if (blk != b.blocks.end()) {
        if (c.ok) {
          ++stats_.blocks_done;
          stats_.write_ms_total += static_cast<double>(c.ms - blk->second.sealed_ms);
          blk->second.bytes = c.bytes;
          b.disk_bytes += static_cast<std::int64_t>(c.bytes);
          in_flight_events_ -= blk->second.events;
          in_flight_bytes_ -= blk->second.footprint;
          disk_events_ += blk->second.events;
          disk_bytes_ += c.bytes;
          if (b.staging) {  // keep it visible to the staging that may have passed its position
            std::lock_guard<std::mutex> l(b.staging->m);
            if (b.staging->blocks.emplace(c.position, blk->second.in_flight).second) {
              b.staging->events += blk->second.events;
              blk->second.footprint = 0;  // the staged copy keeps accounting for it
            }
          }
          add_memory(-blk->second.footprint);
          blk->second.in_flight.reset();
        } else {
          ++stats_.write_errors;  // the events stay in memory
          failed = &b;
        }
      }
      if (b.purged) {
        if (failed == &b) failed = nullptr;  // nobody reads a purged bucket again
        finish_purge(b);
      }
    }
    if (failed && report_failures)
      throw job_error("tiered window store: a block of window [" + std::to_string(failed->w.start) +
                      "," + std::to_string(failed->w.end) +
                      ") could not be written: " + storage_->last_write_error());
  }

  /// Erases a purged bucket's p-bucket once its writes completed.
  void finish_purge(bucket& b) {
    if (b.writes > 0) return;
    for (const auto& [pos, blk] : b.blocks)
      if (blk.in_flight) {
        add_memory(-blk.footprint);
        in_flight_events_ -= blk.events;
        in_flight_bytes_ -= blk.footprint;
      } else {
        disk_events_ -= blk.events;
        disk_bytes_ -= blk.bytes;
      }
    if (!b.blocks.empty()) erase_blocks(b);
    buckets_.erase(b.serial);
  }

  tiered cfg_;
  std::shared_ptr<block_storage> storage_;
  event_time lateness_;
  std::uint64_t store_id_ = 0;
  std::shared_ptr<inbox> inbox_ = std::make_shared<inbox>();
  std::map<window_id, detail::flat_hash_map<K, std::uint64_t>> index_;
  std::unordered_map<std::uint64_t, bucket> buckets_;
  std::uint64_t next_serial_ = 1;
  std::uint64_t appends_ = 0;
  std::uint64_t writes_in_flight_ = 0;  // blocks written and not completed yet
  std::int64_t in_flight_bytes_ = 0;    // their footprint
  std::uint64_t in_flight_events_ = 0;  // events of those blocks (they are in memory)
  std::uint64_t disk_events_ = 0, disk_bytes_ = 0;  // of written blocks of live buckets
  event_time last_wm_ = std::numeric_limits<event_time>::min();
  std::int64_t last_wm_ms_ = 0;
  double wm_rate_ = 0;  // event-time ms per processing-time ms
  statistics stats_;
};

}  // namespace tidemark
