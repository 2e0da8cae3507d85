// stage_core step by step, without threads or actors: credit, signal order, watermark alignment
// over several inputs, idleness, end-of-stream behind blocked outputs, key_hash scatter, the
// alignment of checkpoint barriers with the state they capture, checkpoints after a stage ended,
// duplicate suppression over
// replica copies of an input, the deterministic merge of several inputs, and what restores a copy
// mid-run: the sender's replay log since a checkpoint and the receiver's place for the copy.
#define BOOST_TEST_MODULE stage_core
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <functional>
#include <random>
#include <sstream>

#include "stage_core.hpp"
#include "tidemark/core/state.hpp"

using namespace tidemark;
using namespace tidemark::detail;

namespace {

/// Records what the core asks for, one line per request.
struct recording_io final : stage_io {
  std::vector<std::string> sent;     ///< "out 0: [1 2]", "out 0: watermark 5", ...
  std::vector<std::string> credits;  ///< "in 1: 2"
  int flushes = 0;
  int pumps = 0;
  std::vector<std::int64_t> pump_delays_us;  ///< of every pump asked for
  bool is_done = false;
  std::string failure;
  std::vector<std::pair<std::uint64_t, std::string>> checkpoints;  ///< (id, state)
  std::vector<std::uint32_t> dropped;  ///< output slots of replicas dropped for lagging
  std::vector<std::uint32_t> caught_up;  ///< input slots whose restored copy caught up
  /// Set: the core's checkpoint state is written only when the test runs what `writes` holds.
  bool writes_elsewhere = false;
  std::vector<std::pair<std::uint64_t, std::function<std::string()>>> writes;

  void send_batch(std::uint32_t out, batch_ptr b) override {
    std::ostringstream line;
    line << "out " << out << ": [";
    const auto& xs = static_cast<batch<int>&>(*b).values;
    for (std::size_t i = 0; i < xs.size(); ++i) line << (i ? " " : "") << xs[i];
    line << "]";
    sent.push_back(line.str());
  }
  void send_signal(std::uint32_t out, signal_kind kind, event_time wm) override {
    static const char* names[] = {"watermark", "idle", "active", "eos", "barrier"};
    auto line = "out " + std::to_string(out) + ": " + names[static_cast<int>(kind)];
    if (kind == signal_kind::watermark || kind == signal_kind::barrier) line += " " + std::to_string(wm);
    sent.push_back(line);
  }
  void return_credit(std::uint32_t in, std::uint32_t n) override {
    credits.push_back("in " + std::to_string(in) + ": " + std::to_string(n));
  }
  void schedule_flush(std::chrono::milliseconds) override { ++flushes; }
  void schedule_pump(std::chrono::nanoseconds delay) override {
    ++pumps;
    pump_delays_us.push_back(std::chrono::duration_cast<std::chrono::microseconds>(delay).count());
  }
  void done(instance_metrics) override { is_done = true; }
  void failed(std::string what) override { failure = std::move(what); }
  void checkpointed(std::uint64_t id, std::string state, double) override {
    checkpoints.emplace_back(id, std::move(state));
  }
  bool write_elsewhere(std::uint64_t id, std::function<std::string()> write) override {
    if (writes_elsewhere) writes.emplace_back(id, std::move(write));
    return writes_elsewhere;
  }
  void copy_dropped(std::uint32_t out) override { dropped.push_back(out); }
  void copy_caught_up(std::uint32_t in) override { caught_up.push_back(in); }

  /// The lines sent since the last call.
  std::vector<std::string> take() { return std::exchange(sent, {}); }
};

/// Passes batches on and records the watermarks it sees (and, given `finished`, the checkpoints
/// it was restored from as finished).
struct pass_through final : operator_logic {
  explicit pass_through(std::vector<event_time>& wms, std::vector<std::uint64_t>* finished = nullptr)
      : wms_(wms), finished_(finished) {}
  void process(std::size_t, batch_ptr in, emitter& out) override { out.emit(std::move(in)); }
  void on_watermark(event_time wm, emitter& out) override {
    wms_.push_back(wm);
    out.emit_watermark(wm);
  }
  void restore_finished(std::uint64_t id) override {
    if (finished_) finished_->push_back(id);
  }

 private:
  std::vector<event_time>& wms_;
  std::vector<std::uint64_t>* finished_;
};

/// Passes batches on and keeps the sum of what it saw as its checkpointed state.
struct summing final : operator_logic {
  explicit summing(long& sum) : sum_(sum) {}
  void process(std::size_t, batch_ptr in, emitter& out) override {
    for (int x : static_cast<batch<int>&>(*in).values) sum_ += x;
    out.emit(std::move(in));
  }
  void snapshot(state_writer& w) override { w.write(sum_); }
  void restore(state_reader& r) override { r.read(sum_); }

 private:
  long& sum_;
};

batch_ptr ints(std::vector<int> xs, std::vector<std::uint64_t> hashes = {}) {
  auto b = std::make_unique<batch<int>>(std::move(xs));
  b->hashes = std::move(hashes);
  return b;
}

/// One pass_through operator with `inputs` input slots and one output edge over `outputs` slots.
struct one_operator_stage {
  one_operator_stage(std::uint32_t inputs, std::uint32_t outputs, partitioning part,
                     std::size_t batch_size, std::uint32_t credit, bool sum = false,
                     std::uint64_t restore_from = 0, std::string state = {},
                     std::vector<std::uint32_t> logical_input = {}, bool merge = false) {
    node.name = "pass";
    node.op = "pass_through";
    stage_config cfg;
    cfg.nodes = {&node};
    cfg.tree = {{0, 0, 0}};
    if (sum)
      cfg.ops.push_back(std::make_unique<summing>(total));
    else
      cfg.ops.push_back(std::make_unique<pass_through>(watermarks, &restored_finished));
    cfg.restore_checkpoint = restore_from;
    cfg.restore_state = std::move(state);
    cfg.input_ports.assign(inputs, 0);
    cfg.logical_input = std::move(logical_input);
    cfg.deterministic_merge = merge;
    cfg.outputs = outputs;
    output_edge edge;
    edge.part = part;
    for (std::uint32_t o = 0; o < outputs; ++o) edge.slots.push_back(o);
    cfg.edges = {edge};
    cfg.opts.batch_size = batch_size;
    cfg.opts.credit = credit;
    core = std::make_unique<stage_core>(std::move(cfg), io);
  }

  logical_node node;
  std::vector<event_time> watermarks;  ///< what the operator saw
  std::vector<std::uint64_t> restored_finished;  ///< its restore_finished calls
  long total = 0;                      ///< what a summing operator summed
  recording_io io;
  std::unique_ptr<stage_core> core;
};

using lines = std::vector<std::string>;

/// Emits `per_pull` consecutive integers per pull (at most `max`), forever.
struct counting_source final : source_logic {
  explicit counting_source(int per_pull) : per_pull_(per_pull) {}
  bool pull(std::size_t max, emitter& out) override {
    auto b = std::make_unique<batch<int>>();
    for (int i = 0; i < per_pull_ && b->values.size() < max; ++i) b->values.push_back(next_++);
    out.emit(std::move(b));
    return true;
  }

 private:
  int per_pull_;
  int next_ = 0;
};

/// Emits the next integer when the test says one is due, and otherwise nothing, saying when the
/// next one is due.
struct paced_source final : source_logic {
  bool pull(std::size_t, emitter& out) override {
    if (due) out.emit(std::make_unique<batch<int>>(std::vector<int>{next_++}));
    return true;
  }
  std::chrono::nanoseconds idle_for() const override { return std::chrono::microseconds{250}; }
  bool due = false;

