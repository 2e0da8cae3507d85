// The logic of one stage instance without an actor: its operator tree, input channels with credit
// and watermark alignment, output channels with credit, batching and partitioning, and the finish
// protocol. A shell (stage_actor, or a test) feeds it messages and timers and carries out what it
// asks for through stage_io.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "batch_bound.hpp"
#include "stage_inputs.hpp"
#include "tidemark/core/graph.hpp"
#include "tidemark/core/plan.hpp"
#include "tidemark/core/state.hpp"
#include "tidemark/runtime/runtime.hpp"

namespace tidemark::detail {

/// Output channels of one stage edge, which carries output `port` of the operator at `from_op`.
struct output_edge {
  partitioning part = partitioning::forward;
  std::uint32_t from_op = 0;
  std::uint32_t port = 0;
  std::vector<std::uint32_t> slots;  ///< output slots of the stage instance
  bool loop = false;                 ///< the receiver runs in the sender's loop
};

/// Where the sender of an input slot runs, seen from a stage in a loop (job::iterate): outside
/// the loop, inside it, or inside it over the feedback edge that closes it.
enum class loop_role : std::uint8_t { outside, inside, feedback };

/// One stage instance with its operators created.
struct stage_config {
  std::uint32_t stage = 0;
  std::uint32_t instance = 0;
  std::uint32_t parallelism = 1;
  std::vector<const logical_node*> nodes;  ///< the stage's operators, in plan order
  std::vector<fused_operator> tree;        ///< per operator: what it reads within the stage
  std::unique_ptr<source_logic> source;    ///< set when nodes[0] is a source
  std::vector<std::unique_ptr<operator_logic>> ops;  ///< one per non-source node, in order
  std::vector<std::uint32_t> input_ports;  ///< per input slot: input index of the head operator
  /// Per input slot: the producer's output port it reads (its codec stores the batches in flight
  /// of an unaligned checkpoint). Needed only with run_options::checkpoints.unaligned.
  std::vector<const output_port*> input_from;
  /// Per input slot: the logical input it feeds (values 0..n-1). Slots of one logical input carry
  /// copies of one upstream instance (its primary and replicas), which must send the same element
  /// sequence; the stage passes each element on once, from whichever copy brought it first, and
  /// returns every copy's credit (stage_inputs.hpp, docs/replication.md). Empty: every slot is its
  /// own logical input.
  std::vector<std::uint32_t> logical_input;
  /// Per input slot (empty: all outside): how its sender relates to the stage's loop. A stage
  /// with feedback slots has nothing else (its head is the loop's feedback node or its gate).
  std::vector<loop_role> input_roles;
  /// Hand the logical inputs to the operators in an order that depends only on what each input
  /// carries, not on when it arrived (input_merge in stage_inputs.hpp), so that a replica's
  /// operators see what the primary's see.
  bool deterministic_merge = false;
  std::uint32_t outputs = 0;               ///< output slots
  std::vector<output_edge> edges;
  /// Per output slot (empty, or shorter than `outputs`: none): the output slots to the replicas of
  /// that slot's receiver. They get every batch and signal of the slot, each with its own credit;
  /// partitioning names only the slot itself (in `edges`).
  std::vector<std::vector<std::uint32_t>> output_copies;
  /// Per output slot (empty, or shorter than `outputs`: none): its receiver runs in another
  /// process. Adaptive batching does not bound the batches there (batch_bound.hpp): the round
  /// trip of the credit over the network would read as the receiver's work.
  std::vector<bool> remote_outputs;
  run_options opts;
  /// State of this instance in completed checkpoint `restore_checkpoint` (0: start fresh).
  std::uint64_t restore_checkpoint = 0;
  std::string restore_state;
};

/// How a stage_core acts on the world. One call per batch or signal, none per element.
class stage_io {
 public:
  virtual ~stage_io() = default;
  /// Sends a batch on output slot `out` (the core has taken one credit of that slot).
  virtual void send_batch(std::uint32_t out, batch_ptr b) = 0;
  virtual void send_signal(std::uint32_t out, signal_kind kind, event_time wm) = 0;
  /// Returns `n` credits to the sender of input slot `in`.
  virtual void return_credit(std::uint32_t in, std::uint32_t n) = 0;
  /// Calls stage_core::on_flush after `linger`.
  virtual void schedule_flush(std::chrono::milliseconds linger) = 0;
  /// Calls stage_core::on_pump after `delay` or, when it is zero, soon, after pending messages (a
  /// source yields between pulls, a stage with unaligned checkpoints between batches; a source
  /// with nothing due waits for it: source_logic::idle_for).
  virtual void schedule_pump(std::chrono::nanoseconds delay) = 0;
  /// The stage ended: every output got end-of-stream and every batch was sent.
  virtual void done(instance_metrics m) = 0;
  /// An operator failed; the core does nothing more.
  virtual void failed(std::string what) = 0;
  /// The stage took its part of checkpoint `id` (its barrier went out behind the state it saw).
  virtual void checkpointed(std::uint64_t id, std::string state, double alignment_ms) = 0;
  /// Runs `write` (it writes the state of checkpoint `id` the stage captured at the barrier) on a
  /// thread other than the stage's, and then, on the stage's thread, calls
  /// stage_core::on_state_written with what it returned or the message of what it threw. False:
  /// the shell cannot (the default), and the core writes the state at once.
  virtual bool write_elsewhere(std::uint64_t id, std::function<std::string()> write) {
    return false;
  }
  /// Output slot `out` leads to a replica that fell more than run_options::replica_lag items
  /// behind: the stage sends it nothing more (the replica is gone for good). Also when a copy
  /// restored behind `out` cannot be caught up (on_output_restored).
  virtual void copy_dropped(std::uint32_t out) = 0;
  /// The copy restored behind input slot `in` delivered again everything its logical input had
  /// received when it was restored (on_input_restored): it has caught up.
  virtual void copy_caught_up(std::uint32_t in) = 0;
};

/// The state of a stage instance for one checkpoint as captured at its barrier: what write()
/// turns into the piece, on any thread, while the stage goes on.
struct captured_state {
  std::uint64_t id = 0;
  std::vector<std::uint8_t> head;  ///< the stage's own part, written at the capture
  struct section {
    std::string failure;  ///< how a failure of this operator's capture is worded (its name)
    state_capture state;
  };
  std::vector<section> sections;  ///< one per operator, the source first
  /// After the sections: what an unaligned checkpoint found in flight (on the outputs, then on
  /// the inputs; two zero counts otherwise).
  std::vector<std::uint8_t> tail;
  /// The piece; throws job_error (with the operator's name) when a capture fails.
  std::string write() const;
};

class stage_core {
 public:
  stage_core(stage_config cfg, stage_io& io);
  ~stage_core();
  stage_core(const stage_core&) = delete;
  stage_core& operator=(const stage_core&) = delete;

