// The logic of one stage instance (see stage_core.hpp).
#include "stage_core.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <iterator>
#include <string_view>

#include "tidemark/core/state.hpp"

namespace tidemark::detail {
namespace {

using clock = std::chrono::steady_clock;

/// Version of the layout captured_state::write produces; restore refuses any other.
constexpr std::uint32_t state_format = 2;
/// The piece of a stage that had ended when a checkpoint was taken (no layout starts like it: a
/// state starts with its format).
constexpr std::string_view finished_state = "tidemark:finished";

/// Thrown through the stage once a user function failed; carries the final message.
struct operator_failure {
  std::string what;
};

/// An item in flight of an unaligned checkpoint: a batch (its values through its stream's codec,
/// then its event times and key hashes) or a signal.
void write_item(state_writer& out, const batch_codec& codec, const batch_base* b, signal_kind kind,
                event_time wm, std::vector<std::uint8_t>& scratch) {
  out.write(b != nullptr);
  if (!b) {
    out.write(static_cast<std::uint8_t>(kind));
    out.write(wm);
    return;
  }
  scratch.clear();
  codec.encode_values(*b, scratch);
  out.write(scratch);
  out.write(b->times);
  out.write(b->hashes);
}

/// Reads what write_item wrote into `item` (its batch, or its signal).
void read_item(state_reader& in, const batch_codec& codec, input_item& item) {
  if (!in.read<bool>()) {
    const auto kind = in.read<std::uint8_t>();
    if (kind >= static_cast<std::uint8_t>(signal_kind::barrier))
      throw wire_error("signal kind " + std::to_string(kind) + " in flight");
    item.kind = static_cast<signal_kind>(kind);
    in.read(item.wm);
    return;
  }
  const auto values = in.read<std::vector<std::uint8_t>>();
  item.batch = codec.decode_values(values.data(), values.size());
  in.read(item.batch->times);
  in.read(item.batch->hashes);
  const auto n = item.batch->size();
  if ((!item.batch->times.empty() && item.batch->times.size() != n) ||
      (!item.batch->hashes.empty() && item.batch->hashes.size() != n))
    throw wire_error("batch in flight with misaligned columns");
}

}  // namespace

/// The emitter of the operator at one position: its output goes where the plan says.
class stage_core::operator_output final : public emitter {
 public:
  operator_output(stage_core& s, std::size_t pos) : s_(s), pos_(pos) {}
  void emit_watermark(event_time wm) override { s_.watermark_from(pos_, wm); }
  void emit_idle(bool idle) override { s_.idle_from(pos_, idle); }
  void flush() override { s_.flush_outputs(); }

 protected:
  void emit_on(std::uint32_t port, batch_ptr b) override {
    if (b && !b->empty()) s_.emit_from(pos_, port, std::move(b));
  }

 private:
  stage_core& s_;
  std::size_t pos_;
};

stage_core::stage_core(stage_config cfg, stage_io& io) : cfg_(std::move(cfg)), io_(io) {
  offset_ = cfg_.source ? 1 : 0;
  for (std::size_t p = 0; p < cfg_.nodes.size(); ++p) {
    links_.push_back(std::make_unique<operator_output>(*this, p));
    auto& m = metrics_.operators.emplace_back();
    m.name = cfg_.nodes[p]->name;
    m.op = cfg_.nodes[p]->op;
    m.instance = cfg_.instance;
  }
  metrics_.stage = cfg_.stage;
  metrics_.instance = cfg_.instance;
  outs_.resize(cfg_.outputs);
  // under adaptive batching a batch holds what its receiver works through in linger / credit, so
  // a flood queues about `linger` of work in front of each receiver (batch_bound.hpp)
  const auto budget = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::max(cfg_.opts.linger, std::chrono::milliseconds{1})) /
                      std::max<std::uint32_t>(1, cfg_.opts.credit);
  const auto most = static_cast<std::uint32_t>(cfg_.opts.batch_size);
  for (std::uint32_t k = 0; k < outs_.size(); ++k) {
    outs_[k].credit = cfg_.opts.credit;
    const bool remote = k < cfg_.remote_outputs.size() && cfg_.remote_outputs[k];
    outs_[k].bound =
        cfg_.opts.adaptive_batching && !remote ? batch_bound(most, 64, budget) : batch_bound(most);
  }
  copy_slot_.assign(outs_.size(), false);
  primary_of_.resize(outs_.size());
  for (std::uint32_t k = 0; k < outs_.size(); ++k) primary_of_[k] = k;
  for (std::uint32_t k = 0; k < cfg_.output_copies.size(); ++k)
    for (auto c : cfg_.output_copies[k]) {
      copy_slot_.at(c) = true;
      primary_of_[c] = k;
    }
  // towards a replicated receiver, what was sent since the last completed checkpoint is kept for a
  // copy restored from it; the channels start at the checkpoint the stage starts from
  if (cfg_.opts.replay_limit > 0 && !cfg_.output_copies.empty()) {
    logs_ = std::vector<replay_log>(outs_.size());  // never relocated: deque copies
    for (auto& log : logs_) log.since = cfg_.restore_checkpoint;
  }
  set_up_inputs();
  grant_ = std::max<std::uint32_t>(1, cfg_.opts.credit / 2);
  // one timer per stage, ticking at the shortest period of its operators
  for (auto& op : cfg_.ops)
    if (auto p = op->timer_period_ms(); p > 0 && (timer_period_ == 0 || p < timer_period_))
      timer_period_ = p;
  build_routes();
  out_ports_.resize(outs_.size());
  for (const auto& e : cfg_.edges)
    for (auto k : e.slots) out_ports_.at(k) = &cfg_.nodes.at(e.from_op)->outputs.at(e.port);
  if (cfg_.opts.checkpoints.unaligned) {
    // the batches in flight are stored with the piece: every stream needs a codec, and there is
    // one in-flight state per channel, which copies of an input or output would not share
    const bool copies = std::any_of(cfg_.output_copies.begin(), cfg_.output_copies.end(),
                                    [](const auto& c) { return !c.empty(); });
    if (arranged_ || copies)
      throw job_error("stage " + std::to_string(cfg_.stage) +
                      ": unaligned checkpoints do not work with replicas or the deterministic "
                      "merge; use aligned checkpoints (without --unaligned)");
    if (cfg_.input_from.size() != cfg_.input_ports.size())
      throw job_error("stage " + std::to_string(cfg_.stage) +
                      ": unaligned checkpoints need the producer of every input slot");
    for (auto* p : out_ports_) codec_of(p);
    for (auto* p : cfg_.input_from) codec_of(p);
  }
  if (in_loop() && cfg_.opts.checkpoints.enabled())
    for (auto* p : cfg_.input_from) codec_of(p);
}

stage_core::~stage_core() = default;

const batch_codec& stage_core::codec_of(const output_port* port) const {
  if (!port || !port->codec)
    throw job_error("stage " + std::to_string(cfg_.stage) + ": " +
                    (in_loop() ? "checkpoints of a loop store the batches in flight"
                               : "unaligned checkpoints store the batches in flight") +
                    ", but a stream of " + (port ? port->value_type : std::string{"unknown values"}) +
                    " has no tidemark::codec (list its fields with TIDEMARK_FIELDS" +
                    (in_loop() ? ")" : ", or use aligned checkpoints)"));
  return *port->codec;
}

