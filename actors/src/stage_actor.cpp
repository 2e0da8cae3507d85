#include "stage_actor.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <exception>

#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

#include "messages.hpp"

namespace tidemark::detail {
namespace {

using clock = std::chrono::steady_clock;

/// Thrown through the stage once a user function failed; carries the final message.
struct operator_failure {
  std::string what;
};

/// One item that waits on an output channel: a sealed batch or a signal behind it.
struct ready_item {
  batch_ptr batch;  // null for signals
  signal_msg::kind_t kind = signal_msg::watermark;
  event_time wm = 0;
};

struct out_state {
  caf::actor target;
  std::uint32_t in = 0;
  std::uint32_t credit = 0;
  bool idle = false;                    // the last idle/active signal sent was idle
  batch_ptr buffer;                     // partly filled batch
  event_time buffered_wm = start_of_time;  // watermark to send right after `buffer`
  std::deque<ready_item> ready;         // sealed, waiting for credit
};

struct in_state {
  caf::actor sender;
  std::uint32_t out = 0;  // the sender's output slot
  std::uint32_t port = 0;
  event_time wm = start_of_time;
  bool idle = false;
  bool eos = false;
  std::uint32_t unacked = 0;
};

/// An input item that had to wait because the outputs were blocked.
struct inbox_item {
  std::uint32_t slot;
  batch_ptr batch;  // null for signals
  signal_msg::kind_t kind;
  event_time wm;
};

class stage_actor;

class operator_output final : public emitter {
 public:
  operator_output(stage_actor& s, std::size_t pos) : s_(s), pos_(pos) {}
  void emit_watermark(event_time wm) override;
  void emit_idle(bool idle) override;
  void flush() override;

 protected:
  void emit_on(std::uint32_t port, batch_ptr b) override;

 private:
  stage_actor& s_;
  std::size_t pos_;
};

class stage_actor final : public caf::event_based_actor {
 public:
  stage_actor(caf::actor_config& cfg, stage_setup setup)
      : caf::event_based_actor(cfg), s_(std::move(setup)) {
    offset_ = s_.source ? 1 : 0;
    for (std::size_t p = 0; p < s_.nodes.size(); ++p) {
      links_.push_back(std::make_unique<operator_output>(*this, p));
      auto& m = metrics_.operators.emplace_back();
      m.name = s_.nodes[p]->name;
      m.op = s_.nodes[p]->op;
      m.instance = s_.instance;
    }
    metrics_.stage = s_.stage;
    metrics_.instance = s_.instance;
    for (auto& o : s_.outputs) outs_.push_back({o.target, o.in, s_.opts.credit, false, nullptr, start_of_time, {}});
    build_routes();
    for (auto port : s_.input_ports) {
      in_state in;
      in.port = port;
      ins_.push_back(in);
    }
    grant_ = std::max<std::uint32_t>(1, s_.opts.credit / 2);
    // one timer per actor, ticking at the shortest period of its operators
    for (auto& op : s_.ops)
      if (auto p = op->timer_period_ms(); p > 0 && (timer_period_ == 0 || p < timer_period_))
        timer_period_ = p;
  }

  /// Neighbours hold handles to each other; dropping them (and the operators) here breaks the
  /// reference cycle so that actors and the resources their operators own are freed on exit.
  void on_exit() override {
    outs_.clear();
    ins_.clear();
    inbox_.clear();
    s_.ops.clear();
    s_.source.reset();
    s_.outputs.clear();
    s_.driver = nullptr;
  }