  // ---- what the shell feeds in ---------------------------------------------------------------

  /// Loads the operators' state from `restore_state` (the shell calls it once, before anything
  /// else but set_wakeup; a source's position is loaded in start(), after it opened).
  void restore();
  /// Opens the source and starts pulling (or finishes at once a stage without inputs).
  void start();
  /// Checkpoint `id` started (every stage hears of it): a source stage, a stage whose inputs
  /// ended but whose operators still hold work, and a loop's feedback stage take their part and
  /// send the barrier downstream; a stage whose outputs ended answers with the state "finished"
  /// (its inputs ended before the barrier could reach it, so its state is final); any other stage
  /// takes its part when the barrier arrives, or answers "finished" if its inputs end first.
  void on_checkpoint(std::uint64_t id);
  /// The state of checkpoint `id` that stage_io::write_elsewhere wrote, or what failed (`error`
  /// not empty: the stage fails).
  void on_state_written(std::uint64_t id, std::string state, std::string error);
  /// Checkpoint `id` is complete: the operators commit what they staged for it.
  void on_checkpoint_complete(std::uint64_t id);
  /// Pulls (a source) or handles what waits in the inbox (a stage that yielded).
  void on_pump();
  void on_data(std::uint32_t in, batch_ptr b);
  void on_signal(std::uint32_t in, signal_kind kind, event_time wm);
  void on_credit(std::uint32_t out, std::uint32_t n);
  /// Copies of neighbours are gone (their host died, docs/replication.md): output slots `outs`
  /// get nothing more and never hold the stage back; input slots `ins` count as ended without
  /// ending their logical input (another copy of the sender carries it).
  void on_copies_lost(const std::vector<std::uint32_t>& outs,
                      const std::vector<std::uint32_t>& ins);
  /// The copy of a receiver behind output slot `out` was restored from completed checkpoint
  /// `checkpoint` (0: the state the channels started from) after its host died
  /// (docs/replication.md, "Restoring the replication level"): the slot gets everything the stage
  /// sent towards that receiver since that checkpoint's barrier, then what follows, with fresh
  /// credit. Like a replica's slot it never blocks the stage and is dropped past replica_lag items
  /// beyond the replayed ones. When the replay log does not reach back to that barrier (past
  /// run_options::replay_limit), the slot stays lost and copy_dropped reports it.
  void on_output_restored(std::uint32_t out, std::uint64_t checkpoint);
  /// The copy of a sender behind input slot `in` was restored from checkpoint `checkpoint`: its
  /// elements count from where the slot's logical input stood right after that barrier, and the
  /// stage waits for its end-of-stream again. copy_caught_up reports when it caught up.
  void on_input_restored(std::uint32_t in, std::uint64_t checkpoint);
  /// The linger time of a partly filled batch passed.
  void on_flush();
  /// Nothing more waits for this stage right now (its mailbox is empty). Under adaptive batching
  /// (run_options::adaptive_batching) partly filled batches go out on every output with credit.
  void on_idle();
  /// An operator has asynchronous completions (operator_logic::on_wakeup).
  void on_wakeup();
  /// The operators' timer ticked at `now_ms` (wall clock).
  void on_timer(std::int64_t now_ms);