// ---- what the shell feeds in -------------------------------------------------------------------

void stage_core::start() {
  if (finished_) return;  // restored as finished
  guarded([&] {
    // what an unaligned checkpoint found in flight goes on first
    for (std::uint32_t k = 0; k < outs_.size(); ++k) try_send(k);
    if (!inbox_.empty()) drain();
    if (cfg_.source) {
      call(0, [&] {
        cfg_.source->open();
        read_source_state();
      });
      pump();
    } else if (ins_.empty()) {
      finish();
    } else if (feedback_) {
      start_round();
    }
  });
}

void stage_core::on_pump() {
  pump_scheduled_ = false;
  guarded([&] {
    if (cfg_.source)
      pump();
    else
      drain();
  });
}

void stage_core::on_data(std::uint32_t in, batch_ptr b) {
  if (cut_ && cut_->open[in]) cut_->in_flight.push_back({in, in, b->clone()});
  // A feedback edge never holds its sender back: a loop whose every channel waits for credit
  // would deadlock on itself. Its credit goes back on arrival (an unbounded queue, as Flink's
  // iteration feedback).
  const bool fed_back = ins_[input_of_[in]].role == loop_role::feedback;
  if (fed_back) {
    if (loop_closed_) {
      guarded([&] {
        throw job_error("the loop through '" + cfg_.nodes.front()->name +
                        "' got elements back after it ended: an operator in the loop emitted "
                        "them at the end of its input (finish), which a loop cannot carry");
      });
      return;
    }
    acknowledge(in);
  }
  if (arranged_) {
    receive({in, input_of_[in], std::move(b)});
  } else {
    inbox_.push_back({in, in, std::move(b), signal_kind::watermark, 0, !fed_back});
    ++queued_;
    metrics_.max_queued_batches = std::max(metrics_.max_queued_batches, queued_);
  }
  if (cfg_.opts.checkpoints.unaligned)
    yield();  // what else waits (the rest of a burst, a barrier) comes in before the work
  else
    guarded([&] { drain(); });
}

/// The pump drains (or pulls) once the messages that wait now are handled.
void stage_core::yield() {
  if (pump_scheduled_) return;
  pump_scheduled_ = true;
  io_.schedule_pump(std::chrono::nanoseconds::zero());
}

void stage_core::on_signal(std::uint32_t in, signal_kind kind, event_time wm) {
  // The barrier overtakes what waits in the inbox (Flink's unaligned checkpoints). A loop's
  // stages cut, too (without overtaking their outputs when aligned): an aligned stage of a loop
  // would wait for a barrier that can only come around the loop after its own.
  const bool cuts = cfg_.opts.checkpoints.unaligned || in_loop();
  if (kind == signal_kind::barrier && !cut_ && cuts) {
    guarded([&] {
      start_cut(static_cast<std::uint64_t>(wm), in);
      maybe_complete_cut();
      after_work();
    });
    return;
  }
  const bool closed = cut_through(in, kind, wm);
  if (closed) guarded([&] {
      maybe_complete_cut();
      after_work();
    });
  if (kind == signal_kind::barrier && (cuts || closed)) return;
  if (kind == signal_kind::eos && ins_[input_of_[in]].role == loop_role::feedback &&
      feedback_open_ > 0)
    --feedback_open_;
  if (arranged_)
    receive({in, input_of_[in], nullptr, kind, wm});
  else
    inbox_.push_back({in, in, nullptr, kind, wm});
  guarded([&] {
    if (!pump_scheduled_) drain();
    // the stage may have finished before its last copy ended
    if (kind == signal_kind::eos) maybe_done();
  });
}

void stage_core::on_credit(std::uint32_t out, std::uint32_t n) {
  auto& o = outs_[out];
  if (o.bound.learns()) o.bound.credited(n, clock::now());
  o.credit += n;
  guarded([&] {
    try_send(out);
    resume();
  });
}

void stage_core::on_copies_lost(const std::vector<std::uint32_t>& outs,
                                const std::vector<std::uint32_t>& ins) {
  guarded([&] {
    // a lost slot's partly filled batch stays: seal() still hands it to the slot's copies
    for (auto k : outs) {
      auto& o = outs_.at(k);
      o.lost = true;
      o.ready.clear();
      o.waits_for = 0;
      o.replay = 0;
    }
    for (auto k : ins)
      if (copies_ && k < slot_closed_.size()) close_slot(k);
    resume();
  });
}

void stage_core::on_output_restored(std::uint32_t out, std::uint64_t checkpoint) {
  guarded([&] {
    auto& o = outs_.at(out);
    o.ready.clear();
    o.credit = cfg_.opts.credit;
    // the copy may run anywhere now: full batches, as towards another process
    o.bound = batch_bound(static_cast<std::uint32_t>(cfg_.opts.batch_size));
    o.restored = true;
    o.lost = true;  // until it is known what it gets
    o.waits_for = 0;
    o.replay = 0;
    const auto p = primary_of_[out];
    if (p >= logs_.size() || copies_of(p).empty() || !logs_[p].complete) {
      io_.copy_dropped(out);
      return;
    }
    const auto& log = logs_[p];
    auto from = log.items.begin();
    if (log.since != checkpoint) {
      from = std::find_if(log.items.begin(), log.items.end(), [&](const ready_item& i) {
        return !i.batch && i.kind == signal_kind::barrier &&
               static_cast<std::uint64_t>(i.wm) == checkpoint;
      });
      if (from == log.items.end()) {
        // a lagging copy of this stage has not sent that barrier yet: the slot starts behind it
        if (log.since < checkpoint && !eos_sent_)
          o.waits_for = checkpoint;
        else
          io_.copy_dropped(out);
        return;
      }
      ++from;
    }
    o.lost = false;
    for (auto i = from; i != log.items.end(); ++i)
      o.ready.push_back({i->batch ? i->batch->clone() : nullptr, i->kind, i->wm});
    o.replay = o.ready.size();
    try_send(out);
  });
}

void stage_core::on_input_restored(std::uint32_t in, std::uint64_t checkpoint) {
  guarded([&] {
    if (!copies_ || in >= slot_closed_.size()) return;
    // an unknown place (or an ended input) leaves the slot closed, and the filter drops its items
    if (!copies_->restart(in, checkpoint)) return;
    if (slot_closed_[in]) {
      slot_closed_[in] = false;
      ++slots_open_;
    }
    if (copies_->caught_up(in)) io_.copy_caught_up(in);
  });
}

void stage_core::on_flush() {
  flush_scheduled_ = false;
  guarded([&] {
    flush_outputs();
    resume();
  });
}

void stage_core::on_idle() {
  if (cfg_.opts.adaptive_batching && !failed_ && !done_) send_partial();
}

void stage_core::on_wakeup() {
  guarded([&] {
    for (std::size_t p = offset_; p < cfg_.nodes.size(); ++p)
      call(p, [&] { op(p).on_wakeup(*links_[p]); });
    if (finished_)
      continue_finish();
    else
      resume();
    after_work();
  });
}

void stage_core::on_timer(std::int64_t now_ms) {
  if (finished_) return;
  guarded([&] {
    for (std::size_t p = offset_; p < cfg_.nodes.size(); ++p)
      if (op(p).timer_period_ms() > 0) call(p, [&] { op(p).on_timer(now_ms, *links_[p]); });
    after_work();
  });
}