 private:
  int next_ = 0;
};

/// Keeps the even elements.
struct keep_even final : operator_logic {
  void process(std::size_t, batch_ptr in, emitter& out) override {
    auto& xs = static_cast<batch<int>&>(*in).values;
    xs.erase(std::remove_if(xs.begin(), xs.end(), [](int x) { return x % 2 != 0; }), xs.end());
    out.emit(std::move(in));
  }
};

/// counting_source -> keep_even, one output slot with credit 8.
struct source_stage {
  source_stage(int per_pull, std::size_t batch_size, bool adaptive,
               std::unique_ptr<source_logic> source = nullptr) {
    source_node.name = "count";
    source_node.op = "source";
    filter_node.name = "even";
    filter_node.op = "filter";
    stage_config cfg;
    cfg.nodes = {&source_node, &filter_node};
    cfg.tree = {{0, 0, 0}, {1, 0, 0}};
    cfg.source = source ? std::move(source) : std::make_unique<counting_source>(per_pull);
    cfg.ops.push_back(std::make_unique<keep_even>());
    cfg.outputs = 1;
    cfg.edges = {output_edge{partitioning::forward, 1, 0, {0}}};
    cfg.opts.batch_size = batch_size;
    cfg.opts.credit = 8;
    cfg.opts.adaptive_batching = adaptive;
    core = std::make_unique<stage_core>(std::move(cfg), io);
  }

  logical_node source_node;
  logical_node filter_node;
  recording_io io;
  std::unique_ptr<stage_core> core;
};

}  // namespace

BOOST_AUTO_TEST_CASE(exhausted_credit_stops_draining_until_credit_returns) {
  one_operator_stage s{1, 1, partitioning::forward, 1, 2};
  for (int i = 0; i < 4; ++i) s.core->on_data(0, ints({i}));
  // two credits: two batches out, the third waits for credit, the fourth stays in the inbox
  BOOST_TEST(s.io.take() == (lines{"out 0: [0]", "out 0: [1]"}));
  BOOST_TEST(s.core->credit(0) == 0u);
  BOOST_TEST(s.core->waiting(0) == 1u);
  BOOST_TEST(s.core->queued_batches() == 1u);
  // credit goes back upstream per credit/2 batches the operator took
  BOOST_TEST(s.io.credits == (lines{"in 0: 1", "in 0: 1", "in 0: 1"}));
  s.core->on_credit(0, 2);
  BOOST_TEST(s.io.take() == (lines{"out 0: [2]", "out 0: [3]"}));
  BOOST_TEST(s.core->queued_batches() == 0u);
  BOOST_TEST(s.io.credits.size() == 4u);
}

BOOST_AUTO_TEST_CASE(a_watermark_seals_the_batch_in_front_of_it) {
  one_operator_stage s{1, 1, partitioning::forward, 100, 8};
  s.core->on_data(0, ints({1, 2}));
  BOOST_TEST(s.io.take().empty());  // batching: waits for more or for the linger time
  BOOST_TEST(s.io.flushes == 1);
  s.core->on_signal(0, signal_kind::watermark, 5);
  s.core->on_data(0, ints({3}));
  s.core->on_signal(0, signal_kind::watermark, 7);
  s.core->on_signal(0, signal_kind::watermark, 9);
  s.core->on_data(0, ints({4}));
  BOOST_TEST(s.io.take() == (lines{"out 0: [1 2]", "out 0: watermark 5", "out 0: [3]",
                                   "out 0: watermark 7", "out 0: watermark 9"}));
  s.core->on_flush();
  BOOST_TEST(s.io.take() == (lines{"out 0: [4]"}));
}

BOOST_AUTO_TEST_CASE(a_short_pull_goes_out_at_once_under_adaptive_batching) {
  // the source has one element now: adaptive batching sends it without the linger timer
  source_stage adaptive{1, 100, true};
  adaptive.core->start();
  BOOST_TEST(adaptive.io.take() == (lines{"out 0: [0]"}));
  adaptive.core->on_pump();
  adaptive.core->on_pump();
  BOOST_TEST(adaptive.io.take() == (lines{"out 0: [2]"}));
  // fixed batching keeps the lone element until the batch is full or the linger timer fires
  source_stage fixed{1, 100, false};
  fixed.core->start();
  BOOST_TEST(fixed.io.take().empty());
  BOOST_TEST(fixed.io.flushes == 1);
  fixed.core->on_flush();
  BOOST_TEST(fixed.io.take() == (lines{"out 0: [0]"}));
}

BOOST_AUTO_TEST_CASE(a_source_with_nothing_due_is_pulled_again_when_it_says_and_not_before) {
  auto owned = std::make_unique<paced_source>();
  auto& source = *owned;
  source_stage s{0, 100, true, std::move(owned)};
  s.core->start();  // nothing due: the next pump comes after the source's 250 us
  BOOST_TEST(s.io.take().empty());
  BOOST_TEST(s.io.pump_delays_us == (std::vector<std::int64_t>{250}));
  source.due = true;  // 0 now, and the next pump comes at once: the source may have more
  s.core->on_pump();
  BOOST_TEST(s.io.take() == (lines{"out 0: [0]"}));
  BOOST_TEST(s.io.pump_delays_us.back() == 0);
  BOOST_TEST(s.io.pumps == 2);
}

BOOST_AUTO_TEST_CASE(full_pulls_fill_whole_batches_under_adaptive_batching) {
  // each full pull of 4 leaves 2 after the filter: the stage is busy, so the batches fill up
  // (one pump pulls up to 8 times, the credit: elements 0..31)
  source_stage s{4, 4, true};
  s.core->start();
  BOOST_TEST(s.io.take() == (lines{"out 0: [0 2 4 6]", "out 0: [8 10 12 14]",
                                   "out 0: [16 18 20 22]", "out 0: [24 26 28 30]"}));
  BOOST_TEST(s.io.pumps == 1);
}

BOOST_AUTO_TEST_CASE(a_pump_pulls_while_the_source_has_more_until_its_output_blocks) {
  // full pulls of 1 at batch size 1: a pump pulls up to 8 times (the credit), not once
  source_stage s{1, 1, false};
  s.core->start();
  BOOST_TEST(s.io.take() == (lines{"out 0: [0]", "out 0: [2]", "out 0: [4]", "out 0: [6]"}));
  BOOST_TEST(s.io.pumps == 1);
  s.core->on_pump();  // 8..15: the last credit goes
  BOOST_TEST(s.io.take() == (lines{"out 0: [8]", "out 0: [10]", "out 0: [12]", "out 0: [14]"}));
  BOOST_TEST(s.io.pumps == 2);
  s.core->on_pump();  // 16 waits for credit: the pump stops pulling and schedules no other
  BOOST_TEST(s.io.take().empty());
  BOOST_TEST(s.core->waiting(0) == 1u);
  BOOST_TEST(s.io.pumps == 2);
  // credit: 16 goes, and the source pulls at once, without a pump message: 18 takes the last
  // credit, 20 waits
  s.core->on_credit(0, 2);
  BOOST_TEST(s.io.take() == (lines{"out 0: [16]", "out 0: [18]"}));
  BOOST_TEST(s.core->waiting(0) == 1u);
  BOOST_TEST(s.io.pumps == 2);
}

BOOST_AUTO_TEST_CASE(adaptive_batching_sends_early_only_while_fewer_than_half_the_credit_is_out) {
  // credit 8: up to 4 partly filled batches in flight, then the batch fills until credit returns
  source_stage s{1, 100, true};
  s.core->start();
  for (int i = 0; i < 11; ++i) s.core->on_pump();  // elements 0..11, the filter keeps the even ones
  BOOST_TEST(s.io.take() == (lines{"out 0: [0]", "out 0: [2]", "out 0: [4]", "out 0: [6]"}));
  s.core->on_idle();
  BOOST_TEST(s.io.take().empty());
  // the receiver took the 4 batches and returned their credit; the next idle moment sends the rest
  s.core->on_credit(0, 4);
  s.core->on_idle();
  BOOST_TEST(s.io.take() == (lines{"out 0: [8 10]"}));
}

BOOST_AUTO_TEST_CASE(under_adaptive_batching_a_source_starts_with_batches_of_64) {
  // nothing is known of the receiver before its first credit: a pull of 64, of which the filter
  // keeps 32, and a pull below the batch size goes out at once; fixed batching fills the batch
  // size from pulls of 1000
  source_stage adaptive{1000, 1000, true};
  adaptive.core->start();
  std::string first = "out 0: [0";
  for (int x = 2; x < 64; x += 2) first += " " + std::to_string(x);
  BOOST_TEST(adaptive.io.take() == (lines{first + "]"}));
  source_stage fixed{1000, 1000, false};
  fixed.core->start();
  const auto full = fixed.io.take();
  BOOST_TEST_REQUIRE(!full.empty());
  BOOST_TEST(std::count(full.front().begin(), full.front().end(), ' ') == 1000 + 1);  // "out 0: [...]"
}