  caf::behavior make_behavior() override {
    if (timer_period_ > 0) schedule_timer();
    // async operators and synchronizers post a wake message from their own threads
    for (auto& op : s_.ops)
      op->set_wakeup([addr = address()] {
        if (auto self = caf::actor_cast<caf::actor>(addr)) caf::anon_send(self, wake_atom::value);
      });
    return {
        [this](start_atom) {
          guarded([&] {
            if (s_.source) {
              call(0, [&] { s_.source->open(); });
              pump();
            } else if (ins_.empty()) {
              finish();
            }
          });
        },
        [this](pump_atom) {
          pump_scheduled_ = false;
          guarded([&] { pump(); });
        },
        [this](data_msg& m) {
          auto& in = ins_[m.in];
          if (!in.sender) {
            in.sender = caf::actor_cast<caf::actor>(current_sender());
            in.out = m.out;
          }
          inbox_.push_back({m.in, std::move(m.batch.ptr), signal_msg::watermark, 0});
          ++queued_;
          metrics_.max_queued_batches = std::max(metrics_.max_queued_batches, queued_);
          guarded([&] { drain(); });
        },
        [this](signal_msg& m) {
          inbox_.push_back({m.in, nullptr, m.kind, m.wm});
          guarded([&] { drain(); });
        },
        [this](credit_msg& m) {
          auto& o = outs_[m.out];
          o.credit += m.n;
          guarded([&] {
            try_send(o);
            resume();
          });
        },
        [this](flush_atom) {
          flush_scheduled_ = false;
          guarded([&] {
            for (auto& o : outs_) seal(o);
            resume();
          });
        },
        [this](wake_atom) {
          guarded([&] {
            for (std::size_t p = offset_; p < s_.nodes.size(); ++p)
              call(p, [&] { op(p).on_wakeup(*links_[p]); });
            if (finished_)
              continue_finish();
            else
              resume();
            after_work();
          });
        },
        [this](timer_atom) {
          if (finished_) return;
          guarded([&] {
            auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
            for (std::size_t p = offset_; p < s_.nodes.size(); ++p)
              if (op(p).timer_period_ms() > 0) call(p, [&] { op(p).on_timer(now, *links_[p]); });
            after_work();
          });
          schedule_timer();
        },
    };
  }

  // ---- the operator tree ---------------------------------------------------------------------

  /// A batch emitted on `port` of the operator at `pos` goes to the fused operators and the output
  /// edges that read that port; a port nobody reads drops it.
  void emit_from(std::size_t pos, std::uint32_t port, batch_ptr b) {
    auto& m = metrics_.operators[pos];
    m.events_out += b->size();
    ++m.batches_out;
    if (port >= routes_[pos].size()) return;
    const auto& r = routes_[pos][port];
    // every reader but the last gets a copy (fusion makes a single reader the common case)
    auto left = r.fused.size() + r.edges.size();
    auto take = [&] { return --left == 0 ? std::move(b) : b->clone(); };
    for (auto c : r.fused) deliver(c, 0, take());
    for (auto e : r.edges) route(e, take());
  }

  /// Signals hold for every port: they reach every fused reader and every output edge of `pos`.
  void watermark_from(std::size_t pos, event_time wm) {
    for (auto c : readers_[pos]) call(c, [&] { op(c).on_watermark(wm, *links_[c]); });
    for (auto o : signal_outs_[pos]) signal(outs_[o], signal_msg::watermark, wm);
  }

  /// A partly filled output batch goes out now (after a synchronizer admitted a slice).
  void flush_outputs() {
    for (auto& o : outs_) seal(o);
  }

  /// Operators do not handle idleness, so it passes through the fused readers of `pos`: every
  /// output below `pos` in the tree learns it.
  void idle_from(std::size_t pos, bool idle) {
    for (auto k : idle_outs_[pos]) {
      auto& o = outs_[k];
      if (o.idle == idle) continue;
      o.idle = idle;
      signal(o, idle ? signal_msg::idle : signal_msg::active, 0);
    }
  }

 private:
  operator_logic& op(std::size_t pos) { return *s_.ops[pos - offset_]; }

  /// Where the batches and signals of each operator go, from the stage's tree and edges.
  void build_routes() {
    const auto n = s_.nodes.size();
    routes_.resize(n);
    readers_.resize(n);
    signal_outs_.resize(n);
    idle_outs_.resize(n);
    auto port_route = [&](std::size_t pos, std::uint32_t port) -> port_readers& {
      auto& ports = routes_[pos];
      if (ports.size() <= port) ports.resize(port + 1);
      return ports[port];
    };
    for (std::size_t c = 1; c < n; ++c) {
      const auto& f = s_.tree[c];
      port_route(f.from, f.port).fused.push_back(static_cast<std::uint32_t>(c));
      readers_[f.from].push_back(static_cast<std::uint32_t>(c));
    }
    for (std::size_t e = 0; e < s_.edges.size(); ++e) {
      const auto& edge = s_.edges[e];
      port_route(edge.from_op, edge.port).edges.push_back(static_cast<std::uint32_t>(e));
      auto& outs = signal_outs_[edge.from_op];
      outs.insert(outs.end(), edge.slots.begin(), edge.slots.end());
    }
    // positions follow their readers' positions, so walking backwards sees every reader first
    for (auto pos = n; pos-- > 0;) {
      auto& outs = idle_outs_[pos];
      outs = signal_outs_[pos];
      for (auto c : readers_[pos]) outs.insert(outs.end(), idle_outs_[c].begin(), idle_outs_[c].end());
    }
  }

