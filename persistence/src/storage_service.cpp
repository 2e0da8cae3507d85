// The node's storage service: WiredTiger table of p-bucket blocks, the storage actor (a detached
// CAF actor with its own priority queues, one block per step, so a long destage yields to a
// pre-stage between blocks) and the pool of serialization workers that build and verify the
// FlatBuffers records.
#include "tidemark/persistence/storage_service.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <wiredtiger.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "state_block_generated.h"
#include "tidemark/core/annotated_actor.hpp"
#include "tidemark/persistence/wiredtiger.hpp"

namespace tidemark::persistence {

namespace {

const std::string table_uri = "table:window_state";

void put_be64(std::string& out, std::uint64_t x) {
  for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>((x >> (8 * i)) & 0xff));
}

std::uint64_t get_be64(std::string_view in) {
  std::uint64_t x = 0;
  for (int i = 0; i < 8; ++i) x = (x << 8) | static_cast<unsigned char>(in[static_cast<std::size_t>(i)]);
  return x;
}

// Signed event times sort bytewise once their sign bit is flipped.
std::uint64_t ordered(std::int64_t t) { return static_cast<std::uint64_t>(t) ^ (1ULL << 63); }

/// Key of a bucket: store, window start, window end, key hash, serial (then the block position).
std::string bucket_prefix(const bucket_address& b) {
  std::string k;
  k.reserve(48);
  put_be64(k, b.store);
  put_be64(k, ordered(b.window.start));
  put_be64(k, ordered(b.window.end));
  put_be64(k, b.key_hash);
  put_be64(k, b.serial);
  return k;
}

std::string block_key(const bucket_address& b, std::uint64_t position) {
  auto k = bucket_prefix(b);
  put_be64(k, position);
  return k;
}

std::int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

using step_atom = caf::atom_constant<caf::atom("step")>;
using drain_atom = caf::atom_constant<caf::atom("drain")>;

}  // namespace

namespace detail {

struct stage_request {
  std::string prefix;
  std::string next_key;
  block_storage::block_fn on_block;
  std::function<void()> done;
  std::atomic<int> outstanding{1};  // the reading itself plus each block being decoded
  void finish_one() {
    if (--outstanding == 0) done();
  }
};

struct io_item {
  io_class cls = io_class::destage;
  char op = 'w';
  std::string key;  // write: the block's key; erase: the bucket prefix
  // write: the record in the builder's own buffer, shared because a message must be copyable
  std::shared_ptr<const flatbuffers::DetachedBuffer> record;
  std::size_t record_size() const { return record ? record->size() : 0; }
  std::uint64_t position = 0;
  std::function<void(bool, std::uint64_t)> write_done;
  std::shared_ptr<stage_request> stage;
  std::int64_t enqueued_ms = 0;
};

/// Requests waiting for their next step: one FIFO per class served highest class first, or one
/// FIFO for all (the unprioritized ablation).
class io_queue {
 public:
  explicit io_queue(bool prioritized) : prioritized_(prioritized) {}
  void push(io_item item) {
    queues_[prioritized_ ? static_cast<std::size_t>(item.cls) : 0].push_back(std::move(item));
  }
  bool empty() const {
    return std::all_of(std::begin(queues_), std::end(queues_), [](const auto& q) { return q.empty(); });
  }
  /// The first item of the highest non-empty class; the queue must not be empty.
  io_item pop() {
    auto q = std::find_if(std::begin(queues_), std::end(queues_), [](const auto& q) { return !q.empty(); });
    auto item = std::move(q->front());
    q->pop_front();
    return item;
  }

 private:
  bool prioritized_;
  std::deque<io_item> queues_[3];
};

}  // namespace detail

}  // namespace tidemark::persistence

// Requests reach the storage actor by message, inside one process only.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tidemark::persistence::detail::io_item)