void stage_core::set_wakeup(const std::function<void()>& wake) {
  for (auto& op : cfg_.ops) op->set_wakeup(wake);
}

// ---- the operator tree -------------------------------------------------------------------------

void stage_core::build_routes() {
  const auto n = cfg_.nodes.size();
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
    const auto& f = cfg_.tree[c];
    port_route(f.from, f.port).fused.push_back(static_cast<std::uint32_t>(c));
    readers_[f.from].push_back(static_cast<std::uint32_t>(c));
  }
  for (std::size_t e = 0; e < cfg_.edges.size(); ++e) {
    const auto& edge = cfg_.edges[e];
    port_route(edge.from_op, edge.port).edges.push_back(static_cast<std::uint32_t>(e));
    auto& outs = signal_outs_[edge.from_op];
    outs.insert(outs.end(), edge.slots.begin(), edge.slots.end());
  }
  // operators follow the operator they read, so walking backwards sees every reader first
  for (auto pos = n; pos-- > 0;) {
    auto& outs = idle_outs_[pos];
    outs = signal_outs_[pos];
    for (auto c : readers_[pos]) outs.insert(outs.end(), idle_outs_[c].begin(), idle_outs_[c].end());
  }
}

/// A batch emitted on `port` of the operator at `pos` goes to the fused operators and the output
/// edges that read that port; a port nobody reads drops it.
void stage_core::emit_from(std::size_t pos, std::uint32_t port, batch_ptr b) {
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
void stage_core::watermark_from(std::size_t pos, event_time wm) {
  for (auto c : readers_[pos]) call(c, [&] { op(c).on_watermark(wm, *links_[c]); });
  for (auto o : signal_outs_[pos]) signal(o, signal_kind::watermark, wm);
}

/// Operators do not handle idleness, so it passes through the fused readers of `pos`: every output
/// below `pos` in the tree learns it.
void stage_core::idle_from(std::size_t pos, bool idle) {
  for (auto k : idle_outs_[pos]) {
    auto& o = outs_[k];
    if (o.idle == idle) continue;
    o.idle = idle;
    signal(k, idle ? signal_kind::idle : signal_kind::active, 0);
  }
}

void stage_core::deliver(std::size_t pos, std::size_t input, batch_ptr b) {
  auto& m = metrics_.operators[pos];
  m.events_in += b->size();
  ++m.batches_in;
  call(pos, [&] { op(pos).process(input, std::move(b), *links_[pos]); });
}

template <class F>
void stage_core::call(std::size_t pos, F&& f) {
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

/// Runs one call from the shell; a failure ends the stage and is reported.
template <class F>
void stage_core::guarded(F&& f) {
  if (failed_ || done_) return;
  busy_since_ = clock::now();
  try {
    f();
  } catch (const operator_failure& e) {
    fail(e.what);
  } catch (const std::exception& e) {
    fail("stage " + std::to_string(cfg_.stage) + " failed: " + e.what());
  }
  if (!done_) metrics_.busy_ns += (clock::now() - busy_since_).count();
}

std::string stage_core::failure_text(std::size_t pos, const std::string& what) const {
  return "operator '" + cfg_.nodes[pos]->name + "' (instance " + std::to_string(cfg_.instance) +
         " of " + std::to_string(cfg_.parallelism) + ") failed: " + what;
}

void stage_core::fail(std::string what) {
  failed_ = true;
  io_.failed(std::move(what));
}

// ---- inputs and sources ------------------------------------------------------------------------

/// Logical inputs from the slots (stage_config::logical_input), and what sits between arrival and
/// the inbox when replication needs more than arrival order.
void stage_core::set_up_inputs() {
  const auto slots = static_cast<std::uint32_t>(cfg_.input_ports.size());
  input_of_ = cfg_.logical_input;
  if (input_of_.empty())
    for (std::uint32_t s = 0; s < slots; ++s) input_of_.push_back(s);
  const auto where = "stage " + std::to_string(cfg_.stage) + ": ";
  if (input_of_.size() != slots)
    throw job_error(where + std::to_string(input_of_.size()) + " logical inputs given for " +
                    std::to_string(slots) + " input slots");
  unacked_.assign(slots, 0);
  for (std::uint32_t s = 0; s < slots; ++s) {
    const auto i = input_of_[s];
    if (i > ins_.size())
      throw job_error(where + "logical inputs must be numbered from 0 in slot order");
    if (i == ins_.size())
      ins_.push_back({cfg_.input_ports[s]});
    else if (ins_[i].port != cfg_.input_ports[s])
      throw job_error(where + "slot " + std::to_string(s) + " of logical input " +
                      std::to_string(i) + " feed another operator input than its other copies");
  }
  if (ins_.size() < slots) {
    copies_ = std::make_unique<copy_filter>(input_of_, ins_.size(), cfg_.restore_checkpoint);
    slots_open_ = slots;
    slot_closed_.assign(slots, false);
  }
  if (cfg_.deterministic_merge && ins_.size() > 1) merge_ = std::make_unique<input_merge>(ins_.size());
  arranged_ = copies_ || merge_;
  // loops: which inputs come from where, and the outputs that lead back into the loop
  for (std::uint32_t s = 0; s < cfg_.input_roles.size() && s < slots; ++s)
    ins_[input_of_[s]].role = cfg_.input_roles[s];
  for (const auto& e : cfg_.edges)
    if (e.loop) loop_outs_.insert(loop_outs_.end(), e.slots.begin(), e.slots.end());
  if (!in_loop()) return;
  if (arranged_)
    throw job_error(where + "a loop runs without replicas and without the deterministic merge");
  for (std::uint32_t s = 0; s < slots; ++s)
    if (ins_[input_of_[s]].role == loop_role::feedback) {
      feedback_ = true;
      ++feedback_open_;
    }
  contributes_ = std::any_of(ins_.begin(), ins_.end(),
                             [](const in_state& in) { return in.role == loop_role::outside; });
}

/// An item of a stage whose inputs are arranged: copies filtered, then merged or queued.
void stage_core::receive(input_item item) {
  if (copies_) {
    if (!item.batch && item.kind == signal_kind::eos) close_slot(item.slot);
    const bool data = item.batch != nullptr;
    if (data)
      item.batch = copies_->accept(item.slot, std::move(item.batch));
    const bool fresh = data ? item.batch != nullptr : copies_->accept(item.slot, item.kind, item.wm);
    if (copies_->caught_up(item.slot)) io_.copy_caught_up(item.slot);
    if (!fresh) {
      // another copy delivered all of it; its sender must never wait for the receiver
      if (data) acknowledge(item.slot);
      return;
    }
  }
  if (item.batch) {
    ++queued_;
    metrics_.max_queued_batches = std::max(metrics_.max_queued_batches, queued_);
  }
  if (merge_) {
    merge_->push(std::move(item));
    merge_->release(inbox_);
  } else {
    inbox_.push_back(std::move(item));
  }
}

/// A copy's slot ended (end-of-stream, or its sender's host is gone): the stage may finish once
/// every slot did.
void stage_core::close_slot(std::uint32_t slot) {
  if (slot_closed_[slot]) return;
  slot_closed_[slot] = true;
  --slots_open_;
}

/// One batch of input slot `slot` is done with; credit goes back per `grant_` batches.
void stage_core::acknowledge(std::uint32_t slot) {
  if (++unacked_[slot] >= grant_) {
    io_.return_credit(slot, unacked_[slot]);
    unacked_[slot] = 0;
  }
}

/// Pulls while the source has more at once (full pulls), at most `credit` pulls per pump: one
/// pump message per pull would cost as much as the pull itself at small batch sizes, and the bound
/// keeps credit, checkpoints and live requests from waiting long behind a fast source. After a
/// pull that emitted nothing the next pump waits as long as the source says its next element
/// needs (source_logic::idle_for).
void stage_core::pump() {
  if (finished_ || !cfg_.source || blocked() || held()) return;
  const auto max_pulls = std::max<std::uint32_t>(1, cfg_.opts.credit);
  // a pull fills one batch of the output whose receiver takes the smallest (batch_bound.hpp)
  auto size = static_cast<std::uint32_t>(cfg_.opts.batch_size);
  for (const auto& o : outs_) size = std::min(size, o.bound.limit());
  auto idle = std::chrono::nanoseconds::zero();
  for (std::uint32_t pulls = 0; pulls < max_pulls && !blocked() && !held(); ++pulls) {
    bool more = true;
    const auto before = metrics_.operators[0].events_out;
    call(0, [&] { more = cfg_.source->pull(size, *links_[0]); });
    if (!more) {
      watermark_from(0, end_of_time);
      finish();
      return;
    }
    // A short pull means the source has nothing more right now: under adaptive batching what it
    // emitted goes out now instead of waiting for the next pulls (the pump keeps the mailbox busy).
    // So does a pull the batch bound made short: the bound is small when the source is slow, and
    // its next element may be a while away while this pull's batch waits for the pump's end.
    const auto emitted = metrics_.operators[0].events_out - before;
    if (emitted < cfg_.opts.batch_size) {
      if (cfg_.opts.adaptive_batching) send_partial();
      if (emitted == 0) idle = cfg_.source->idle_for();
      break;
    }
  }
  after_work();
  if (!blocked() && !held() && !pump_scheduled_) {
    pump_scheduled_ = true;
    io_.schedule_pump(idle);
  }
}

/// Handles waiting input items while the outputs have room.
void stage_core::drain() {
  while (!inbox_.empty() && !blocked() && !finished_) {
    // Input behind a checkpoint's barrier waits until the barrier arrived on every input.
    if (ins_[inbox_.front().input].at_barrier) {
      parked_.push_back(std::move(inbox_.front()));
      inbox_.pop_front();
      continue;
    }
    // A saturated operator takes no more data, but the signals behind data it already holds
    // (the watermark after the batch that filled an async queue) must reach it.
    if (inbox_.front().batch && held()) break;
    auto item = std::move(inbox_.front());
    inbox_.pop_front();
    auto& in = ins_[item.input];
    if (item.batch) {
      --queued_;
      deliver(0, in.port, std::move(item.batch));
      if (item.credited) acknowledge(item.slot);
      // unaligned: the stage yields after each batch (and takes in data without working on
      // it), so that what waits in its mailbox, a barrier among it, reaches the inbox, where a
      // barrier overtakes, without waiting for the inbox to be worked off; the pump drains
      if (cfg_.opts.checkpoints.unaligned && !inbox_.empty()) {
        yield();
        break;
      }
      continue;
    }
    // a feedback input's watermark is what the loop's probes confirm (confirm), and it is
    // never idle: the loop's own signals on it say nothing the probes do not
    const bool own = in.role != loop_role::feedback;
    switch (item.kind) {
      case signal_kind::watermark:
        if (own) in.wm = std::max(in.wm, item.wm);
        break;
      case signal_kind::idle: in.idle = own; break;
      case signal_kind::active: in.idle = false; break;
      case signal_kind::eos:
        in.eos = true;
        in.wm = end_of_time;
        start_loop_checkpoint();
        break;
      case signal_kind::barrier: on_barrier(item.input, static_cast<std::uint64_t>(item.wm)); break;
      case signal_kind::probe: in.probes.push_back(item.wm); break;
    }
    if (item.kind == signal_kind::probe)
      pass_probe();
    else if (item.kind != signal_kind::barrier)
      advance_inputs();
    if (aligning_ && aligned()) {
      const auto id = aligning_;
      aligning_ = 0;
      for (auto& slot : ins_) slot.at_barrier = false;
      take_checkpoint(id, std::chrono::duration<double, std::milli>(clock::now() - aligning_since_).count());
      inbox_.insert(inbox_.begin(), std::make_move_iterator(parked_.begin()),
                    std::make_move_iterator(parked_.end()));
      parked_.clear();
    }
  }
  after_work();
}

/// Recomputes the input watermark (minimum over active inputs) and the idle status.
void stage_core::advance_inputs() {
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
  if (contributes_) pass_probe();
}

/// A source that stopped for credit (or for a saturated operator) pulls at once, without a pump
/// message; one with a pump scheduled waits for it.
void stage_core::resume() {
  if (pump_scheduled_) {
    // the pump comes: it pulls or drains
  } else if (cfg_.source) {
    pump();
  } else {
    drain();
  }
  maybe_done();
}

/// After a unit of work: schedule the linger flush for partly filled batches.
void stage_core::after_work() {
  if (flush_scheduled_ || eos_sent_) return;
  for (auto& o : outs_)
    if (o.buffer) {
      flush_scheduled_ = true;
      io_.schedule_flush(cfg_.opts.linger);
      return;
    }
}

// ---- checkpoints -------------------------------------------------------------------------------

void stage_core::on_checkpoint(std::uint64_t id) {
  if (eos_sent_ && !failed_) {  // done, too: guarded() does nothing more then
    answer_finished(id);
    return;
  }
  guarded([&] {
    // A source stage takes its part, also once its source is exhausted while its operators
    // still hold work (a gate's elements), rather than answer at its end: a loop downstream
    // would otherwise see no checkpoint complete until then.
    if (cfg_.source) {
      take_checkpoint(id, 0);
      after_work();
    } else {
      announced_ = std::max(announced_, id);  // its barrier comes in band, or the inputs end
      start_loop_checkpoint();
    }
  });
}

/// A loop's entry whose inputs from outside the loop ended gets no barrier from them: the loop
/// still runs, so it starts the checkpoint it heard of itself.
void stage_core::start_loop_checkpoint() {
  if (!contributes_ || finished_ || cut_ || aligning_ || announced_ <= checkpointed_ ||
      outside_wm() != end_of_time)
    return;
  for (const auto& in : ins_)
    if (in.role == loop_role::outside && !in.eos) return;
  take_checkpoint(announced_, 0);
}

/// The stage ended its outputs before barrier `id` could reach it: everything it will ever emit
/// is in its receivers' part of checkpoint `id`, and a restore from it ends the stage at once.
void stage_core::answer_finished(std::uint64_t id) {
  if (id <= checkpointed_) return;
  checkpointed_ = id;
  io_.checkpointed(id, std::string{finished_state}, 0);
}

void stage_core::on_checkpoint_complete(std::uint64_t id) {
  guarded([&] {
    trim_logs(id);
    if (copies_) copies_->trim(id);
    if (cfg_.source) call(0, [&] { cfg_.source->on_checkpoint_complete(id); });
    for (std::size_t p = offset_; p < cfg_.nodes.size(); ++p)
      call(p, [&] { op(p).on_checkpoint_complete(id); });
    resume();  // an operator that waited for the commit may take input again
  });
}

/// Barrier `id` arrived on logical input `input`: what follows on that input waits (Chandy-Lamport
/// with aligned barriers, as Flink's asynchronous barrier snapshots). Copies of an input do not
/// align: the copy filter passes barrier `id` once, from the first copy.
void stage_core::on_barrier(std::uint32_t input, std::uint64_t id) {
  if (!aligning_) {
    aligning_ = id;
    aligning_since_ = clock::now();
  }
  ins_[input].at_barrier = true;
}

/// Every input either delivered the barrier or ended (an ended input sends nothing more).
bool stage_core::aligned() const {
  for (const auto& in : ins_)
    if (!in.at_barrier && !in.eos) return false;
  return true;
}

/// Captures the state, then sends the barrier on every output behind everything emitted before
/// it (unaligned: ahead of what waits on the outputs, see start_cut); the piece is written by
/// send_piece.
void stage_core::take_checkpoint(std::uint64_t id, double alignment_ms) {
  // unaligned, a source: its barrier overtakes its outputs' queues; a loop's entry whose outside
  // inputs ended (start_loop_checkpoint): a cut of what comes back from the loop
  if (cfg_.opts.checkpoints.unaligned || in_loop()) {
    start_cut(id, static_cast<std::uint32_t>(ins_.size()));
    maybe_complete_cut();
    return;
  }
  checkpointed_ = id;
  auto state = capture_state(id);
  signal_all(signal_kind::barrier, static_cast<event_time>(id));
  state_writer{id, state.tail}.write(std::uint32_t{0});  // nothing in flight on the inputs
  send_piece(id, std::move(state), alignment_ms);
}

/// Writes the captured state of checkpoint `id`, on another thread when the shell can
/// (asynchronous snapshots): the stage goes on while a large state is written. One state is
/// written elsewhere at a time; should the next one be ready before it is written (the drivers
/// start a checkpoint only once every piece of the last one arrived, so they never do), it is
/// written here, at once.
void stage_core::send_piece(std::uint64_t id, captured_state state, double alignment_ms) {
  auto shared = std::make_shared<const captured_state>(std::move(state));
  if (!writing_ && io_.write_elsewhere(id, [shared] { return shared->write(); })) {
    writing_ = id;
    writing_alignment_ms_ = alignment_ms;
    return;
  }
  io_.checkpointed(id, shared->write(), alignment_ms);
}

void stage_core::on_state_written(std::uint64_t id, std::string state, std::string error) {
  if (id != writing_) return;
  writing_ = 0;
  if (failed_) return;
  if (!error.empty()) {
    fail(std::move(error));
    return;
  }
  io_.checkpointed(id, std::move(state), writing_alignment_ms_);
}

/// Checkpoint `id` as a cut of the channels (Chandy-Lamport): its first barrier arrived on
/// `input` (none, ins_.size(): a source, or a loop's entry whose outside inputs ended, when it
/// heard of the checkpoint). The state is captured now with what waits in the inbox; what the
/// other inputs receive before their barrier is added as it arrives (maybe_complete_cut).
/// Unaligned, the barrier goes out at once, ahead of what waits on the outputs, which the state
/// holds; aligned (a stage of a loop), behind it. Probes are not kept: a restored loop starts a
/// fresh round.
void stage_core::start_cut(std::uint64_t id, std::uint32_t input) {
  const bool overtake = cfg_.opts.checkpoints.unaligned;
  if (overtake)
    for (std::uint32_t k = 0; k < outs_.size(); ++k) seal(k);
  cut_ = std::make_unique<cut>();
  cut_->id = id;
  cut_->since = clock::now();
  cut_->state = capture_state(id);
  if (overtake) {
    for (std::uint32_t k = 0; k < outs_.size(); ++k)
      if (!outs_[k].lost) io_.send_signal(k, signal_kind::barrier, static_cast<event_time>(id));
  } else {
    signal_all(signal_kind::barrier, static_cast<event_time>(id));
  }
  cut_->open.assign(ins_.size(), false);
  for (std::uint32_t i = 0; i < ins_.size(); ++i) cut_->open[i] = !ins_[i].eos && i != input;
  for (const auto& item : inbox_) {
    if (!item.batch && item.kind == signal_kind::eos) cut_->open[item.input] = false;
    if (item.batch || item.kind != signal_kind::probe)
      cut_->in_flight.push_back({item.slot, item.input, item.batch ? item.batch->clone() : nullptr,
                                 item.kind, item.wm, item.credited});
  }
}

/// An item that arrived on input slot `in` during a cut: kept for the piece while the slot's
/// barrier is still to come. True when it was that barrier (the cut may be complete).
bool stage_core::cut_through(std::uint32_t in, signal_kind kind, event_time wm) {
  if (!cut_ || !cut_->open[in]) return false;
  if (kind == signal_kind::barrier) {
    cut_->open[in] = false;
    return true;
  }
  if (kind != signal_kind::probe) cut_->in_flight.push_back({in, in, nullptr, kind, wm});
  if (kind == signal_kind::eos) {
    cut_->open[in] = false;
    return true;
  }
  return false;
}

/// Every input delivered the barrier of the cut, or ended: the piece is complete.
void stage_core::maybe_complete_cut() {
  if (!cut_ || std::find(cut_->open.begin(), cut_->open.end(), true) != cut_->open.end()) return;
  auto c = std::move(cut_);
  state_writer out{c->id, c->state.tail};
  out.write(static_cast<std::uint32_t>(c->in_flight.size()));
  std::vector<std::uint8_t> bytes;
  for (const auto& item : c->in_flight) {
    out.write(item.slot);
    write_item(out, codec_of(cfg_.input_from[item.slot]), item.batch.get(), item.kind, item.wm, bytes);
  }
  checkpointed_ = c->id;
  send_piece(c->id, std::move(c->state),
             std::chrono::duration<double, std::milli>(clock::now() - c->since).count());
}

/// The layout: format, per logical input its watermark and flags, the stage watermarks, per
/// receiver (its copies share the flag) its idle flag, the round-robin positions, then one
/// length-prefixed section per operator (the source first), each written by the operator itself,
/// then what an unaligned checkpoint found in flight: on the outputs (here), on the inputs
/// (maybe_complete_cut; aligned: none). Nothing in it depends on how many copies the stage or its
/// neighbours run, so a job can move to other replicas through a checkpoint.
captured_state stage_core::capture_state(std::uint64_t id) {
  captured_state c;
  c.id = id;
  state_writer out{id, c.head};
  out.write(state_format);
  out.write(static_cast<std::uint32_t>(ins_.size()));
  for (const auto& in : ins_) {
    out.write(in.wm);
    out.write(in.idle);
    out.write(in.eos);
  }
  out.write(input_wm_);
  out.write(output_wm_);
  // per receiver, not per receiver copy: a restore may run with other replicas
  out.write(static_cast<std::uint32_t>(std::count(copy_slot_.begin(), copy_slot_.end(), false)));
  for (std::size_t k = 0; k < outs_.size(); ++k)
    if (!copy_slot_[k]) out.write(outs_[k].idle);
  out.write(rr_);
  for (std::size_t p = 0; p < cfg_.nodes.size(); ++p) {
    auto& section = c.sections.emplace_back();
    section.failure = failure_text(p, "");
    call(p, [&] {
      if (p < offset_)
        section.state = capture_now(id, [&](state_writer& w) { cfg_.source->snapshot(w); });
      else
        section.state = op(p).capture(id);
    });
  }
  // unaligned: what waits on the outputs is sent after the barrier, so it belongs to the state;
  // a loop's probes do not (a restored loop starts a fresh round)
  const auto stored = [](const auto& item) { return item.batch || item.kind != signal_kind::probe; };
  state_writer tail{id, c.tail};
  std::uint32_t waiting = 0;
  if (cfg_.opts.checkpoints.unaligned)
    for (const auto& o : outs_)
      waiting += static_cast<std::uint32_t>(std::count_if(o.ready.begin(), o.ready.end(), stored));
  tail.write(waiting);
  std::vector<std::uint8_t> scratch;
  for (std::uint32_t k = 0; waiting > 0 && k < outs_.size(); ++k)
    for (const auto& item : outs_[k].ready) {
      if (!stored(item)) continue;
      tail.write(k);
      write_item(tail, codec_of(out_ports_[k]), item.batch.get(), item.kind, item.wm, scratch);
    }
  return c;
}

std::string captured_state::write() const {
  std::vector<std::uint8_t> bytes = head;
  for (const auto& s : sections) {
    // a section is a std::vector<std::uint8_t> through its codec: a 32-bit length, then the bytes;
    // written in place (no copy of a large section), the length once it is known
    const auto at = bytes.size();
    bytes.resize(at + sizeof(std::uint32_t));
    state_writer w{id, bytes};
    try {
      if (s.state) s.state(w);
    } catch (const std::exception& e) {
      throw job_error(s.failure + e.what());
    }
    const auto n = static_cast<std::uint32_t>(bytes.size() - at - sizeof(std::uint32_t));
    std::memcpy(bytes.data() + at, &n, sizeof n);
  }
  bytes.insert(bytes.end(), tail.begin(), tail.end());
  return {bytes.begin(), bytes.end()};
}

void stage_core::restore() {
  if (cfg_.restore_checkpoint == 0) return;
  if (cfg_.restore_state == finished_state) {
    // it had ended: it ends its outputs again, without finishing its operators a second time
    // (what they emitted at their end is in the receivers' state already)
    cfg_.restore_state = {};
    checkpointed_ = cfg_.restore_checkpoint;
    finished_ = true;
    finish_next_ = cfg_.nodes.size();
    guarded([&] {
      for (std::size_t p = offset_; p < cfg_.nodes.size(); ++p)
        call(p, [&] { op(p).restore_finished(checkpointed_); });
      continue_finish();
    });
    return;
  }
  guarded([&] {
    const auto id = cfg_.restore_checkpoint;
    const auto& s = cfg_.restore_state;
    state_reader in{id, reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
    const auto where = "checkpoint " + std::to_string(id) + ", stage " + std::to_string(cfg_.stage) +
                       " instance " + std::to_string(cfg_.instance) + ": ";
    if (auto f = in.read<std::uint32_t>(); f != state_format)
      throw job_error(where + "state format " + std::to_string(f) + ", this build reads " +
                      std::to_string(state_format));
    auto expect = [&](std::size_t n, std::size_t have, const char* what) {
      if (n != have)
        throw job_error(where + std::to_string(n) + " " + what + " in the checkpoint, " +
                        std::to_string(have) + " in the plan: the job changed since");
    };
    expect(in.read<std::uint32_t>(), ins_.size(), "inputs");
    for (auto& slot : ins_) {
      in.read(slot.wm);
      in.read(slot.idle);
      in.read(slot.eos);
    }
    in.read(input_wm_);
    in.read(output_wm_);
    expect(in.read<std::uint32_t>(),
           static_cast<std::size_t>(std::count(copy_slot_.begin(), copy_slot_.end(), false)),
           "outputs");
    for (std::uint32_t k = 0; k < outs_.size(); ++k)
      if (!copy_slot_[k]) {
        in.read(outs_[k].idle);
        for (auto c : copies_of(k)) outs_[c].idle = outs_[k].idle;
      }
    in.read(rr_);
    for (std::size_t p = 0; p < cfg_.nodes.size(); ++p) {
      auto section = in.read<std::vector<std::uint8_t>>();
      if (p < offset_) {
        source_state_.assign(section.begin(), section.end());
        continue;
      }
      state_reader r{id, section.data(), section.size()};
      call(p, [&] {
        op(p).restore(r);
        if (r.remaining())
          throw job_error(where + std::to_string(r.remaining()) +
                          " bytes of its state were not read: the job changed since");
      });
    }
    // what an unaligned checkpoint found in flight: on the outputs, then on the inputs
    for (auto n = in.read<std::uint32_t>(); n > 0; --n) {
      const auto k = in.read<std::uint32_t>();
      if (k >= outs_.size()) throw wire_error("output slot " + std::to_string(k) + " in flight");
      input_item item;
      read_item(in, codec_of(out_ports_[k]), item);
      outs_[k].ready.push_back({std::move(item.batch), item.kind, item.wm});
    }
    for (auto n = in.read<std::uint32_t>(); n > 0; --n) {
      input_item item;
      in.read(item.slot);
      if (item.slot >= cfg_.input_from.size())
        throw wire_error("input slot " + std::to_string(item.slot) + " in flight");
      read_item(in, codec_of(cfg_.input_from[item.slot]), item);
      item.input = item.slot;
      item.credited = false;
      if (item.batch) ++queued_;
      inbox_.push_back(std::move(item));
    }
    if (in.remaining())
      throw job_error(where + std::to_string(in.remaining()) +
                      " bytes after the last operator's state: the job changed since");
  });
  // the source's position is loaded once it opened (start); the rest is no longer needed
  cfg_.restore_state = {};
}

void stage_core::read_source_state() {
  if (cfg_.restore_checkpoint == 0) return;
  state_reader r{cfg_.restore_checkpoint, reinterpret_cast<const std::uint8_t*>(source_state_.data()),
                 source_state_.size()};
  cfg_.source->restore(r);
  if (r.remaining())
    throw job_error("checkpoint " + std::to_string(cfg_.restore_checkpoint) + ": " +
                    std::to_string(r.remaining()) +
                    " bytes of the source's position were not read: the job changed since");
  source_state_ = {};
}

// ---- loops -------------------------------------------------------------------------------------
// A loop's watermark (docs/timezones.md, "Loops at run time"): the stage that receives the
// feedback edge sends a probe around the loop; every stage of the loop passes it on once it
// arrived on each of its inputs from the loop, lowered to the lowest event time the stage sent
// into the loop since it last passed one, to the lowest its operators hold, and, where inputs
// come from outside, to their watermark. Channels are FIFO, so when the probe is back nothing
// below its value is left in the loop or can enter it: that value becomes the feedback input's
// watermark, and the next round starts. Once it confirmed the end of time in a round that started
// after that watermark went out, the loop is empty for good and the feedback input ends.

/// Passes the probe on once every input from the loop delivered one (a feedback stage confirms
/// it instead).
void stage_core::pass_probe() {
  if (finished_) return;
  event_time low = end_of_time;
  bool waiting = false;
  for (const auto& in : ins_) {
    if (in.role == loop_role::outside || in.eos) continue;
    if (in.probes.empty()) return;
    low = std::min(low, in.probes.front());
    waiting = true;
  }
  if (!waiting) return;
  if (contributes_) {
    // A probe could confirm nothing beyond the watermark that came back from the loop while the
    // outside watermark is no higher: it waits here for the outside watermark to move (so no
    // round spins while the loop has nothing to confirm; advance_inputs calls again).
    const auto outside = outside_wm();
    if (outside < end_of_time && outside <= loop_wm()) return;
    low = std::min(low, outside);
  }
  for (auto& in : ins_)
    if (in.role != loop_role::outside && !in.eos) in.probes.pop_front();
  low = std::min({low, loop_low_, lowest_held()});
  loop_low_ = end_of_time;
  if (feedback_)
    confirm(low);
  else
    for (auto k : loop_outs_) signal(k, signal_kind::probe, low);
}

/// A feedback stage: a probe goes around the loop.
void stage_core::start_round() {
  round_after_end_ = output_wm_ == end_of_time;
  for (auto k : loop_outs_) signal(k, signal_kind::probe, end_of_time);
}

/// A feedback stage: the probe came back with `low`; nothing below it is left in the loop.
void stage_core::confirm(event_time low) {
  if (low == end_of_time && round_after_end_) {
    // empty, and nothing more comes from outside or from the end-of-time watermark: the loop ends
    loop_closed_ = true;
    for (auto& in : ins_)
      if (in.role == loop_role::feedback) in.eos = true;
  }
  for (auto& in : ins_)
    if (in.role == loop_role::feedback) in.wm = std::max(in.wm, low);
  advance_inputs();
  if (!loop_closed_) start_round();
}

event_time stage_core::outside_wm() const {
  event_time low = end_of_time;
  for (const auto& in : ins_)
    if (in.role == loop_role::outside) low = std::min(low, in.wm);
  return low;
}

/// What came back from the loop: over a feedback input (a stage that also reads from outside,
/// built through the graph API), what its probes confirmed.
event_time stage_core::loop_wm() const {
  event_time low = end_of_time;
  for (const auto& in : ins_)
    if (in.role != loop_role::outside) low = std::min(low, in.wm);
  return low;
}

event_time stage_core::lowest_held() const {
  event_time low = end_of_time;
  for (const auto& op : cfg_.ops) low = std::min(low, op->lowest_pending());
  return low;
}

// ---- finishing ---------------------------------------------------------------------------------

/// All inputs ended (or the source is exhausted): finish the operators, then end every output.
void stage_core::finish() {
  if (finished_) return;
  finished_ = true;
  finish_next_ = offset_;
  continue_finish();
}

/// Finishes the operators in plan (topological) order; an operator with pending asynchronous work
/// holds back the rest of the stage and the end of the outputs until a wakeup completes it.
void stage_core::continue_finish() {
  while (finish_next_ < cfg_.nodes.size()) {
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
  signal_all(signal_kind::eos, end_of_time);
  // a checkpoint heard of whose barrier never came (the inputs ended first)
  if (announced_ > checkpointed_) answer_finished(announced_);
  maybe_done();
}

/// Done once end-of-stream went out on every output and nothing waits for credit (a replica's
/// slot included), and every copy of an input ended: a lagging copy's sender still needs its
/// credit back to finish.
void stage_core::maybe_done() {
  if (!eos_sent_ || done_ || sending() || slots_open_ > 0 || feedback_open_ > 0) return;
  done_ = true;
  metrics_.busy_ns += (clock::now() - busy_since_).count();
  io_.done(snapshot());
}

instance_metrics stage_core::snapshot() const {
  auto m = metrics_;
  for (std::size_t p = offset_; p < cfg_.nodes.size(); ++p) {
    auto& o = m.operators[p];
    o.skipped = cfg_.ops[p - offset_]->skipped;
    cfg_.ops[p - offset_]->add_metrics(o.extra);
  }
  m.queued_batches = queued_;
  for (auto& o : outs_)
    for (auto& item : o.ready) m.blocked_batches += item.batch != nullptr;
  m.watermark = outs_.empty() ? input_wm_ : output_wm_;
  return m;
}

// ---- outputs -----------------------------------------------------------------------------------

/// Items wait for credit on an output: the stage takes no more input. A replica's slot never
/// blocks (the primary keeps its pace); check_lag bounds what waits there.
bool stage_core::blocked() const {
  for (std::size_t k = 0; k < outs_.size(); ++k)
    if (!outs_[k].ready.empty() && !trails(k)) return true;
  return false;
}

/// Items wait for credit on some output, a replica's included: the stage is not done yet.
bool stage_core::sending() const {
  for (auto& o : outs_)
    if (!o.ready.empty()) return true;
  return false;
}

/// The slot among those to the copies of `out`'s receiver that paces the stage: the primary's
/// while it runs as deployed, once it is lost the first copy that runs as deployed (the one that
/// took over). Restored copies catch up behind such a copy (one still replaying would slow the
/// stage to its catching up) and lead only when no such copy is left; with no live copy at all,
/// the primary's slot.
std::uint32_t stage_core::leader_of(std::uint32_t out) const {
  const auto p = primary_of_[out];
  const auto& copies = copies_of(p);
  for (bool restored_too : {false, true}) {
    const auto leads = [&](std::uint32_t k) {
      return !outs_[k].lost && (restored_too || !outs_[k].restored);
    };
    if (leads(p)) return p;
    for (auto c : copies)
      if (leads(c)) return c;
  }
  return p;
}

/// A trailing slot with more than `replica_lag` items waiting (besides what a restored copy's
/// replay put there) is dropped for good. The leading one never is: after a takeover it is the
/// receiver's only copy that runs as deployed, and the stage waits for it as for a primary.
void stage_core::check_lag(std::uint32_t out) {
  auto& o = outs_[out];
  if (!trails(out) || o.ready.size() <= cfg_.opts.replica_lag + o.replay) return;
  o.lost = true;
  o.ready.clear();
  io_.copy_dropped(out);
}

/// An operator of the stage takes no more input for now (async queue or synchronizer full).
bool stage_core::held() const {
  for (auto& op : cfg_.ops)
    if (op->saturated()) return true;
  return false;
}

/// Sends `b` over output edge `e`, partitioned as the edge says.
void stage_core::route(std::size_t e, batch_ptr b) {
  const auto& edge = cfg_.edges[e];
  const auto n = edge.slots.size();
  if (edge.loop) {
    const auto& t = b->times;
    loop_low_ = std::min(loop_low_, t.empty() ? start_of_time : *std::min_element(t.begin(), t.end()));
  }
  switch (edge.part) {
    case partitioning::forward:
    case partitioning::rebalance:
      append(edge.slots[n == 1 ? 0 : next_rr(e, n)], std::move(b));
      break;
    case partitioning::broadcast:
      for (std::size_t i = 0; i < n; ++i) append(edge.slots[i], i + 1 == n ? std::move(b) : b->clone());
      break;
    case partitioning::key_hash:
      scatter(edge, std::move(b));
      break;
  }
}

std::size_t stage_core::next_rr(std::size_t edge, std::size_t n) {
  if (rr_.size() <= edge) rr_.resize(edge + 1, cfg_.instance);
  return rr_[edge]++ % n;
}

void stage_core::scatter(const output_edge& edge, batch_ptr b) {
  const auto n = edge.slots.size();
  if (n == 1) {
    append(edge.slots[0], std::move(b));
    return;
  }
  const auto& hashes = b->hashes;
  targets_.resize(hashes.size());
  for (std::size_t i = 0; i < hashes.size(); ++i)
    targets_[i] = static_cast<std::uint32_t>((hashes[i] >> 32) % n);
  buffers_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    auto& o = outs_[edge.slots[i]];
    if (!o.buffer) o.buffer = b->make_empty(o.bound.limit());
    buffers_[i] = o.buffer.get();
  }
  b->scatter(targets_.data(), buffers_.data());
  for (std::size_t i = 0; i < n; ++i)
    if (auto& o = outs_[edge.slots[i]]; o.buffer->size() >= o.bound.limit()) seal(edge.slots[i]);
}

/// Adds b to the output's batch in the making. A large batch (at least half the batch size and
/// `travels_alone` elements) goes out as it is, behind what was in the making, rather than being
/// copied into it: copying a filter's half-full batches cost more than the message they save.
/// Small batches are still merged, where the message costs more than the copy.
void stage_core::append(std::uint32_t out, batch_ptr b) {
  constexpr std::size_t travels_alone = 512;
  auto& o = outs_[out];
  const auto limit = o.bound.limit();
  if (o.buffer && b->size() >= travels_alone && b->size() * 2 >= limit) seal(out);
  if (!o.buffer)
    o.buffer = std::move(b);
  else
    o.buffer->append(*b);
  if (o.buffer->size() >= limit) seal(out);
}

/// Moves the partly filled batch to the send queue.
void stage_core::seal(std::uint32_t out) {
  auto& o = outs_[out];
  if (o.buffer && !o.buffer->empty()) {
    if (!logs_.empty() && !copies_of(out).empty()) record(out, {o.buffer->clone()});
    // the receiver's replicas get the same batch, cut at the same place
    for (auto c : copies_of(out))
      if (!outs_[c].lost) {
        outs_[c].ready.push_back({o.buffer->clone()});
        try_send(c);
        check_lag(c);
      }
    if (!o.lost) o.ready.push_back({std::move(o.buffer)});
  }
  o.buffer.reset();
  try_send(out);
  if (o.restored && !o.lost) check_lag(out);
}

const std::vector<std::uint32_t>& stage_core::copies_of(std::uint32_t out) const {
  static const std::vector<std::uint32_t> none;
  return out < cfg_.output_copies.size() ? cfg_.output_copies[out] : none;
}

/// A partly filled output batch goes out now (after a synchronizer admitted a slice).
void stage_core::flush_outputs() {
  for (std::uint32_t o = 0; o < outs_.size(); ++o) seal(o);
}

/// Adaptive batching: the stage is idle, so partly filled batches go out where the receiver keeps
/// up: fewer than `grant_` (credit/2) batches in flight, as Nagle's algorithm sends a small
/// segment only while little is unacknowledged. Otherwise the batch keeps filling while the
/// receiver works through what it has (natural batching), and goes out at the first idle moment
/// after the receiver returned its credit, which it does once it took `grant_` batches, so nothing
/// waits for the linger timer. Without that bound a fast source would send a stream of tiny
/// batches, each paying the per-message cost, and fall behind at rates a full batch sustains.
void stage_core::send_partial() {
  for (std::uint32_t k = 0; k < outs_.size(); ++k) {
    const auto& o = outs_[k];
    if (o.buffer && o.ready.empty() && o.credit + grant_ > cfg_.opts.credit) seal(k);
  }
}

/// A signal seals the partly filled batch in front of it: no element emitted after a watermark may
/// reach the receiver before it (docs/event-time.md). Watermarks are not coalesced either: a
/// window that sees its end and its end + lateness in one watermark reports one final result
/// instead of an on-time and a final one, so results would depend on credit and timing.
void stage_core::signal(std::uint32_t out, signal_kind kind, event_time wm) {
  if (kind == signal_kind::watermark) output_wm_ = std::max(output_wm_, wm);
  seal(out);
  if (!logs_.empty()) record(out, {nullptr, kind, wm});
  for (auto c : copies_of(out))
    if (!outs_[c].lost) {
      outs_[c].ready.push_back({nullptr, kind, wm});
      try_send(c);
      check_lag(c);
    }
  auto& o = outs_[out];
  if (!o.lost) {
    o.ready.push_back({nullptr, kind, wm});
    try_send(out);
    if (o.restored) check_lag(out);
  }
  if (kind != signal_kind::barrier) return;
  // a copy restored from this checkpoint before this copy of the stage got there starts now
  auto revive = [&](std::uint32_t k) {
    auto& r = outs_[k];
    if (r.waits_for == 0 || r.waits_for != static_cast<std::uint64_t>(wm)) return;
    r.waits_for = 0;
    r.lost = false;
  };
  revive(out);
  for (auto c : copies_of(out)) revive(c);
}

/// Keeps what output slot `out` sends (a sealed batch or a signal) for a copy of its receiver
/// restored later; past replay_limit elements the log is dropped until the next barrier.
void stage_core::record(std::uint32_t out, ready_item item) {
  if (copies_of(out).empty()) return;  // an unreplicated receiver is never restored
  auto& log = logs_[out];
  const bool barrier = !item.batch && item.kind == signal_kind::barrier;
  if (!log.complete) {
    if (barrier) {
      log.since = static_cast<std::uint64_t>(item.wm);
      log.complete = true;
    }
    return;
  }
  if (item.batch) log.elements += item.batch->size();
  log.items.push_back(std::move(item));
  if (log.elements <= cfg_.opts.replay_limit) return;
  log.complete = false;
  log.items.clear();
  log.elements = 0;
}

/// Checkpoint `id` completed: no copy will be restored from an older one, so the logs start at
/// its barrier.
void stage_core::trim_logs(std::uint64_t id) {
  for (auto& log : logs_) {
    if (!log.complete || log.since >= id) continue;
    auto at = std::find_if(log.items.begin(), log.items.end(), [&](const ready_item& i) {
      return !i.batch && i.kind == signal_kind::barrier && static_cast<std::uint64_t>(i.wm) == id;
    });
    if (at == log.items.end()) continue;  // this copy has not sent that barrier yet
    for (auto i = log.items.begin(); i != at; ++i)
      if (i->batch) log.elements -= i->batch->size();
    log.items.erase(log.items.begin(), std::next(at));
    log.since = id;
  }
}

/// A signal on every output; a replica's slot gets it through its primary's (signal()).
void stage_core::signal_all(signal_kind kind, event_time wm) {
  for (std::uint32_t o = 0; o < outs_.size(); ++o)
    if (!copy_slot_[o]) signal(o, kind, wm);
}

void stage_core::try_send(std::uint32_t out) {
  auto& o = outs_[out];
  while (!o.ready.empty()) {
    auto& item = o.ready.front();
    if (item.batch) {
      if (o.credit == 0) return;
      --o.credit;
      if (o.bound.learns()) o.bound.sent(item.batch->size(), clock::now());
      io_.send_batch(out, std::move(item.batch));
    } else {
      io_.send_signal(out, item.kind, item.wm);
    }
    o.ready.pop_front();
    if (o.replay > 0) --o.replay;
  }
}

}  // namespace tidemark::detail