BOOST_AUTO_TEST_CASE(an_idle_stage_sends_partly_filled_batches_only_under_adaptive_batching) {
  one_operator_stage s{1, 1, partitioning::forward, 100, 8};
  s.core->on_data(0, ints({1, 2}));
  s.core->on_idle();  // run_options' default is adaptive
  BOOST_TEST(s.io.take() == (lines{"out 0: [1 2]"}));
  source_stage fixed{4, 8, false};
  fixed.core->start();
  fixed.core->on_idle();
  BOOST_TEST(fixed.io.take().empty());
}

BOOST_AUTO_TEST_CASE(signals_wait_behind_batches_that_wait_for_credit) {
  one_operator_stage s{1, 1, partitioning::forward, 1, 1};
  s.core->on_data(0, ints({1}));
  s.core->on_data(0, ints({2}));
  s.core->on_signal(0, signal_kind::watermark, 3);
  BOOST_TEST(s.io.take() == (lines{"out 0: [1]"}));
  s.core->on_credit(0, 1);
  BOOST_TEST(s.io.take() == (lines{"out 0: [2]", "out 0: watermark 3"}));
}

BOOST_AUTO_TEST_CASE(the_input_watermark_is_the_minimum_over_active_inputs) {
  one_operator_stage s{2, 1, partitioning::forward, 10, 4};
  s.core->on_signal(0, signal_kind::watermark, 10);
  BOOST_TEST(s.watermarks.empty());  // input 1 has no watermark yet
  s.core->on_signal(1, signal_kind::watermark, 5);
  BOOST_TEST(s.watermarks == (std::vector<event_time>{5}));
  // an idle input no longer holds the watermark back
  s.core->on_signal(1, signal_kind::idle, 0);
  BOOST_TEST(s.watermarks == (std::vector<event_time>{5, 10}));
  BOOST_TEST(s.io.take() == (lines{"out 0: watermark 5", "out 0: watermark 10"}));
  // all inputs idle: the output is idle; one active again: active
  s.core->on_signal(0, signal_kind::idle, 0);
  BOOST_TEST(s.io.take() == (lines{"out 0: idle"}));
  s.core->on_signal(0, signal_kind::active, 0);
  s.core->on_signal(0, signal_kind::watermark, 12);
  BOOST_TEST(s.io.take() == (lines{"out 0: active", "out 0: watermark 12"}));
  // end of stream counts as the end of time, and both ends finish the stage
  s.core->on_signal(0, signal_kind::eos, end_of_time);
  BOOST_TEST(!s.core->finished());
  s.core->on_signal(1, signal_kind::eos, end_of_time);
  BOOST_TEST(s.core->finished());
  BOOST_TEST(s.watermarks.back() == end_of_time);
  BOOST_TEST(s.io.is_done);
}

BOOST_AUTO_TEST_CASE(end_of_stream_waits_for_blocked_outputs) {
  one_operator_stage s{1, 1, partitioning::forward, 1, 1};
  s.core->on_data(0, ints({1}));
  s.core->on_data(0, ints({2}));
  s.core->on_signal(0, signal_kind::eos, end_of_time);
  BOOST_TEST(s.io.take() == (lines{"out 0: [1]"}));
  BOOST_TEST(!s.core->finished());  // the end-of-stream waits behind the blocked batch
  BOOST_TEST(!s.io.is_done);
  s.core->on_credit(0, 1);
  BOOST_TEST(s.io.take() == (lines{"out 0: [2]", "out 0: watermark " + std::to_string(end_of_time),
                                   "out 0: eos"}));
  BOOST_TEST(s.io.is_done);
}

BOOST_AUTO_TEST_CASE(key_hash_scatters_by_the_high_bits_of_the_hash) {
  one_operator_stage s{1, 3, partitioning::key_hash, 100, 4};
  std::vector<int> xs;
  std::vector<std::uint64_t> hashes;
  std::vector<std::string> expected(3);
  for (int i = 0; i < 12; ++i) {
    auto h = (static_cast<std::uint64_t>(i * 7919) << 32) | 12345u;
    xs.push_back(i);
    hashes.push_back(h);
    auto& e = expected[(h >> 32) % 3];
    e += (e.empty() ? "" : " ") + std::to_string(i);
  }
  s.core->on_data(0, ints(xs, hashes));
  s.core->on_flush();
  BOOST_TEST(s.io.take() == (lines{"out 0: [" + expected[0] + "]", "out 1: [" + expected[1] + "]",
                                   "out 2: [" + expected[2] + "]"}));
}

BOOST_AUTO_TEST_CASE(a_barrier_parks_its_input_until_every_input_delivered_it) {
  one_operator_stage s{2, 1, partitioning::forward, 1, 8, true};
  s.core->on_data(0, ints({1}));
  s.core->on_signal(0, signal_kind::barrier, 7);
  s.core->on_data(0, ints({2}));  // behind the barrier: waits
  s.core->on_data(1, ints({10}));
  BOOST_TEST(s.io.take() == (lines{"out 0: [1]", "out 0: [10]"}));
  BOOST_TEST(s.io.checkpoints.empty());
  BOOST_TEST(s.core->queued_batches() == 1u);
  s.core->on_signal(1, signal_kind::barrier, 7);
  // the state holds exactly what came before the barrier on each input; the barrier goes out
  // before anything that followed it
  BOOST_REQUIRE(s.io.checkpoints.size() == 1u);
  BOOST_TEST(s.io.checkpoints[0].first == 7u);
  BOOST_TEST(s.io.take() == (lines{"out 0: barrier 7", "out 0: [2]"}));
  BOOST_TEST(s.total == 13);

  one_operator_stage restored{2, 1, partitioning::forward, 1, 8, true, 7, s.io.checkpoints[0].second};
  restored.core->restore();
  BOOST_TEST(restored.io.failure == "");
  BOOST_TEST(restored.total == 1 + 10);
}

// Asynchronous snapshots: the barrier goes out, and the stage goes on, before the state it
// captured at the barrier is written (here: only when the test runs the write, a slow writer).
BOOST_AUTO_TEST_CASE(the_barrier_goes_out_before_the_captured_state_is_written) {
  one_operator_stage s{1, 1, partitioning::forward, 8, 8, true};
  s.io.writes_elsewhere = true;
  s.core->on_data(0, ints({1, 2}));
  s.core->on_signal(0, signal_kind::barrier, 5);
  s.core->on_data(0, ints({10}));
  s.core->on_flush();
  BOOST_TEST(s.io.take() == (lines{"out 0: [1 2]", "out 0: barrier 5", "out 0: [10]"}));
  BOOST_TEST(s.total == 13);
  BOOST_TEST(s.io.checkpoints.empty());  // not written yet
  BOOST_REQUIRE(s.io.writes.size() == 1u);
  BOOST_TEST(s.io.writes[0].first == 5u);

  // the same as a stage that wrote its state at the barrier
  one_operator_stage at_once{1, 1, partitioning::forward, 8, 8, true};
  at_once.core->on_data(0, ints({1, 2}));
  at_once.core->on_signal(0, signal_kind::barrier, 5);
  BOOST_REQUIRE(at_once.io.checkpoints.size() == 1u);
  s.core->on_state_written(5, s.io.writes[0].second(), "");
  BOOST_REQUIRE(s.io.checkpoints.size() == 1u);
  BOOST_TEST(s.io.checkpoints[0].first == 5u);
  BOOST_TEST(s.io.checkpoints[0].second == at_once.io.checkpoints[0].second);
  BOOST_TEST(s.io.failure == "");
}

BOOST_AUTO_TEST_CASE(one_state_is_written_elsewhere_at_a_time_and_a_failed_write_fails_the_stage) {
  one_operator_stage s{1, 1, partitioning::forward, 8, 8, true};
  s.io.writes_elsewhere = true;
  s.core->on_signal(0, signal_kind::barrier, 5);
  // the next barrier comes while 5 is being written: 6 is written at once
  s.core->on_signal(0, signal_kind::barrier, 6);
  BOOST_REQUIRE(s.io.writes.size() == 1u);
  BOOST_REQUIRE(s.io.checkpoints.size() == 1u);
  BOOST_TEST(s.io.checkpoints[0].first == 6u);
  s.core->on_state_written(5, "", "operator 'pass' failed: no codec");
  BOOST_TEST(s.io.checkpoints.size() == 1u);
  BOOST_TEST(s.io.failure == "operator 'pass' failed: no codec");
}