  std::uint32_t stage() const noexcept { return cfg_.stage; }
  std::uint32_t instance() const noexcept { return cfg_.instance; }

  /// The shortest timer period of the operators (0: no timer).
  std::int64_t timer_period_ms() const noexcept { return timer_period_; }
  /// Hands operators with asynchronous work the function that schedules on_wakeup.
  void set_wakeup(const std::function<void()>& wake);
  /// Every input ended (or the source is exhausted): no timer is needed any more.
  bool finished() const noexcept { return finished_; }
  /// done or failed was reported.
  bool over() const noexcept { return done_ || failed_; }

  /// Batches that arrived and wait for the operators.
  std::uint64_t queued_batches() const noexcept { return queued_; }
  /// Credits left on output slot `out`, and items waiting there for credit.
  std::uint32_t credit(std::uint32_t out) const { return outs_[out].credit; }
  std::size_t waiting(std::uint32_t out) const { return outs_[out].ready.size(); }
  /// The counters so far, with the queues and the watermark as they are now (live views).
  instance_metrics snapshot() const;

 private:
  class operator_output;
  friend class operator_output;

  /// One item that waits on an output slot: a sealed batch, or a signal behind it.
  struct ready_item {
    batch_ptr batch;  // null for signals
    signal_kind kind = signal_kind::watermark;
    event_time wm = 0;
  };
  struct out_state {
    std::uint32_t credit = 0;
    bool idle = false;             // the last idle/active signal sent was idle
    batch_ptr buffer;              // partly filled batch
    std::deque<ready_item> ready;  // sealed, waiting for credit
    bool lost = false;             // its receiver (a copy) is gone: nothing goes out
    bool restored = false;         // leads to a copy restored mid-run: never blocks the stage
    std::uint64_t waits_for = 0;   // restored before it sent barrier n: revived behind it
    std::size_t replay = 0;        // replayed items still waiting (not counted as lag)
    batch_bound bound;             // adaptive batching: the most elements a batch should hold
  };
  /// What an output slot towards a replicated receiver sent since the barrier of checkpoint
  /// `since`, for a copy of the receiver restored from that checkpoint (on_output_restored).
  struct replay_log {
    std::uint64_t since = 0;
    bool complete = true;  // false: dropped past replay_limit, until the next barrier
    std::uint64_t elements = 0;
    std::deque<ready_item> items;
  };
  /// A logical input (one slot, or the slots of an upstream instance's copies).
  struct in_state {
    std::uint32_t port = 0;
    event_time wm = start_of_time;
    bool idle = false;
    bool eos = false;
    bool at_barrier = false;  // the barrier being aligned arrived here: park what follows
    loop_role role = loop_role::outside;
    std::deque<event_time> probes;  // loop probes arrived here, not yet passed on
  };
  /// The readers of one output port of one operator.
  struct port_readers {
    std::vector<std::uint32_t> fused;  // positions of the fused operators that read it
    std::vector<std::uint32_t> edges;  // indices into cfg_.edges
  };