namespace tidemark::persistence {

using detail::io_item;

struct storage_service::io_session {
  wt_session session;
  wt_cursor cursor;
  explicit io_session(const std::shared_ptr<wt_connection>& conn)
      : session(conn->open_session()), cursor(session.open_cursor(table_uri)) {}
};

/// A storage actor: its queues and its WiredTiger session (used on the actor's thread only).
struct storage_service::io_state {
  std::unique_ptr<io_session> session;
  std::unique_ptr<detail::io_queue> queue;
  bool stepping = false;  // a step message is on its way
  bool draining = false;  // the service is ending: quit once nothing is left
};

/// The storage actors in an actor system of the service's own (see docs/aion.md, "who owns the
/// storage actor"): detached, so each has a thread and blocking I/O never holds a scheduler worker.
struct storage_service::io_actors {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  std::vector<caf::actor> actors;
  std::atomic<std::size_t> next{0};  // round robin over several actors
};

storage_service::storage_service(storage_config cfg) : cfg_(std::move(cfg)), epoch_ms_(steady_ms()) {
  if (cfg_.io_threads == 0) throw std::invalid_argument("storage_config.io_threads must be >= 1");
  if (cfg_.manual_io) manual_queue_ = std::make_unique<detail::io_queue>(true);
}

storage_service::~storage_service() {
  {
    std::lock_guard<std::mutex> l(work_m_);
    workers_stopping_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();  // workers finish queued jobs first
  if (actors_) {
    for (auto& a : actors_->actors) caf::anon_send(a, drain_atom::value);
    actors_->actors.clear();
    actors_->sys.reset();  // waits for the actors: they drain their queues first
  }
  if (cfg_.manual_io)
    while (run_one()) {
    }
  manual_session_.reset();
  if (conn_) {
    // The state is transient: drop it rather than let the close checkpoint it. That checkpoint
    // copied every erased block into memory (WiredTiger keeps removed overflow values for
    // readers it cannot rule out): 2.4 GB after a run with 128 MB windows, K = 20.
    try {
      conn_->open_session().drop(table_uri, "force=true");
    } catch (const storage_error&) {
      // nothing is lost: the close checkpoints the table instead, only slower
    }
  }
  conn_.reset();
  if (temp_dir_) {
    std::error_code ec;
    std::filesystem::remove_all(home_, ec);
  }
}

void storage_service::open() {
  std::lock_guard<std::mutex> l(open_m_);
  if (opened_) return;
  if (cfg_.data_dir.empty()) {
    auto base = std::filesystem::temp_directory_path() / "tidemark-state-XXXXXX";
    std::string templ = base.string();
    if (!mkdtemp(templ.data()))
      throw std::runtime_error("storage service: cannot create a temporary directory under " +
                               std::filesystem::temp_directory_path().string());
    home_ = templ;
    temp_dir_ = true;
  } else {
    home_ = cfg_.data_dir + "/window_state";
    // State left by an earlier run belongs to that run's windows (there is no recovery from it
    // yet): start from an empty directory.
    std::filesystem::remove_all(home_);
  }
  // Window state is transient (rebuilt from checkpoints), so no log and no sync.
  conn_ = wt_connection::open(home_, "cache_size=" + std::to_string(cfg_.cache_mb) + "MB");
  {
    auto s = conn_->open_session();
    s.create(table_uri, "key_format=u,value_format=u,log=(enabled=false)");
  }
  if (cfg_.manual_io) {
    manual_session_ = std::make_unique<io_session>(conn_);
  } else {
    spawn_actors();
  }
  std::size_t n = cfg_.serialization_threads;
  if (n == 0) n = std::max(1u, std::thread::hardware_concurrency());
  for (std::size_t i = 0; i < n; ++i) workers_.emplace_back([this] { worker_loop(); });
  opened_ = true;
}

std::uint64_t storage_service::register_store() {
  open();
  return next_store_++;
}

std::string storage_service::home() const {
  std::lock_guard<std::mutex> l(open_m_);
  return home_;
}

void storage_service::submit(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> l(work_m_);
    work_.push_back(std::move(job));
  }
  work_cv_.notify_one();
}

void storage_service::worker_loop() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> l(work_m_);
      work_cv_.wait(l, [&] { return workers_stopping_ || !work_.empty(); });
      if (work_.empty()) return;
      job = std::move(work_.front());
      work_.pop_front();
    }
    job();
  }
}