BOOST_AUTO_TEST_CASE(an_ended_input_does_not_hold_a_barrier_back) {
  one_operator_stage s{2, 1, partitioning::forward, 1, 8, true};
  s.core->on_signal(0, signal_kind::barrier, 3);
  BOOST_TEST(s.io.checkpoints.empty());
  s.core->on_signal(1, signal_kind::eos, end_of_time);
  BOOST_REQUIRE(s.io.checkpoints.size() == 1u);
  BOOST_TEST(s.io.checkpoints[0].first == 3u);
}

BOOST_AUTO_TEST_CASE(a_restore_into_another_plan_fails_naming_what_changed) {
  one_operator_stage s{2, 1, partitioning::forward, 1, 8, true};
  s.core->on_signal(0, signal_kind::barrier, 4);
  s.core->on_signal(1, signal_kind::barrier, 4);
  BOOST_REQUIRE(s.io.checkpoints.size() == 1u);
  one_operator_stage other{1, 1, partitioning::forward, 1, 8, true, 4, s.io.checkpoints[0].second};
  other.core->restore();
  BOOST_TEST(other.io.failure.find("checkpoint 4") != std::string::npos, other.io.failure);
  BOOST_TEST(other.io.failure.find("2 inputs in the checkpoint, 1 in the plan") != std::string::npos,
             other.io.failure);
}

// A checkpoint taken after a stage ended hears from it that it had finished: checkpoints go on
// when part of a job ends before the rest (a short side input, say), and a restore from one ends
// the stage again without finishing its operators a second time.
BOOST_AUTO_TEST_CASE(a_stage_that_ended_answers_later_checkpoints_that_it_finished) {
  one_operator_stage s{1, 1, partitioning::forward, 1, 8};
  s.core->on_signal(0, signal_kind::eos, end_of_time);
  BOOST_TEST(s.io.take() == (lines{"out 0: watermark " + std::to_string(end_of_time), "out 0: eos"}));
  BOOST_TEST(s.io.is_done);
  s.core->on_checkpoint(4);
  s.core->on_checkpoint(4);  // once per checkpoint
  BOOST_REQUIRE(s.io.checkpoints.size() == 1u);
  BOOST_TEST(s.io.checkpoints[0].first == 4u);

  one_operator_stage restored{1, 1, partitioning::forward, 1, 8, false, 4, s.io.checkpoints[0].second};
  restored.core->restore();
  BOOST_TEST(restored.io.failure == "");
  // the end of its outputs again, but not the end-of-time watermark its operator sent when it
  // finished: that is in its receivers' part of the checkpoint
  BOOST_TEST(restored.io.take() == (lines{"out 0: eos"}));
  BOOST_TEST(restored.watermarks.empty());
  // its operator is told instead of restored (a synchronizer gate counts itself as done)
  BOOST_TEST(restored.restored_finished == std::vector<std::uint64_t>{4});
  BOOST_TEST(s.restored_finished.empty());
  BOOST_TEST(restored.io.is_done);
  restored.core->on_checkpoint(6);
  BOOST_REQUIRE(restored.io.checkpoints.size() == 1u);
  BOOST_TEST(restored.io.checkpoints[0].first == 6u);
  BOOST_TEST(restored.io.checkpoints[0].second == s.io.checkpoints[0].second);
}

BOOST_AUTO_TEST_CASE(a_stage_whose_inputs_end_before_the_barrier_answers_that_it_finished) {
  one_operator_stage s{2, 1, partitioning::forward, 1, 8, true};
  s.core->on_checkpoint(3);  // heard of; its barrier never comes: the inputs end first
  BOOST_TEST(s.io.checkpoints.empty());
  s.core->on_data(0, ints({1}));
  s.core->on_signal(0, signal_kind::eos, end_of_time);
  BOOST_TEST(s.io.checkpoints.empty());
  s.core->on_signal(1, signal_kind::eos, end_of_time);
  BOOST_REQUIRE(s.io.checkpoints.size() == 1u);
  BOOST_TEST(s.io.checkpoints[0].first == 3u);
  // the same as a stage that had ended when it heard of the checkpoint
  one_operator_stage ended{1, 1, partitioning::forward, 1, 8};
  ended.core->on_signal(0, signal_kind::eos, end_of_time);
  ended.core->on_checkpoint(3);
  BOOST_REQUIRE(ended.io.checkpoints.size() == 1u);
  BOOST_TEST(s.io.checkpoints[0].second == ended.io.checkpoints[0].second);
  // a stage whose barrier came takes its state as before
  one_operator_stage aligned{1, 1, partitioning::forward, 1, 8, true};
  aligned.core->on_checkpoint(3);
  aligned.core->on_signal(0, signal_kind::barrier, 3);
  BOOST_REQUIRE(aligned.io.checkpoints.size() == 1u);
  BOOST_TEST(aligned.io.checkpoints[0].second != ended.io.checkpoints[0].second);
  aligned.core->on_signal(0, signal_kind::eos, end_of_time);
  BOOST_TEST(aligned.io.checkpoints.size() == 1u);  // nothing more for checkpoint 3
}

// ---- unaligned checkpoints ----------------------------------------------------------------------

namespace {

/// A summing stage over ints with `inputs` input slots and one output, checkpointing unaligned:
/// every stream it touches has the int codec.
struct unaligned_stage {
  explicit unaligned_stage(std::uint32_t inputs, std::uint32_t credit, std::uint64_t restore_from = 0,
                           std::string state = {}, const batch_codec* codec = batch_codec_for<int>()) {
    producer.outputs[0] = {"main", codec, "int"};
    node.name = "sum";
    node.op = "summing";
    node.outputs[0] = {"main", codec, "int"};
    stage_config cfg;
    cfg.nodes = {&node};
    cfg.tree = {{0, 0, 0}};
    cfg.ops.push_back(std::make_unique<summing>(total));
    cfg.restore_checkpoint = restore_from;
    cfg.restore_state = std::move(state);
    cfg.input_ports.assign(inputs, 0);
    cfg.input_from.assign(inputs, &producer.outputs[0]);
    cfg.outputs = 1;
    cfg.edges = {output_edge{partitioning::forward, 0, 0, {0}}};
    cfg.opts.batch_size = 1;
    cfg.opts.credit = credit;
    cfg.opts.checkpoints.unaligned = true;
    core = std::make_unique<stage_core>(std::move(cfg), io);
  }

  logical_node producer;
  logical_node node;
  long total = 0;
  recording_io io;
  std::unique_ptr<stage_core> core;
};

/// Runs the pumps the stage asked for: with unaligned checkpoints it yields after each batch.
void settle(unaligned_stage& s) {
  for (int pumped = 0; pumped < s.io.pumps; ++pumped) s.core->on_pump();
}

}  // namespace

// Under backpressure the barrier does not wait for the queues: it goes out when it arrives, and
// what it overtook (the output waiting for credit, the inbox, what the other input sends before
// its barrier) is stored with the piece and handled first after a restore.
BOOST_AUTO_TEST_CASE(an_unaligned_barrier_overtakes_the_queues_which_the_piece_keeps) {
  unaligned_stage s{2, 1};
  s.core->on_data(0, ints({1}));  // goes out with the only credit
  s.core->on_data(0, ints({2}));  // waits on the output for credit
  s.core->on_data(0, ints({3}));  // waits in the inbox
  s.core->on_data(1, ints({10}));
  BOOST_TEST(s.io.take().empty());  // taken in, not worked on yet: the stage yields
  settle(s);
  BOOST_TEST(s.io.take() == (lines{"out 0: [1]"}));
  s.core->on_signal(0, signal_kind::barrier, 7);
  BOOST_TEST(s.io.take() == (lines{"out 0: barrier 7"}));  // ahead of [2]
  BOOST_TEST(s.io.checkpoints.empty());                    // input 1's barrier is still to come
  s.core->on_data(1, ints({20}));                          // before that barrier: in flight
  s.core->on_signal(1, signal_kind::barrier, 7);
  BOOST_REQUIRE(s.io.checkpoints.size() == 1u);
  BOOST_TEST(s.io.checkpoints[0].first == 7u);
  s.core->on_data(0, ints({100}));  // after the barrier: not in the piece
  s.core->on_credit(0, 100);
  settle(s);
  BOOST_TEST(s.io.take() == (lines{"out 0: [2]", "out 0: [3]", "out 0: [10]", "out 0: [20]", "out 0: [100]"}));
  BOOST_TEST(s.total == 136);

  // the restored stage sends and handles what was in flight, then what follows the barrier
  unaligned_stage r{2, 2, 7, s.io.checkpoints[0].second};  // credit 2: returned per batch
  r.core->restore();
  r.core->start();
  r.core->on_credit(0, 100);
  settle(r);
  BOOST_TEST(r.io.failure == "");
  BOOST_TEST(r.io.take() == (lines{"out 0: [2]", "out 0: [3]", "out 0: [10]", "out 0: [20]"}));
  BOOST_TEST(r.total == 1 + 2 + 3 + 10 + 20);
  BOOST_TEST(r.io.credits.empty());  // no sender gave credit for what the piece held
  r.core->on_data(0, ints({100}));
  settle(r);
  BOOST_TEST(r.io.credits == (std::vector<std::string>{"in 0: 1"}));
  BOOST_TEST(r.total == s.total);
}