  // the operator tree
  void build_routes();
  operator_logic& op(std::size_t pos) { return *cfg_.ops[pos - offset_]; }
  void emit_from(std::size_t pos, std::uint32_t port, batch_ptr b);
  void watermark_from(std::size_t pos, event_time wm);
  void idle_from(std::size_t pos, bool idle);
  void deliver(std::size_t pos, std::size_t input, batch_ptr b);
  template <class F>
  void call(std::size_t pos, F&& f);
  template <class F>
  void guarded(F&& f);
  std::string failure_text(std::size_t pos, const std::string& what) const;
  void fail(std::string what);

  // inputs and sources
  void set_up_inputs();
  void pump();
  void receive(input_item item);
  void acknowledge(std::uint32_t slot);
  void close_slot(std::uint32_t slot);
  void drain();
  void advance_inputs();
  void resume();
  void yield();
  void after_work();

  // checkpoints
  void on_barrier(std::uint32_t input, std::uint64_t id);
  bool aligned() const;
  void take_checkpoint(std::uint64_t id, double alignment_ms);
  void answer_finished(std::uint64_t id);
  captured_state capture_state(std::uint64_t id);
  void send_piece(std::uint64_t id, captured_state state, double alignment_ms);
  void start_cut(std::uint64_t id, std::uint32_t input);
  void start_loop_checkpoint();
  bool cut_through(std::uint32_t in, signal_kind kind, event_time wm);
  void maybe_complete_cut();
  const batch_codec& codec_of(const output_port* port) const;
  void read_source_state();

  // loops (docs/timezones.md, "Loops at run time")
  bool in_loop() const { return !loop_outs_.empty(); }
  void pass_probe();
  void start_round();
  void confirm(event_time low);
  event_time outside_wm() const;
  event_time loop_wm() const;
  event_time lowest_held() const;

  // finishing
  void finish();
  void continue_finish();
  void maybe_done();

  // outputs
  bool blocked() const;
  bool sending() const;
  void check_lag(std::uint32_t out);
  bool held() const;
  void route(std::size_t edge, batch_ptr b);
  std::size_t next_rr(std::size_t edge, std::size_t n);
  void scatter(const output_edge& edge, batch_ptr b);
  void append(std::uint32_t out, batch_ptr b);
  void seal(std::uint32_t out);
  const std::vector<std::uint32_t>& copies_of(std::uint32_t out) const;
  void flush_outputs();
  void send_partial();
  void signal(std::uint32_t out, signal_kind kind, event_time wm);
  void signal_all(signal_kind kind, event_time wm);
  void try_send(std::uint32_t out);
  std::uint32_t leader_of(std::uint32_t out) const;
  /// Whether output slot `out` trails its leader: it never blocks the stage, and past replica_lag
  /// waiting items it is dropped.
  bool trails(std::uint32_t out) const { return leader_of(out) != out; }
  void record(std::uint32_t out, ready_item item);
  void trim_logs(std::uint64_t id);