  template <class F>
  void call(std::size_t pos, F&& f) {
    try {
      f();
    } catch (const operator_failure&) {
      throw;
    } catch (const std::exception& e) {
      throw operator_failure{failure_text(pos, e.what())};
    } catch (...) {
      throw operator_failure{failure_text(pos, "unknown exception")};
    }
  }

  std::string failure_text(std::size_t pos, const std::string& what) const {
    return "operator '" + s_.nodes[pos]->name + "' (instance " + std::to_string(s_.instance) +
           " of " + std::to_string(s_.parallelism) + ") failed: " + what;
  }

  /// Runs a message handler; a failure ends this actor and tells the driver.
  template <class F>
  void guarded(F&& f) {
    if (failed_ || done_) return;
    busy_since_ = clock::now();
    try {
      f();
    } catch (const operator_failure& e) {
      fail(e.what);
    } catch (const std::exception& e) {
      fail("stage " + std::to_string(s_.stage) + " failed: " + e.what());
    }
    if (!done_) metrics_.busy_ns += (clock::now() - busy_since_).count();
  }

  void fail(std::string what) {
    failed_ = true;
    send(s_.driver, failed_msg{std::move(what)});
    quit();
  }

  void deliver(std::size_t pos, std::size_t port, batch_ptr b) {
    auto& m = metrics_.operators[pos];
    m.events_in += b->size();
    ++m.batches_in;
    call(pos, [&] { op(pos).process(port, std::move(b), *links_[pos]); });
  }

  // ---- sources -------------------------------------------------------------------------------

  void pump() {
    if (finished_ || !s_.source || blocked() || held()) return;
    bool more = true;
    call(0, [&] { more = s_.source->pull(s_.opts.batch_size, *links_[0]); });
    if (!more) {
      watermark_from(0, end_of_time);
      finish();
      return;
    }
    after_work();
    if (!blocked() && !held() && !pump_scheduled_) {
      pump_scheduled_ = true;
      send(this, pump_atom::value);
    }
  }

  // ---- inputs --------------------------------------------------------------------------------

  /// Handles waiting input items while the outputs have room.
  void drain() {
    while (!inbox_.empty() && !blocked() && !finished_) {
      // A saturated operator takes no more data, but the signals behind data it already holds
      // (the watermark after the batch that filled an async queue) must reach it.
      if (inbox_.front().batch && held()) break;
      auto item = std::move(inbox_.front());
      inbox_.pop_front();
      auto& in = ins_[item.slot];
      if (item.batch) {
        --queued_;
        deliver(0, in.port, std::move(item.batch));
        if (++in.unacked >= grant_) {
          send(in.sender, credit_msg{in.out, in.unacked});
          in.unacked = 0;
        }
        continue;
      }
      switch (item.kind) {
        case signal_msg::watermark: in.wm = std::max(in.wm, item.wm); break;
        case signal_msg::idle: in.idle = true; break;
        case signal_msg::active: in.idle = false; break;
        case signal_msg::eos:
          in.eos = true;
          in.wm = end_of_time;
          break;
      }
      advance_inputs();
    }
    after_work();
  }

  /// Recomputes the input watermark (minimum over active inputs) and the idle status.
  void advance_inputs() {
    event_time low = end_of_time;
    bool any_active = false;
    bool all_eos = true;
    for (auto& in : ins_) {
      all_eos &= in.eos;
      if (in.idle && !in.eos) continue;
      any_active = true;
      low = std::min(low, in.wm);
    }
    if (!any_active) {
      idle_from(0, true);
      return;
    }
    idle_from(0, false);
    if (low > input_wm_) {
      input_wm_ = low;
      call(0, [&] { op(0).on_watermark(low, *links_[0]); });
    }
    if (all_eos) finish();
  }