// What waits in the mailbox reaches the inbox, where a barrier overtakes, while the inbox is
// being worked off: the stage yields after each batch and the pump goes on.
BOOST_AUTO_TEST_CASE(with_unaligned_checkpoints_a_stage_yields_after_each_batch) {
  unaligned_stage s{1, 1};
  s.core->on_data(0, ints({1}));
  s.core->on_data(0, ints({2}));  // blocks the output
  s.core->on_data(0, ints({3}));
  s.core->on_data(0, ints({4}));
  settle(s);
  s.core->on_credit(0, 100);  // takes [3], then yields
  BOOST_TEST(s.io.take() == (lines{"out 0: [1]", "out 0: [2]", "out 0: [3]"}));
  s.core->on_data(0, ints({5}));  // only taken in: the pump drains
  s.core->on_signal(0, signal_kind::barrier, 2);  // overtakes [4] and [5]
  BOOST_TEST(s.io.take() == (lines{"out 0: barrier 2"}));
  settle(s);
  BOOST_TEST(s.io.take() == (lines{"out 0: [4]", "out 0: [5]"}));
  BOOST_REQUIRE(s.io.checkpoints.size() == 1u);
  unaligned_stage r{1, 100, 2, s.io.checkpoints[0].second};
  r.core->restore();
  r.core->start();
  settle(r);
  BOOST_TEST(r.io.take() == (lines{"out 0: [4]", "out 0: [5]"}));
  BOOST_TEST(r.total == s.total);
}

BOOST_AUTO_TEST_CASE(an_unaligned_piece_keeps_signals_in_flight_and_an_ended_input_needs_no_barrier) {
  unaligned_stage s{2, 1};
  s.core->on_data(0, ints({1}));
  s.core->on_data(0, ints({2}));  // blocks the stage: what follows waits in the inbox
  settle(s);
  s.core->on_signal(1, signal_kind::watermark, 5);
  s.core->on_signal(0, signal_kind::barrier, 3);
  s.core->on_signal(1, signal_kind::eos, end_of_time);  // ends input 1 before its barrier
  BOOST_REQUIRE(s.io.checkpoints.size() == 1u);
  unaligned_stage r{2, 100, 3, s.io.checkpoints[0].second};
  r.core->restore();
  r.core->start();
  BOOST_TEST(r.io.failure == "");
  r.core->on_signal(0, signal_kind::watermark, 9);
  // input 1 brought watermark 5 and then ended, from the piece
  BOOST_TEST(r.io.take() == (lines{"out 0: [2]", "out 0: watermark 9"}));
}

BOOST_AUTO_TEST_CASE(unaligned_checkpoints_refuse_a_stream_without_codec) {
  BOOST_CHECK_EXCEPTION(unaligned_stage(1, 8, 0, {}, nullptr), job_error, [](const job_error& e) {
    return std::string{e.what()}.find("has no tidemark::codec") != std::string::npos;
  });
}

// ---- replica copies of one input ----------------------------------------------------------------