void storage_service::write(const bucket_address& b, std::uint64_t position, std::uint32_t events,
                            io_class cls, std::function<std::string()> encode,
                            std::function<void(bool, std::uint64_t)> done) {
  {
    std::lock_guard<std::mutex> l(work_m_);
    ++serializing_;
  }
  submit([this, key = block_key(b, position), position, events, cls, encode = std::move(encode),
          done = std::move(done)]() mutable {
    const auto payload = encode();
    // room for the table and its vtable too: a builder that grows copies the whole block
    flatbuffers::FlatBufferBuilder fbb(payload.size() + 1024);
    auto bytes = fbb.CreateVector(reinterpret_cast<const std::uint8_t*>(payload.data()), payload.size());
    fbb.Finish(fb::CreateStateBlock(fbb, position, events, XXH64(payload.data(), payload.size(), 0), bytes));
    io_item item;
    item.cls = cls;
    item.op = 'w';
    item.key = std::move(key);
    item.record = std::make_shared<const flatbuffers::DetachedBuffer>(fbb.Release());
    item.position = position;
    item.write_done = std::move(done);
    // the serialized copy counts against the budget until it is written, so a disk that falls
    // behind shows as pressure (and the stores' back pressure) instead of hidden memory
    account(static_cast<std::int64_t>(item.record_size()));
    enqueue(std::move(item));
    std::lock_guard<std::mutex> l(work_m_);
    --serializing_;
  });
}

void storage_service::stage(const bucket_address& b, block_fn on_block, std::function<void()> done,
                            io_class cls) {
  auto req = std::make_shared<detail::stage_request>();
  req->prefix = bucket_prefix(b);
  req->next_key = req->prefix;
  req->on_block = std::move(on_block);
  req->done = std::move(done);
  io_item item;
  item.cls = cls;
  item.op = 's';
  item.stage = std::move(req);
  enqueue(std::move(item));
}

void storage_service::erase(const bucket_address& b) {
  io_item item;
  item.cls = io_class::destage;
  item.op = 'e';
  item.key = bucket_prefix(b);
  enqueue(std::move(item));
}

void storage_service::spawn_actors() {
  actors_ = std::make_unique<io_actors>();
  // The actors are detached (a thread each); the scheduler's one worker only runs CAF's own jobs.
  actors_->cfg.set("scheduler.max-threads", 1);
  actors_->sys = std::make_unique<caf::actor_system>(actors_->cfg);
  // `prioritized` is an argument, not a capture: CAF 0.17 spawns a function without arguments
  // through a null std::shared_ptr<std::tuple<>> that it dereferences (UBSan reports it)
  // annotated: Debian's CAF is not built with TSan, so the mailbox hand-over must be made visible
  using storage_actor_type = caf::stateful_actor<io_state, tidemark::detail::annotated_actor>;
  auto storage_actor = [this](storage_actor_type* self,
                              bool prioritized) -> caf::behavior {
    self->state.session = std::make_unique<io_session>(conn_);
    self->state.queue = std::make_unique<detail::io_queue>(prioritized);
    // A callback that throws ends the process, as it did on the I/O thread: an actor that quit
    // would lose every later request and leave the stores waiting.
    self->set_exception_handler(
        [](caf::scheduled_actor*, std::exception_ptr& e) -> caf::error { std::rethrow_exception(e); });
    // After a request was queued or a step served: the next step is a message to itself, so
    // requests that arrive meanwhile are queued (by priority) before the next block is served.
    auto next = [self] {
      auto& st = self->state;
      if (!st.queue->empty()) {
        if (!st.stepping) self->send(self, step_atom::value);
        st.stepping = true;
      } else if (st.draining) {
        st.session.reset();  // on this thread, before the service closes the connection
        self->quit();
      }
    };
    return {
        [self, next](io_item& item) {
          self->state.queue->push(std::move(item));
          next();
        },
        [this, self, next](step_atom) {
          auto& st = self->state;
          st.stepping = false;
          if (auto more = step(st.queue->pop(), *st.session)) st.queue->push(std::move(*more));
          next();
        },
        [self, next](drain_atom) {
          self->state.draining = true;
          next();
        },
    };
  };
  for (std::size_t i = 0; i < cfg_.io_threads; ++i)
    actors_->actors.push_back(
        actors_->sys->spawn<caf::detached>(storage_actor, cfg_.io_threads == 1));
}