  void resume() {
    if (s_.source) {
      if (!blocked() && !held() && !pump_scheduled_ && !finished_) {
        pump_scheduled_ = true;
        send(this, pump_atom::value);
      }
    } else {
      drain();
    }
    maybe_quit();
  }

  /// After a unit of work: schedule the linger flush for partly filled batches.
  void after_work() {
    if (flush_scheduled_ || eos_sent_) return;
    for (auto& o : outs_)
      if (o.buffer) {
        flush_scheduled_ = true;
        delayed_send(this, s_.opts.linger, flush_atom::value);
        return;
      }
  }

  void schedule_timer() {
    delayed_send(this, std::chrono::milliseconds(timer_period_), timer_atom::value);
  }

  /// All inputs ended (or the source is exhausted): finish the operators, then end every output.
  void finish() {
    if (finished_) return;
    finished_ = true;
    finish_next_ = offset_;
    continue_finish();
  }

  /// Finishes the operators in plan (topological) order; an operator with pending asynchronous
  /// work holds back the rest of the stage and the end of the outputs until a wakeup completes it.
  void continue_finish() {
    while (finish_next_ < s_.nodes.size()) {
      auto p = finish_next_;
      if (!finish_called_) {
        finish_called_ = true;
        call(p, [&] { op(p).finish(*links_[p]); });
      }
      if (op(p).pending()) return;
      ++finish_next_;
      finish_called_ = false;
    }
    if (eos_sent_) return;
    eos_sent_ = true;
    for (auto& o : outs_) signal(o, signal_msg::eos, end_of_time);
    maybe_quit();
  }

  void maybe_quit() {
    if (!eos_sent_ || done_ || blocked()) return;
    done_ = true;
    for (std::size_t p = offset_; p < s_.nodes.size(); ++p) {
      auto& m = metrics_.operators[p];
      m.skipped = op(p).skipped;
      op(p).add_metrics(m.extra);
    }
    metrics_.busy_ns += (clock::now() - busy_since_).count();
    send(s_.driver, done_msg{std::move(metrics_)});
    quit();
  }

  // ---- outputs -------------------------------------------------------------------------------

  bool blocked() const {
    for (auto& o : outs_)
      if (!o.ready.empty()) return true;
    return false;
  }

  /// An operator of the stage takes no more input for now (async queue or synchronizer full).
  bool held() const {
    for (auto& op : s_.ops)
      if (op->saturated()) return true;
    return false;
  }

  /// Sends `b` over output edge `e`, partitioned as the edge says.
  void route(std::size_t e, batch_ptr b) {
    const auto& edge = s_.edges[e];
    const auto n = edge.slots.size();
    switch (edge.part) {
      case partitioning::forward:
      case partitioning::rebalance:
        append(outs_[edge.slots[n == 1 ? 0 : next_rr(e, n)]], std::move(b));
        break;
      case partitioning::broadcast:
        for (std::size_t i = 0; i < n; ++i)
          append(outs_[edge.slots[i]], i + 1 == n ? std::move(b) : b->clone());
        break;
      case partitioning::key_hash:
        scatter(edge, std::move(b));
        break;
    }
  }

  std::size_t next_rr(std::size_t edge, std::size_t n) {
    if (rr_.size() <= edge) rr_.resize(edge + 1, s_.instance);
    return rr_[edge]++ % n;
  }

  void scatter(const output_edge& edge, batch_ptr b) {
    const auto n = edge.slots.size();
    if (n == 1) {
      append(outs_[edge.slots[0]], std::move(b));
      return;
    }
    const auto& hashes = b->hashes;
    targets_.resize(hashes.size());
    for (std::size_t i = 0; i < hashes.size(); ++i)
      targets_[i] = static_cast<std::uint32_t>((hashes[i] >> 32) % n);
    buffers_.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      auto& o = outs_[edge.slots[i]];
      if (!o.buffer) o.buffer = b->make_empty(s_.opts.batch_size);
      buffers_[i] = o.buffer.get();
    }
    b->scatter(targets_.data(), buffers_.data());
    for (std::size_t i = 0; i < n; ++i) {
      auto& o = outs_[edge.slots[i]];
      if (o.buffer->size() >= s_.opts.batch_size) seal(o);
    }
  }