namespace {

/// Two input slots that are copies of one logical input; credit 2 returns credit per batch, and
/// the output never runs out of credit.
struct two_copies : one_operator_stage {
  two_copies() : one_operator_stage{2, 1, partitioning::forward, 1, 2, false, 0, {}, {0, 0}} {
    core->on_credit(0, 1u << 20);
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(copies_deliver_each_element_once_and_get_all_their_credit_back) {
  two_copies s;
  s.core->on_data(0, ints({1, 2, 3}));
  s.core->on_data(1, ints({1, 2}));     // all seen: dropped
  s.core->on_data(1, ints({3, 4, 5}));  // 3 seen: [4 5] is new
  s.core->on_data(0, ints({4}));        // seen
  s.core->on_data(0, ints({5, 6}));     // [6] is new
  BOOST_TEST(s.io.take() == (lines{"out 0: [1 2 3]", "out 0: [4 5]", "out 0: [6]"}));
  // a dropped copy never waits for the receiver: every batch of every slot got its credit back
  BOOST_TEST(s.io.credits == (lines{"in 0: 1", "in 1: 1", "in 1: 1", "in 0: 1", "in 0: 1"}));
  BOOST_TEST(s.core->queued_batches() == 0u);
}

BOOST_AUTO_TEST_CASE(copies_cut_into_different_batches_give_the_sequence_once) {
  // the reference: the sequence both copies carry; each copy cuts it at its own random places and
  // the two arrive in a random interleaving
  std::vector<int> sequence(300);
  for (int i = 0; i < 300; ++i) sequence[i] = i * 7 % 101;
  for (unsigned seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    std::vector<std::vector<std::vector<int>>> cuts(2);
    for (auto& copy : cuts)
      for (std::size_t at = 0; at < sequence.size();) {
        auto n = std::min<std::size_t>(sequence.size() - at, 1 + rng() % 17);
        copy.emplace_back(sequence.begin() + at, sequence.begin() + at + n);
        at += n;
      }
    two_copies s;
    std::vector<int> seen;
    std::size_t next[2] = {0, 0};
    while (next[0] < cuts[0].size() || next[1] < cuts[1].size()) {
      auto c = next[0] == cuts[0].size() ? 1 : next[1] == cuts[1].size() ? 0 : rng() % 2;
      s.core->on_data(c, ints(cuts[c][next[c]++]));
    }
    std::size_t credits[2] = {0, 0};
    for (auto& line : s.io.credits) ++credits[line[3] - '0'];
    for (auto& line : s.io.take()) {
      std::istringstream in(line.substr(line.find('[') + 1));
      int x;
      while (in >> x) seen.push_back(x);
    }
    BOOST_TEST(seen == sequence, "seed " << seed);
    BOOST_TEST(credits[0] == cuts[0].size(), "seed " << seed);
    BOOST_TEST(credits[1] == cuts[1].size(), "seed " << seed);
  }
}

BOOST_AUTO_TEST_CASE(copies_pass_each_signal_once) {
  two_copies s;
  s.core->on_data(0, ints({1, 2}));
  s.core->on_signal(0, signal_kind::watermark, 5);
  s.core->on_signal(0, signal_kind::idle, 0);
  s.core->on_signal(0, signal_kind::active, 0);
  s.core->on_data(0, ints({3}));
  BOOST_TEST(s.io.take() == (lines{"out 0: [1 2]", "out 0: watermark 5", "out 0: idle",
                                   "out 0: active", "out 0: [3]"}));
  // the lagging copy repeats all of it: nothing passes, not even its idle (the input is active)
  s.core->on_data(1, ints({1, 2}));
  s.core->on_signal(1, signal_kind::watermark, 5);
  s.core->on_signal(1, signal_kind::idle, 0);
  BOOST_TEST(s.io.take().empty());
  s.core->on_signal(1, signal_kind::active, 0);
  s.core->on_data(1, ints({3, 4}));
  // now copy 1 leads: its watermark passes, copy 0's repetition of it does not
  s.core->on_signal(1, signal_kind::watermark, 8);
  s.core->on_signal(0, signal_kind::watermark, 8);
  BOOST_TEST(s.io.take() == (lines{"out 0: [4]", "out 0: watermark 8"}));
  // the first end-of-stream ends the input; the stage reports done when the other copy ended
  s.core->on_signal(1, signal_kind::eos, end_of_time);
  BOOST_TEST(s.core->finished());
  BOOST_TEST(!s.io.is_done);
  s.core->on_data(0, ints({4}));
  s.core->on_signal(0, signal_kind::eos, end_of_time);
  BOOST_TEST(s.io.take() == (lines{"out 0: watermark " + std::to_string(end_of_time), "out 0: eos"}));
  BOOST_TEST(s.io.is_done);
  BOOST_TEST(s.io.credits.size() == 5u);  // every batch of both copies, the last one included
}

BOOST_AUTO_TEST_CASE(a_barrier_aligns_once_per_logical_input_not_per_copy) {
  // slots 0 and 1: copies of input 0; slot 2: input 1
  one_operator_stage s{3, 1, partitioning::forward, 1, 2, true, 0, {}, {0, 0, 1}};
  s.core->on_credit(0, 1u << 20);
  s.core->on_data(0, ints({1}));
  s.core->on_signal(0, signal_kind::barrier, 4);
  s.core->on_data(1, ints({1, 2}));  // [2] follows the barrier in input 0: it waits
  s.core->on_signal(1, signal_kind::barrier, 4);  // copy 1's barrier: already aligned on
  s.core->on_data(2, ints({10}));
  BOOST_TEST(s.io.take() == (lines{"out 0: [1]", "out 0: [10]"}));
  BOOST_TEST(s.io.checkpoints.empty());
  s.core->on_signal(2, signal_kind::barrier, 4);
  BOOST_REQUIRE(s.io.checkpoints.size() == 1u);
  BOOST_TEST(s.io.checkpoints[0].first == 4u);
  BOOST_TEST(s.io.take() == (lines{"out 0: barrier 4", "out 0: [2]"}));
  BOOST_TEST(s.total == 13);
  // the lagging copy's barrier never blocks: the next checkpoint aligns without it
  s.core->on_signal(0, signal_kind::barrier, 5);
  s.core->on_signal(2, signal_kind::barrier, 5);
  BOOST_TEST(s.io.checkpoints.size() == 2u);
  BOOST_TEST(s.io.checkpoints[1].first == 5u);
}

BOOST_AUTO_TEST_CASE(slots_of_one_logical_input_must_feed_one_operator_input) {
  logical_node node;
  node.name = "pass";
  std::vector<event_time> wms;
  stage_config cfg;
  cfg.nodes = {&node};
  cfg.tree = {{0, 0, 0}};
  cfg.ops.push_back(std::make_unique<pass_through>(wms));
  cfg.input_ports = {0, 1};
  cfg.logical_input = {0, 0};
  recording_io io;
  BOOST_CHECK_EXCEPTION(stage_core(std::move(cfg), io), job_error, [](const job_error& e) {
    return std::string(e.what()).find("logical input 0") != std::string::npos;
  });
}

// ---- the deterministic merge -------------------------------------------------------------------

namespace {

/// What one input carries, item by item: a batch, or a signal.
struct item {
  std::vector<int> values;  // a batch when not empty
  signal_kind kind = signal_kind::watermark;
  event_time wm = 0;
};
item data(std::vector<int> xs) { return {std::move(xs)}; }
item wm(event_time t) { return {{}, signal_kind::watermark, t}; }
item barrier(std::uint64_t id) { return {{}, signal_kind::barrier, static_cast<event_time>(id)}; }
item eos() { return {{}, signal_kind::eos, end_of_time}; }

struct merge_run {
  lines operator_input;  ///< what the stage passed on (batch_size 1: one line per batch it took)
  std::vector<std::pair<std::uint64_t, std::string>> checkpoints;
};

/// Feeds the per-input sequences into a fresh stage in a random interleaving (each input's order
/// kept), handing out credit as fast as it is asked for.
merge_run feed(const std::vector<std::vector<item>>& inputs, bool merge, unsigned seed) {
  one_operator_stage s{static_cast<std::uint32_t>(inputs.size()), 1, partitioning::forward, 1, 64,
                       true, 0, {}, {}, merge};
  s.core->on_credit(0, 1u << 20);
  std::mt19937 rng(seed);
  std::vector<std::size_t> next(inputs.size(), 0);
  for (;;) {
    std::vector<std::uint32_t> open;
    for (std::uint32_t i = 0; i < inputs.size(); ++i)
      if (next[i] < inputs[i].size()) open.push_back(i);
    if (open.empty()) break;
    auto in = open[rng() % open.size()];
    const auto& x = inputs[in][next[in]++];
    if (!x.values.empty())
      s.core->on_data(in, ints(x.values));
    else
      s.core->on_signal(in, x.kind, x.wm);
  }
  return {s.io.take(), s.io.checkpoints};
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_merge_takes_epochs_in_the_order_of_the_watermarks_that_opened_them) {
  const std::vector<std::vector<item>> inputs{
      {data({1}), wm(10), data({2}), wm(20), eos()},
      {data({101}), wm(5), data({102}), wm(30), data({103}), eos()},
  };
  // by the rule: both inputs start at the start of time (input 0 first); then input 1 (opened by
  // the start of time, below 10), input 1 again (5 < 10), input 0 (10 < 30), input 0 (20 < 30),
  // and once input 0 ended, input 1 alone
  const lines expected{"out 0: [1]",  "out 0: [101]",       "out 0: watermark 5",
                       "out 0: [102]", "out 0: watermark 10", "out 0: [2]",
                       "out 0: watermark 20", "out 0: watermark 30", "out 0: [103]",
                       "out 0: watermark " + std::to_string(end_of_time), "out 0: eos"};
  for (unsigned seed = 1; seed <= 30; ++seed)
    BOOST_TEST(feed(inputs, true, seed).operator_input == expected, "seed " << seed);
}

BOOST_AUTO_TEST_CASE(an_input_without_watermarks_holds_the_merge) {
  one_operator_stage s{2, 1, partitioning::forward, 1, 8, false, 0, {}, {}, true};
  s.core->on_data(1, ints({7}));
  s.core->on_signal(0, signal_kind::idle, 0);  // idle still holds it: when it resumes is timing
  BOOST_TEST(s.io.take() == (lines{}));
  BOOST_TEST(s.core->queued_batches() == 1u);
  s.core->on_signal(0, signal_kind::active, 0);
  s.core->on_signal(0, signal_kind::watermark, 3);  // input 0's first epoch ends
  BOOST_TEST(s.io.take() == (lines{"out 0: [7]"}));
}

BOOST_AUTO_TEST_CASE(the_merge_order_and_checkpoints_do_not_depend_on_arrival_order) {
  // three inputs with batches, watermarks, two checkpoints and ends at different places
  std::vector<std::vector<item>> inputs(3);
  std::mt19937 gen(42);
  for (int i = 0; i < 3; ++i) {
    auto& in = inputs[i];
    event_time t = 0;
    for (int k = 0; k < 60; ++k) {
      in.push_back(data({i * 1000 + k}));
      if (gen() % 3 == 0) in.push_back(wm(t += 1 + gen() % 20));
      if (k == 20 + 5 * i) in.push_back(barrier(1));
      if (k == 45 - 3 * i) in.push_back(barrier(2));
    }
    in.push_back(eos());
  }
  const auto first = feed(inputs, true, 1);
  BOOST_REQUIRE(first.checkpoints.size() == 2u);
  bool arrival_order_shows = false;  // the same interleavings without the merge differ
  for (unsigned seed = 2; seed <= 40; ++seed) {
    const auto run = feed(inputs, true, seed);
    BOOST_TEST(run.operator_input == first.operator_input, "seed " << seed);
    BOOST_TEST(run.checkpoints == first.checkpoints, "seed " << seed);
    arrival_order_shows |= feed(inputs, false, seed).operator_input != feed(inputs, false, 1).operator_input;
  }
  BOOST_TEST(arrival_order_shows);
  // every element passed exactly once
  BOOST_TEST(std::count_if(first.operator_input.begin(), first.operator_input.end(),
                           [](const std::string& l) { return l.find('[') != std::string::npos; }) == 180);
}

namespace {

/// One pass_through operator with one input and one receiver that has a replica: output slot 0
/// goes to the receiver's primary, slot 1 to its replica; credit 1 on each.
struct sending_to_a_replica {
  explicit sending_to_a_replica(std::uint32_t replica_lag = 256,
                                std::uint64_t replay_limit = 1000) {
    node.name = "pass";
    node.op = "pass_through";
    stage_config cfg;
    cfg.nodes = {&node};
    cfg.tree = {{0, 0, 0}};
    cfg.ops.push_back(std::make_unique<pass_through>(watermarks));
    cfg.input_ports = {0};
    cfg.outputs = 2;
    output_edge edge;
    edge.slots = {0};
    cfg.edges = {edge};
    cfg.output_copies = {{1}};
    cfg.opts.batch_size = 1;
    cfg.opts.credit = 1;
    cfg.opts.replica_lag = replica_lag;
    cfg.opts.replay_limit = replay_limit;
    core = std::make_unique<stage_core>(std::move(cfg), io);
  }

  logical_node node;
  std::vector<event_time> watermarks;
  recording_io io;
  std::unique_ptr<stage_core> core;
};

}  // namespace

BOOST_AUTO_TEST_CASE(a_receivers_replica_gets_every_batch_and_signal_with_its_own_credit) {
  sending_to_a_replica s;
  s.core->on_data(0, ints({1}));
  s.core->on_data(0, ints({2}));
  s.core->on_signal(0, signal_kind::watermark, 5);
  BOOST_TEST(s.io.take() == (lines{"out 1: [1]", "out 0: [1]"}));
  // [2] waits for credit on both slots, the watermark behind it in the inbox
  s.core->on_credit(1, 1);
  BOOST_TEST(s.io.take() == (lines{"out 1: [2]"}));
  s.core->on_credit(0, 1);
  BOOST_TEST(s.io.take() == (lines{"out 0: [2]", "out 1: watermark 5", "out 0: watermark 5"}));
  // barriers and the end go to each copy once
  s.core->on_signal(0, signal_kind::barrier, 3);
  s.core->on_signal(0, signal_kind::eos, end_of_time);
  const auto end = std::to_string(end_of_time);
  BOOST_TEST(s.io.take() == (lines{"out 1: barrier 3", "out 0: barrier 3", "out 1: watermark " + end,
                                   "out 0: watermark " + end, "out 1: eos", "out 0: eos"}));
  BOOST_TEST(s.io.checkpoints.size() == 1u);
  BOOST_TEST(s.io.is_done);
}

BOOST_AUTO_TEST_CASE(the_sender_never_waits_for_a_replica_and_drops_one_that_lags_too_far) {
  sending_to_a_replica s{2};
  s.core->on_credit(0, 100);
  for (int i = 1; i <= 3; ++i) s.core->on_data(0, ints({i}));
  // the replica has used its one credit: two items wait for it, the primary got everything
  BOOST_TEST(s.io.take() == (lines{"out 1: [1]", "out 0: [1]", "out 0: [2]", "out 0: [3]"}));
  BOOST_TEST(s.io.dropped.empty());
  s.core->on_data(0, ints({4}));  // a third item would wait: the replica is dropped
  BOOST_TEST(s.io.dropped == (std::vector<std::uint32_t>{1}));
  s.core->on_credit(1, 5);  // late credit of the dropped replica sends nothing
  s.core->on_signal(0, signal_kind::eos, end_of_time);
  BOOST_TEST(s.io.take() == (lines{"out 0: [4]", "out 0: watermark " + std::to_string(end_of_time),
                                   "out 0: eos"}));
  BOOST_TEST(s.io.is_done);
}

BOOST_AUTO_TEST_CASE(a_lost_replica_gets_nothing_more_and_holds_nothing_back) {
  sending_to_a_replica s;
  s.core->on_data(0, ints({1}));
  s.core->on_data(0, ints({2}));
  s.core->on_credit(0, 1);
  BOOST_TEST(s.io.take() == (lines{"out 1: [1]", "out 0: [1]", "out 0: [2]"}));
  // the replica's host died: [2], waiting for its credit, is dropped and the stage goes on
  s.core->on_copies_lost({1}, {});
  s.core->on_data(0, ints({3}));
  s.core->on_signal(0, signal_kind::eos, end_of_time);
  s.core->on_credit(0, 1);
  BOOST_TEST(s.io.take() == (lines{"out 0: [3]", "out 0: watermark " + std::to_string(end_of_time),
                                   "out 0: eos"}));
  BOOST_TEST(s.io.is_done);
}

// The takeover test once saw the replica that took over from a lost primary dropped for lagging
// (the sender ran ahead of it as of any replica), and only a checkpoint saved the job.
BOOST_AUTO_TEST_CASE(the_replica_that_took_over_paces_the_sender_and_is_never_dropped) {
  sending_to_a_replica s{2};
  s.core->on_copies_lost({0}, {});  // the primary's host died
  for (int i = 1; i <= 5; ++i) s.core->on_data(0, ints({i}));
  // one credit: [1] goes out, [2] waits for the replica, and the stage takes no more input
  BOOST_TEST(s.io.take() == (lines{"out 1: [1]"}));
  BOOST_TEST(s.core->waiting(1) == 1u);
  BOOST_TEST(s.io.dropped.empty());
  s.core->on_signal(0, signal_kind::eos, end_of_time);
  s.core->on_credit(1, 10);
  BOOST_TEST(s.io.take() ==
             (lines{"out 1: [2]", "out 1: [3]", "out 1: [4]", "out 1: [5]",
                    "out 1: watermark " + std::to_string(end_of_time), "out 1: eos"}));
  BOOST_TEST(s.io.dropped.empty());
  BOOST_TEST(s.io.is_done);
}

BOOST_AUTO_TEST_CASE(an_input_copy_whose_sender_is_lost_counts_as_ended) {
  two_copies s;
  s.core->on_data(0, ints({1, 2}));
  s.core->on_signal(0, signal_kind::eos, end_of_time);
  BOOST_TEST(!s.io.is_done);  // the other copy's sender still needs its credit
  s.core->on_copies_lost({}, {1});
  BOOST_TEST(s.io.is_done);
  // the primary's sender is lost after the replica's end-of-stream: nothing changes
  two_copies t;
  t.core->on_data(1, ints({1}));
  t.core->on_copies_lost({}, {0});
  t.core->on_data(1, ints({2}));
  t.core->on_signal(1, signal_kind::eos, end_of_time);
  BOOST_TEST(t.io.take() == (lines{"out 0: [1]", "out 0: [2]",
                                   "out 0: watermark " + std::to_string(end_of_time),
                                   "out 0: eos"}));
  BOOST_TEST(t.io.is_done);
}

// ---- restoring a copy mid-run (docs/replication.md, "Restoring the replication level") ---------

BOOST_AUTO_TEST_CASE(a_restored_copy_gets_what_was_sent_since_the_checkpoint_then_what_follows) {
  sending_to_a_replica s{2};
  s.core->on_credit(0, 100);
  s.core->on_credit(1, 100);
  s.core->on_data(0, ints({1}));
  s.core->on_signal(0, signal_kind::barrier, 1);
  s.core->on_data(0, ints({2}));
  s.core->on_signal(0, signal_kind::barrier, 2);
  s.core->on_data(0, ints({3}));
  s.core->on_checkpoint_complete(1);  // the log starts behind barrier 1
  s.core->on_copies_lost({1}, {});    // the replica's host died
  s.core->on_data(0, ints({4}));
  s.io.take();
  // restored from checkpoint 2: what followed barrier 2, with fresh credit (1), not counted as lag
  s.core->on_output_restored(1, 2);
  BOOST_TEST(s.io.take() == (lines{"out 1: [3]"}));
  // the primary's slot never waits for the restored copy
  s.core->on_data(0, ints({5}));
  s.core->on_data(0, ints({6}));
  BOOST_TEST(s.io.take() == (lines{"out 0: [5]", "out 0: [6]"}));
  BOOST_TEST(s.io.dropped.empty());
  s.core->on_credit(1, 10);
  BOOST_TEST(s.io.take() == (lines{"out 1: [4]", "out 1: [5]", "out 1: [6]"}));
  // restored again from checkpoint 1 (still in the log): from behind barrier 1
  s.core->on_output_restored(1, 1);
  s.core->on_credit(1, 10);
  BOOST_TEST(s.io.take() ==
             (lines{"out 1: [2]", "out 1: barrier 2", "out 1: [3]", "out 1: [4]", "out 1: [5]",
                    "out 1: [6]"}));
  // checkpoint 2 completed: checkpoint 1 is gone from the log, that restore is given up
  s.core->on_checkpoint_complete(2);
  s.core->on_output_restored(1, 1);
  BOOST_TEST(s.io.dropped == (std::vector<std::uint32_t>{1}));
  s.core->on_data(0, ints({7}));
  BOOST_TEST(s.io.take() == (lines{"out 0: [7]"}));
}

BOOST_AUTO_TEST_CASE(a_restored_copy_leads_once_it_is_the_only_one_left) {
  sending_to_a_replica s{2};
  s.core->on_credit(0, 100);
  s.core->on_signal(0, signal_kind::barrier, 1);
  s.core->on_checkpoint_complete(1);
  s.core->on_copies_lost({1}, {});
  s.core->on_output_restored(1, 1);  // the replica runs again, with credit 1
  s.core->on_copies_lost({0}, {});   // and the primary's host dies
  s.io.take();
  for (int i = 1; i <= 5; ++i) s.core->on_data(0, ints({i}));
  BOOST_TEST(s.io.take() == (lines{"out 1: [1]"}));
  BOOST_TEST(s.io.dropped.empty());  // a trailing copy would be, past replica_lag 2
  s.core->on_credit(1, 10);
  BOOST_TEST(s.io.take() == (lines{"out 1: [2]", "out 1: [3]", "out 1: [4]", "out 1: [5]"}));
}

BOOST_AUTO_TEST_CASE(a_copy_restored_before_its_barrier_passed_here_starts_behind_it) {
  sending_to_a_replica s;
  s.core->on_credit(0, 100);
  s.core->on_credit(1, 100);
  s.core->on_data(0, ints({1}));
  s.core->on_copies_lost({1}, {});
  // checkpoint 1 completed from another copy of this stage; this one has not sent its barrier yet
  s.core->on_output_restored(1, 1);
  s.core->on_data(0, ints({2}));
  s.core->on_signal(0, signal_kind::barrier, 1);
  s.core->on_data(0, ints({3}));
  BOOST_TEST(s.io.take() ==
             (lines{"out 1: [1]", "out 0: [1]", "out 0: [2]", "out 0: barrier 1", "out 1: [3]",
                    "out 0: [3]"}));
  BOOST_TEST(s.io.dropped.empty());
}

BOOST_AUTO_TEST_CASE(a_replay_log_past_its_bound_is_dropped_until_the_next_barrier) {
  sending_to_a_replica s{256, 2};  // two elements
  s.core->on_credit(0, 100);
  s.core->on_credit(1, 100);
  for (int i = 1; i <= 3; ++i) s.core->on_data(0, ints({i}));
  s.core->on_copies_lost({1}, {});
  s.core->on_output_restored(1, 0);  // the log since the start is gone
  BOOST_TEST(s.io.dropped == (std::vector<std::uint32_t>{1}));
  s.core->on_signal(0, signal_kind::barrier, 1);
  s.core->on_data(0, ints({4}));
  s.io.take();
  s.core->on_output_restored(1, 1);  // complete again from barrier 1
  BOOST_TEST(s.io.take() == (lines{"out 1: [4]"}));
}

BOOST_AUTO_TEST_CASE(a_restored_input_copy_counts_from_the_checkpoints_barrier_and_catches_up) {
  two_copies s;
  s.core->on_data(0, ints({1, 2, 3}));
  s.core->on_data(1, ints({1, 2}));
  s.core->on_signal(0, signal_kind::barrier, 1);  // after 3 elements
  s.core->on_data(0, ints({4, 5}));
  s.core->on_copies_lost({}, {1});
  s.io.take();
  // the copy behind slot 1 is restored from checkpoint 1: its first element is element 4
  s.core->on_input_restored(1, 1);
  s.core->on_data(1, ints({4}));
  BOOST_TEST(s.io.take().empty());
  BOOST_TEST(s.io.caught_up.empty());
  s.core->on_data(1, ints({5, 6}));  // caught up with the 5 the input had, and [6] is new
  BOOST_TEST(s.io.take() == (lines{"out 0: [6]"}));
  BOOST_TEST(s.io.caught_up == (std::vector<std::uint32_t>{1}));
  // the stage waits for the restored copy's end-of-stream again
  s.core->on_signal(0, signal_kind::eos, end_of_time);
  BOOST_TEST(!s.io.is_done);
  s.core->on_signal(1, signal_kind::eos, end_of_time);
  BOOST_TEST(s.io.is_done);
  // a checkpoint the receiver no longer knows: the slot stays closed, everything on it dropped
  two_copies t;
  t.core->on_data(0, ints({1}));
  t.core->on_copies_lost({}, {1});
  t.core->on_input_restored(1, 7);
  t.core->on_data(1, ints({1, 2}));
  t.core->on_signal(0, signal_kind::eos, end_of_time);
  BOOST_TEST(t.io.take() == (lines{"out 0: [1]", "out 0: watermark " + std::to_string(end_of_time),
                                   "out 0: eos"}));
  BOOST_TEST(t.io.is_done);
}

// ---- batch_bound: the batch size adaptive batching allows under load ---------------------------

namespace {
using std::chrono::microseconds;
const batch_bound::clock::time_point t0{};
}  // namespace

BOOST_AUTO_TEST_CASE(a_batch_bound_starts_small_and_never_exceeds_the_batch_size) {
  BOOST_TEST(batch_bound(4096, 64, microseconds{1000}).limit() == 64u);
  BOOST_TEST(batch_bound(32, 64, microseconds{1000}).limit() == 32u);
}

BOOST_AUTO_TEST_CASE(a_batch_bound_holds_what_the_receiver_works_through_in_the_budget) {
  // 4 batches of 100 sent at once, acknowledged 400 µs later: 1 µs per element, 1000 in 1 ms
  batch_bound b{4096, 64, microseconds{1000}};
  for (int i = 0; i < 4; ++i) b.sent(100, t0);
  b.credited(4, t0 + microseconds{400});
  BOOST_TEST(b.limit() == 1000u);
  // the next two were sent before that return: their time counts from it, 2 µs per element;
  // the pace is averaged with the last one, 1.5 µs: 666 elements in 1 ms
  b.sent(100, t0 + microseconds{100});
  b.sent(100, t0 + microseconds{100});
  b.credited(2, t0 + microseconds{800});
  BOOST_TEST(b.limit() == 666u);
}

BOOST_AUTO_TEST_CASE(a_batch_bound_counts_from_the_send_when_the_receiver_was_waiting) {
  // a slow sender: batches 1 ms apart, acknowledged together 10 µs after the second; the receiver
  // waited for them, the pace is the sender's: 200 elements in 1010 µs, 198 in 1 ms
  batch_bound b{4096, 64, microseconds{1000}};
  b.credited(1, t0);  // nothing in flight: nothing learnt
  BOOST_TEST(b.limit() == 64u);
  b.sent(100, t0 + microseconds{5000});
  b.sent(100, t0 + microseconds{6000});
  b.credited(2, t0 + microseconds{6010});
  BOOST_TEST(b.limit() == 198u);
}

BOOST_AUTO_TEST_CASE(a_batch_bound_stays_between_one_element_and_the_batch_size) {
  batch_bound fast{4096, 64, microseconds{1000}};
  fast.sent(4096, t0);
  fast.credited(1, t0 + microseconds{10});
  BOOST_TEST(fast.limit() == 4096u);
  batch_bound slow{4096, 64, microseconds{1000}};
  slow.sent(1, t0);
  slow.credited(1, t0 + microseconds{10'000});
  BOOST_TEST(slow.limit() == 1u);
}

BOOST_AUTO_TEST_CASE(a_fixed_batch_bound_learns_nothing) {
  // fixed batching, or a receiver in another process: the batch size whatever the credit shows
  batch_bound b{4096};
  BOOST_TEST(!b.learns());
  b.sent(100, t0);
  b.credited(1, t0 + microseconds{100'000});
  BOOST_TEST(b.limit() == 4096u);
}