  stage_config cfg_;
  stage_io& io_;
  std::size_t offset_ = 0;  // 1 when nodes[0] is a source (it has no operator_logic)
  std::vector<std::unique_ptr<operator_output>> links_;
  std::vector<std::vector<port_readers>> routes_;        // per position, per port
  std::vector<std::vector<std::uint32_t>> readers_;      // per position: fused readers, any port
  std::vector<std::vector<std::uint32_t>> signal_outs_;  // per position: its output slots
  std::vector<std::vector<std::uint32_t>> idle_outs_;    // per position: output slots below it
  std::vector<out_state> outs_;
  std::vector<bool> copy_slot_;              // per output slot: it leads to a replica
  std::vector<std::uint32_t> primary_of_;    // per output slot: the slot whose stream it gets
  std::vector<replay_log> logs_;             // per output slot (empty: no replay logs)
  std::vector<in_state> ins_;                // per logical input
  std::vector<std::uint32_t> unacked_;       // per input slot: batches taken, credit not returned
  std::vector<std::uint32_t> input_of_;      // per input slot: its logical input
  std::unique_ptr<copy_filter> copies_;      // set when a logical input has several slots
  std::unique_ptr<input_merge> merge_;       // set for a deterministic merge of several inputs
  bool arranged_ = false;                    // copies_ or merge_: arrival order is not enough
  std::uint32_t slots_open_ = 0;             // with copies: slots whose end-of-stream is to come
  std::vector<bool> slot_closed_;            // with copies: per slot, ended or its sender lost
  std::deque<input_item> inbox_;
  std::vector<std::size_t> rr_;
  std::vector<std::uint32_t> targets_;
  std::vector<batch_base*> buffers_;
  instance_metrics metrics_;
  std::uint64_t queued_ = 0;
  std::uint32_t grant_ = 1;
  std::int64_t timer_period_ = 0;
  event_time input_wm_ = start_of_time;
  event_time output_wm_ = start_of_time;  // the highest watermark sent on an output
  bool pump_scheduled_ = false;
  bool flush_scheduled_ = false;
  bool finished_ = false;
  std::size_t finish_next_ = 0;  // the position being finished
  bool finish_called_ = false;   // finish() of finish_next_ has run
  bool eos_sent_ = false;
  bool failed_ = false;
  bool done_ = false;
  std::chrono::steady_clock::time_point busy_since_;  // start of the call that is running
  // checkpoints: the highest one heard of, the last one answered (taken, or "finished")
  std::uint64_t announced_ = 0;
  std::uint64_t checkpointed_ = 0;
  // checkpoints: the barrier being aligned (0: none), input parked behind it, the last taken
  std::uint64_t aligning_ = 0;
  std::chrono::steady_clock::time_point aligning_since_;
  std::deque<input_item> parked_;
  // unaligned checkpoints: per output slot the port whose stream it carries; the checkpoint whose
  // first barrier arrived, its state so far, the inputs whose barrier is still to come and what
  // they (and the inbox, when the cut was taken) received before it
  std::vector<const output_port*> out_ports_;
  struct cut {
    std::uint64_t id = 0;
    std::chrono::steady_clock::time_point since;
    captured_state state;
    std::vector<bool> open;
    std::vector<input_item> in_flight;
  };
  std::unique_ptr<cut> cut_;
  std::string source_state_;  // the source's restored position, loaded in start()
  // loops: output slots towards the stage's loop; whether it receives the feedback edge (it runs
  // the probe rounds) or inputs from outside (it holds a probe that could confirm nothing new);
  // the lowest event time sent into the loop since the last probe passed; a feedback stage's
  // rounds, and its feedback slots whose end-of-stream is still to come
  std::vector<std::uint32_t> loop_outs_;
  bool feedback_ = false;
  bool contributes_ = false;
  event_time loop_low_ = end_of_time;
  bool round_after_end_ = false;  // the round started after the end-of-time watermark went out
  bool loop_closed_ = false;
  std::uint32_t feedback_open_ = 0;
  // the checkpoint whose captured state is being written elsewhere (0: none), its alignment time
  std::uint64_t writing_ = 0;
  double writing_alignment_ms_ = 0;
};

}  // namespace tidemark::detail