void storage_service::enqueue(io_item item) {
  item.enqueued_ms = now_ms();
  ++pending_[static_cast<std::size_t>(item.cls)];
  if (cfg_.manual_io) {
    std::lock_guard<std::mutex> l(io_m_);
    manual_queue_->push(std::move(item));
    return;
  }
  auto& actors = actors_->actors;
  caf::anon_send(actors[actors_->next++ % actors.size()], std::move(item));
}

std::optional<io_item> storage_service::step(io_item item, io_session& s) {
  const auto c = static_cast<std::size_t>(item.cls);
  if (!serve(item, s)) {
    --pending_[c];
    return std::nullopt;
  }
  item.enqueued_ms = now_ms();
  return item;
}

bool storage_service::run_one() {
  io_item item;
  {
    std::lock_guard<std::mutex> l(io_m_);
    if (manual_queue_->empty()) return false;
    item = manual_queue_->pop();
  }
  auto more = step(std::move(item), *manual_session_);
  std::lock_guard<std::mutex> l(io_m_);
  if (more) manual_queue_->push(std::move(*more));
  return true;
}

bool storage_service::serve(io_item& item, io_session& s) {
  const auto c = static_cast<std::size_t>(item.cls);
  const auto waited = static_cast<double>(now_ms() - item.enqueued_ms);
  std::uint64_t position = item.position;
  auto& cur = s.cursor;
  bool requeue = false;
  bool ok = true;
  std::string error;
  std::uint64_t read = 0;
  try {
    if (item.op == 'w') {
      write_block(item, s);
    } else if (item.op == 's') {
      auto& req = *item.stage;
      cur.set_key(req.next_key);
      if (cur.seek_at_or_after() && cur.key().substr(0, req.prefix.size()) == req.prefix) {
        const std::string_view key = cur.key();
        position = get_be64(key.substr(req.prefix.size()));
        std::string record{cur.value()};
        read = record.size();
        req.next_key = std::string{key} + '\0';  // keys have one length: this is the next one
        requeue = true;
        ++req.outstanding;
        submit([this, stage = item.stage, position, record = std::move(record)] {
          // Verify the FlatBuffers record and its checksum on the worker, then hand it over.
          flatbuffers::Verifier v(reinterpret_cast<const std::uint8_t*>(record.data()), record.size());
          const fb::StateBlock* blk = v.VerifyBuffer<fb::StateBlock>(nullptr)
                                          ? fb::GetStateBlock(record.data())
                                          : nullptr;
          std::string_view payload;
          bool intact = blk && blk->payload() && blk->position() == position;
          if (intact) {
            payload = {reinterpret_cast<const char*>(blk->payload()->data()), blk->payload()->size()};
            intact = XXH64(payload.data(), payload.size(), 0) == blk->checksum();
          }
          if (!intact) {
            payload = {};
            std::lock_guard<std::mutex> l(io_m_);
            ++stats_.corrupt_blocks;
          }
          stage->on_block(position, payload, intact);
          stage->finish_one();
        });
      } else {
        item.stage->finish_one();  // nothing more to read
      }
      cur.reset();
    } else {
      // Erase up to 64 blocks per step so an erase never holds the thread for long.
      std::string key = item.key;  // set_key keeps a view: the bytes must outlive the call
      cur.set_key(key);
      int removed = 0;
      while (removed < 64 && cur.seek_at_or_after() && cur.key().substr(0, item.key.size()) == item.key) {
        key.assign(cur.key());
        cur.set_key(key);
        cur.remove();
        ++removed;
        cur.set_key(key);
      }
      requeue = removed == 64;
      cur.reset();
    }
  } catch (const storage_error& e) {
    ok = false;
    // the directory is named once: injected faults name it already, WiredTiger's errors do not
    error = e.what();
    if (error.find(home_) == std::string::npos) error = "in '" + home_ + "': " + error;
    cur.reset();
    if (item.op == 's') item.stage->finish_one();
    requeue = false;
  }
  {
    std::lock_guard<std::mutex> l(io_m_);
    ++stats_.served[c];
    stats_.queue_ms_total[c] += waited;
    stats_.queue_ms_max[c] = std::max(stats_.queue_ms_max[c], waited);
    if (item.op == 'w') (ok ? stats_.bytes_written += item.record_size() : ++stats_.write_errors);
    if (!ok && item.op == 'w') stats_.last_write_error = error;
    stats_.bytes_read += read;
    if (cfg_.manual_io) served_.push_back({item.cls, item.op, position});
  }
  // after the statistics: a store that learns of a failed write reads last_write_error() at once
  if (item.op == 'w') {
    account(-static_cast<std::int64_t>(item.record_size()));
    item.write_done(ok, ok ? item.record_size() : 0);
  }
  return requeue;
}