  void append(out_state& o, batch_ptr b) {
    if (!o.buffer)
      o.buffer = std::move(b);
    else
      o.buffer->append(*b);
    if (o.buffer->size() >= s_.opts.batch_size) seal(o);
  }

  /// Moves the partly filled batch (and the watermark behind it) to the send queue.
  void seal(out_state& o) {
    if (o.buffer && !o.buffer->empty()) o.ready.push_back({std::move(o.buffer), signal_msg::watermark, 0});
    o.buffer.reset();
    if (o.buffered_wm != start_of_time) {
      o.ready.push_back({nullptr, signal_msg::watermark, o.buffered_wm});
      o.buffered_wm = start_of_time;
    }
    try_send(o);
  }

  /// Watermarks wait behind the partly filled batch so that batching survives frequent
  /// watermarks; other signals flush it first.
  void signal(out_state& o, signal_msg::kind_t kind, event_time wm) {
    if (kind == signal_msg::watermark && o.buffer && !o.buffer->empty()) {
      o.buffered_wm = wm;
      return;
    }
    seal(o);
    o.ready.push_back({nullptr, kind, wm});
    try_send(o);
  }

  void try_send(out_state& o) {
    auto slot = static_cast<std::uint32_t>(&o - outs_.data());
    while (!o.ready.empty()) {
      auto& item = o.ready.front();
      if (item.batch) {
        if (o.credit == 0) return;
        --o.credit;
        send(o.target, data_msg{o.in, slot, batch_holder{std::move(item.batch)}});
      } else {
        send(o.target, signal_msg{o.in, item.kind, item.wm});
      }
      o.ready.pop_front();
    }
  }

  /// The readers of one output port of one operator.
  struct port_readers {
    std::vector<std::uint32_t> fused;  // positions of the fused operators that read it
    std::vector<std::uint32_t> edges;  // indices into s_.edges
  };

  stage_setup s_;
  std::size_t offset_ = 0;
  std::vector<std::unique_ptr<operator_output>> links_;
  std::vector<std::vector<port_readers>> routes_;               // per position, per port
  std::vector<std::vector<std::uint32_t>> readers_;      // per position: fused readers, any port
  std::vector<std::vector<std::uint32_t>> signal_outs_;  // per position: its output slots
  std::vector<std::vector<std::uint32_t>> idle_outs_;    // per position: output slots below it
  std::vector<out_state> outs_;
  std::vector<in_state> ins_;
  std::deque<inbox_item> inbox_;
  std::vector<std::size_t> rr_;
  std::vector<std::uint32_t> targets_;
  std::vector<batch_base*> buffers_;
  instance_metrics metrics_;
  std::uint64_t queued_ = 0;
  std::uint32_t grant_ = 1;
  std::int64_t timer_period_ = 0;
  event_time input_wm_ = start_of_time;
  bool pump_scheduled_ = false;
  bool flush_scheduled_ = false;
  bool finished_ = false;
  std::size_t finish_next_ = 0;  // the position being finished
  bool finish_called_ = false;   // finish() of finish_next_ has run
  bool eos_sent_ = false;
  bool failed_ = false;
  bool done_ = false;
  clock::time_point busy_since_;  // start of the message handler that is running
};

void operator_output::emit_on(std::uint32_t port, batch_ptr b) {
  if (b && !b->empty()) s_.emit_from(pos_, port, std::move(b));
}
void operator_output::emit_watermark(event_time wm) { s_.watermark_from(pos_, wm); }
void operator_output::emit_idle(bool idle) { s_.idle_from(pos_, idle); }
void operator_output::flush() { s_.flush_outputs(); }

}  // namespace

caf::actor spawn_stage(caf::actor_system& sys, stage_setup setup) {
  return sys.spawn<stage_actor>(std::move(setup));
}

}  // namespace tidemark::detail