void storage_service::write_block(const io_item& item, io_session& s) {
  for (std::uint32_t attempt = 1;; ++attempt) {
    try {
      s.cursor.set_key(item.key);
      s.cursor.set_value({reinterpret_cast<const char*>(item.record->data()), item.record->size()});
      s.cursor.insert();
      return;
    } catch (const storage_error& e) {
      s.cursor.reset();
      if (attempt >= cfg_.write_attempts || e.connection_lost()) throw;
    }
    {
      std::lock_guard<std::mutex> l(io_m_);
      ++stats_.write_retries;
    }
    std::this_thread::sleep_for(cfg_.write_retry_pause * attempt);  // NOLINT: a failing disk
  }
}

std::string storage_service::last_write_error() const {
  std::lock_guard<std::mutex> l(io_m_);
  return stats_.last_write_error;
}

void storage_service::account(std::int64_t delta) {
  const auto now = memory_ += delta;
  auto peak = memory_peak_.load();
  while (now > peak && !memory_peak_.compare_exchange_weak(peak, now)) {
  }
}

memory_pressure storage_service::pressure() const {
  if (cfg_.memory_budget_bytes == 0) return memory_pressure::none;
  const auto budget = static_cast<double>(cfg_.memory_budget_bytes);
  const auto used = static_cast<double>(memory_.load());
  if (budget - used < cfg_.severe_free_fraction * budget) return memory_pressure::severe;
  if (used > cfg_.moderate_fraction * budget) return memory_pressure::moderate;
  return memory_pressure::none;
}

std::int64_t storage_service::headroom() const {
  if (cfg_.memory_budget_bytes == 0) return std::numeric_limits<std::int64_t>::max();
  const auto severe_at =
      (1 - cfg_.severe_free_fraction) * static_cast<double>(cfg_.memory_budget_bytes);
  return static_cast<std::int64_t>(severe_at) - memory_.load();
}

std::int64_t storage_service::now_ms() const { return steady_ms() - epoch_ms_; }

std::size_t storage_service::queued(io_class c) const { return pending_[static_cast<std::size_t>(c)]; }

std::size_t storage_service::serializing() const {
  std::lock_guard<std::mutex> l(work_m_);
  return serializing_;
}

std::vector<served_step> storage_service::served() const {
  std::lock_guard<std::mutex> l(io_m_);
  return served_;
}

storage_stats storage_service::stats() const {
  std::lock_guard<std::mutex> l(io_m_);
  auto s = stats_;
  s.memory_used = memory_.load();
  s.memory_peak = memory_peak_.load();
  return s;
}

void storage_service::overwrite_block(const bucket_address& b, std::uint64_t position,
                                      const std::string& bytes) {
  auto s = conn_->open_session();
  auto c = s.open_cursor(table_uri);
  const auto key = block_key(b, position);  // set_key keeps a view of the bytes
  c.set_key(key);
  c.set_value(bytes);
  c.insert();
}

void storage_service::remove_block(const bucket_address& b, std::uint64_t position) {
  auto s = conn_->open_session();
  auto c = s.open_cursor(table_uri);
  const auto key = block_key(b, position);
  c.set_key(key);
  c.remove();
}

}  // namespace tidemark::persistence
