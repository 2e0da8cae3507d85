// Checkpoints of window operators: a scripted stream (out-of-order and late events, watermarks,
// processing-time ticks) runs through one uninterrupted instance, the reference; the same script
// then runs through instances that are snapshotted and replaced by fresh instances restored from
// the bytes, and everything emitted (results with window, key, revision, final flag, timing and
// value; late-port events; watermarks) must equal the reference, in order. Every window kind, over
// aggregates and process functions, with the memory store and the tiered store on disk.
#define BOOST_TEST_MODULE window_checkpoint
#include <boost/test/unit_test.hpp>

#include <functional>
#include <iomanip>
#include <random>
#include <sstream>

#include "../../support/shared_storage.hpp"
#include "../../support/wait_until.hpp"
#include "harness.hpp"
#include "tidemark/core/state.hpp"
#include "tidemark/core/tiered_window_store.hpp"
#include "tidemark/core/window_operators.hpp"
#include "tidemark/persistence/storage_service.hpp"

using namespace tidemark;
using tidemark::test::key_of;
using tidemark::test::make_batch;
using tidemark::test::recording_emitter;
using tidemark::test::wait_until;

namespace {

struct ev {
  int key = 0;
  event_time t = 0;
  std::int64_t v = 0;
  int id = 0;
  TIDEMARK_FIELDS(key, t, v, id)
};

struct value_of {
  std::int64_t operator()(const ev& e) const { return e.v; }
};

/// A full-window function: the ids of the window's events in the order the store hands them out.
struct ids_of {
  std::vector<int> operator()(const int&, const window_id&, window_events<ev>& events) const {
    std::vector<int> ids;
    for (const auto& e : events) ids.push_back(e.id);
    return ids;
  }
};

// ---- the script ------------------------------------------------------------------------------

struct step {
  enum class kind { events, watermark, timer } k = kind::events;
  std::vector<ev> events;
  event_time wm = 0;
  std::int64_t now_ms = 0;
};

/// `batches` batches of 1..8 events of `keys` keys, most within `disorder` of the newest time, one in
/// 16 up to 6 × `disorder` late; a watermark (newest − disorder / 2) after about a third of them
/// and a processing-time tick after about half.
std::vector<step> script(std::uint64_t seed, int batches, event_time disorder, int keys = 6) {
  std::mt19937_64 rng{seed};
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  std::vector<step> steps;
  event_time base = 1000;
  event_time newest = start_of_time;
  event_time wm = start_of_time;
  std::int64_t now = 0;
  int id = 0;
  for (int b = 0; b < batches; ++b) {
    step s;
    for (auto n = pick(1, 8); n > 0; --n) {
      base += pick(0, 6);
      const auto delay = pick(0, 15) == 0 ? pick(disorder, 6 * disorder) : pick(0, disorder);
      s.events.push_back(ev{static_cast<int>(pick(0, keys - 1)), base - delay, pick(1, 100), id++});
      newest = std::max(newest, base - delay);
    }
    steps.push_back(std::move(s));
    if (pick(0, 2) == 0 && newest - disorder / 2 > wm) {
      wm = newest - disorder / 2;
      steps.push_back(step{step::kind::watermark, {}, wm, 0});
    }
    if (pick(0, 1) == 0) {
      now += pick(1, 15);
      steps.push_back(step{step::kind::timer, {}, 0, now});
    }
  }
  return steps;
}

batch_ptr keyed(const std::vector<ev>& es) {
  std::vector<event_time> ts;
  std::vector<std::uint64_t> hs;
  for (const auto& e : es) {
    ts.push_back(e.t);
    hs.push_back(detail::mix_hash(std::hash<int>{}(e.key)));
  }
  return make_batch(es, std::move(ts), std::move(hs));
}

void apply(operator_logic& op, const step& s, emitter& out) {
  switch (s.k) {
    case step::kind::events: op.process(0, keyed(s.events), out); break;
    case step::kind::watermark: op.on_watermark(s.wm, out); break;
    case step::kind::timer: op.on_timer(s.now_ms, out); break;
  }
}

// ---- what an instance emitted, as comparable lines ---------------------------------------------

std::string text(std::int64_t x) { return std::to_string(x); }
std::string text(std::uint64_t x) { return std::to_string(x); }
std::string text(double x) {
  std::ostringstream s;
  s << std::setprecision(17) << x;
  return s.str();
}
std::string text(const std::vector<int>& ids) {
  std::string s;
  for (auto id : ids) s += std::to_string(id) + ",";
  return s;
}

/// Every result, late-port event and watermark `out` recorded, in emission order.
template <class R>
std::vector<std::string> lines(const recording_emitter& out) {
  std::vector<std::string> xs;
  for (const auto& e : out.log) {
    if (e.k == test::emitted::kind::watermark) {
      xs.push_back("watermark " + std::to_string(e.wm));
    } else if (e.k == test::emitted::kind::batch && e.port == late_port) {
      for (const auto& x : static_cast<const batch<ev>&>(*e.b).values)
        xs.push_back("late event " + std::to_string(x.id));
    } else if (e.k == test::emitted::kind::batch) {
      for (const auto& r : static_cast<const batch<window_result<int, R>>&>(*e.b).values)
        xs.push_back("[" + std::to_string(r.window.start) + "," + std::to_string(r.window.end) +
                     ") key " + std::to_string(r.key) + " rev " + std::to_string(r.revision) +
                     (r.final ? " final " : " ") + to_string(r.timing) + " = " + text(r.value) +
                     (r.incomplete ? " incomplete" : ""));
    }
  }
  return xs;
}

/// Runs steps [from, to) of `steps` (and finish() when `to` is the end) on `op`.
template <class R>
std::vector<std::string> run(operator_logic& op, const std::vector<step>& steps, std::size_t from,
                             std::size_t to) {
  recording_emitter out;
  for (auto i = from; i < to; ++i) apply(op, steps[i], out);
  if (to == steps.size()) op.finish(out);
  return lines<R>(out);
}

std::vector<std::uint8_t> snapshot(operator_logic& op, std::uint64_t checkpoint) {
  std::vector<std::uint8_t> bytes;
  state_writer w{checkpoint, bytes};
  op.snapshot(w);
  return bytes;
}

void restore(operator_logic& op, const std::vector<std::uint8_t>& bytes, std::uint64_t checkpoint) {
  state_reader r{checkpoint, bytes.data(), bytes.size()};
  op.restore(r);
  BOOST_REQUIRE_MESSAGE(r.remaining() == 0, "restore left " << r.remaining() << " bytes unread");
}

/// The operator's counters that are independent of where state lives.
std::map<std::string, double> counters(const operator_logic& op) {
  std::map<std::string, double> all;
  op.add_metrics(all);
  std::map<std::string, double> out;
  for (const char* name :
       {"watermark", "watermark_lag", "late_events_accepted", "late_events_dropped",
        "gap_events_dropped", "window_results", "window_panes", "allowed_lateness",
        "late_events_observed", "lateness_after_end_p99", "lateness_behind_watermark_p99"})
    out[name] = all.at(name);
  return out;
}

void require_same(const std::vector<std::string>& got, const std::vector<std::string>& want,
                  const std::string& what) {
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i)
    BOOST_REQUIRE_MESSAGE(got[i] == want[i], what << ": line " << i << " is '" << got[i]
                                                  << "', uninterrupted run has '" << want[i] << "'");
  BOOST_REQUIRE_MESSAGE(got.size() == want.size(), what << ": " << got.size() << " lines, "
                                                        << "uninterrupted run has " << want.size());
}

/// How often the reference hit each case, so that a test cannot pass without exercising it.
struct coverage {
  std::size_t early = 0, on_time = 0, late = 0, retracted = 0, finals = 0, late_events = 0;
  explicit coverage(const std::vector<std::string>& ls) {
    for (const auto& l : ls) {
      early += l.find(" early ") != std::string::npos;
      on_time += l.find(" on_time ") != std::string::npos;
      late += l.find(" late = ") != std::string::npos;
      retracted += l.find(" retracted ") != std::string::npos;
      finals += l.find(" final ") != std::string::npos;
      late_events += l.rfind("late event", 0) == 0;
    }
  }
};

using maker = std::function<std::unique_ptr<operator_logic>()>;

/// Called around the snapshots of single cuts (the tiered store's test waits for its writes).
struct snapshot_hooks {
  std::function<void(operator_logic&)> before;
  std::function<void(operator_logic&)> after;
};

/// Runs `steps` through `make()` uninterrupted (the reference) and checks, against it:
/// - a chain of instances, each restored from the snapshot of the previous one, one per step;
/// - at a few cuts, the snapshotted instance going on (a snapshot changes nothing) and a second
///   instance restored from the same bytes continuing from there.
template <class R>
coverage check_restores(const maker& make, const std::vector<step>& steps,
                        const snapshot_hooks& hooks = {}) {
  auto reference_op = make();
  const auto reference = run<R>(*reference_op, steps, 0, steps.size());
  const auto reference_counters = counters(*reference_op);

  // A checkpoint after every step but the last, each restored into a fresh instance.
  {
    auto op = make();
    std::vector<std::string> got;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      auto part = run<R>(*op, steps, i, i + 1);
      got.insert(got.end(), part.begin(), part.end());
      if (i + 1 == steps.size()) break;
      const auto bytes = snapshot(*op, i + 1);
      op = make();
      restore(*op, bytes, i + 1);
    }
    require_same(got, reference, "restored after every step");
    BOOST_TEST(counters(*op) == reference_counters);
  }

  for (std::size_t cut = steps.size() / 7; cut < steps.size(); cut += steps.size() / 4) {
    BOOST_TEST_CONTEXT("cut after step " << cut) {
      auto a = make();
      auto before = run<R>(*a, steps, 0, cut);
      if (hooks.before) hooks.before(*a);
      const auto bytes = snapshot(*a, 1);
      if (hooks.after) hooks.after(*a);
      auto a_after = run<R>(*a, steps, cut, steps.size());
      auto b = make();
      restore(*b, bytes, 1);
      auto b_after = run<R>(*b, steps, cut, steps.size());
      BOOST_TEST(!b_after.empty());
      auto a_all = before;
      a_all.insert(a_all.end(), a_after.begin(), a_after.end());
      require_same(a_all, reference, "the snapshotted instance");
      before.insert(before.end(), b_after.begin(), b_after.end());
      require_same(before, reference, "the restored instance");
      BOOST_TEST(counters(*b) == reference_counters);
    }
  }
  return coverage{reference};
}

// ---- the instances under test --------------------------------------------------------------------

using ids_fn = ops::process_function<ev, int, ids_of>;

template <class Assigner, class Agg>
maker aggregate_maker(Assigner a, Agg g, window_config cfg) {
  return [=] {
    return ops::make_window_logic<ev, int>(a, key_of{}, ops::aggregate_function<ev, int, Agg>{g}, cfg,
                                           "w");
  };
}

template <class Assigner>
maker memory_ids_maker(Assigner a, window_config cfg) {
  return [=] {
    return ops::make_window_logic<ev, int>(
        a, key_of{}, ids_fn{ids_of{}, std::make_unique<memory_window_store<int, ev>>()}, cfg, "w");
  };
}

/// A storage service under a 4 KB budget (always under pressure), shared like a node's.
std::shared_ptr<persistence::storage_service> storage() {
  static const std::weak_ptr<persistence::storage_service> s =
      test::shared_service(persistence::storage_config{"", 2, 1, 4096});
  return s.lock();
}

/// m-buckets of 2 events and blocks of 3: nearly every event goes through disk.
template <class Assigner>
maker tiered_ids_maker(Assigner a, window_config cfg) {
  return [=] {
    tiered t;
    t.memory_events = 2;
    t.block_events = 3;
    return ops::make_window_logic<ev, int>(
        a, key_of{},
        ids_fn{ids_of{}, std::make_unique<tiered_window_store<int, ev>>(t, storage(), cfg.allowed_lateness)},
        cfg, "w");
  };
}

double metric(const operator_logic& op, const char* name) {
  std::map<std::string, double> m;
  op.add_metrics(m);
  return m.at(name);
}

/// Checks the process form on the tiered store; before the single-cut snapshots, waits until the
/// blocks written so far are on disk, and requires that those snapshots read blocks back.
template <class Assigner>
coverage check_tiered(Assigner a, window_config cfg, const std::vector<step>& steps) {
  double reads_by_snapshots = 0;
  snapshot_hooks hooks;
  hooks.before = [&](operator_logic& op) {
    auto s = storage();
    wait_until([&] {
      return s->queued(io_class::write) == 0 && s->queued(io_class::destage) == 0 &&
             s->serializing() == 0;
    });
    reads_by_snapshots -= metric(op, "state_snapshot_block_reads");
  };
  hooks.after = [&](operator_logic& op) {
    reads_by_snapshots += metric(op, "state_snapshot_block_reads");
  };
  auto cov = check_restores<std::vector<int>>(tiered_ids_maker(a, cfg), steps, hooks);
  BOOST_TEST(reads_by_snapshots > 0, "no snapshot read a block back from disk");
  return cov;
}

window_config with(event_time lateness, late_trigger late, trigger early = trigger::on_watermark()) {
  window_config cfg;
  cfg.allowed_lateness = lateness;
  cfg.late = std::move(late);
  cfg.early = early;
  return cfg;
}

}  // namespace

BOOST_AUTO_TEST_CASE(tumbling_windows_with_late_refires_continue_exactly_after_a_restore) {
  const auto steps = script(11, 220, 60);
  // Planned re-fires at offsets after expiry (fire_state.plan) and early results by count.
  const auto cfg = with(150, late_trigger::at_offsets({3, 20}), trigger::on_count(3));
  const tumbling a{50};
  auto cov = check_restores<std::int64_t>(aggregate_maker(a, agg::sum(value_of{}), cfg), steps);
  BOOST_TEST(cov.early > 0u);
  BOOST_TEST(cov.late > 0u);
  BOOST_TEST(cov.late_events > 0u);
  check_restores<std::vector<int>>(memory_ids_maker(a, cfg), steps);
  cov = check_tiered(a, cfg, steps);
  BOOST_TEST(cov.late > 0u);
}

BOOST_AUTO_TEST_CASE(results_leave_in_the_same_order_when_window_tables_grow) {
  // Enough keys that pane tables grow and reuse the slots of purged windows: the order in which
  // a watermark fires the panes of a window depends on the tables' layout.
  const auto steps = script(18, 300, 40, 50);
  const auto cfg = with(60, late_trigger::every_event());
  check_restores<std::int64_t>(aggregate_maker(tumbling{30}, agg::sum(value_of{}), cfg), steps);
  check_restores<std::int64_t>(aggregate_maker(session{8}, agg::sum(value_of{}), cfg), steps);
}

BOOST_AUTO_TEST_CASE(predictive_lateness_and_the_staleness_trigger_continue_exactly) {
  // The estimator, the predictive bound and the cached staleness schedules all decide results.
  const auto steps = script(12, 400, 80);
  auto cfg = with(0, late_trigger::staleness(0.3, 5));
  cfg.predictive_lateness = lateness::predictive{0.9, 0.9, 200, 20, 1000};
  const tumbling a{40};
  auto make = aggregate_maker(a, agg::mean(value_of{}), cfg);
  auto cov = check_restores<double>(make, steps);
  BOOST_TEST(cov.late > 0u);
  BOOST_TEST(cov.late_events > 0u);
  auto op = make();
  run<double>(*op, steps, 0, steps.size());
  BOOST_TEST(metric(*op, "allowed_lateness") != 200.0, "the predictive bound never moved");
  check_tiered(a, cfg, steps);
}

BOOST_AUTO_TEST_CASE(sliding_windows_continue_exactly_after_a_restore) {
  const auto steps = script(13, 200, 50);
  const auto cfg = with(80, late_trigger::every_events(2), trigger::on_processing_time(10));
  const sliding a{60, 25};
  auto cov = check_restores<std::uint64_t>(aggregate_maker(a, agg::count(), cfg), steps);
  BOOST_TEST(cov.early > 0u);
  BOOST_TEST(cov.late > 0u);
  BOOST_TEST(cov.late_events > 0u);
  check_restores<std::vector<int>>(memory_ids_maker(a, cfg), steps);
  check_tiered(a, cfg, steps);
}

BOOST_AUTO_TEST_CASE(session_windows_with_merges_continue_exactly_after_a_restore) {
  const auto steps = script(14, 200, 40);
  // Lateness long enough for late events to bridge sessions that already fired.
  const auto cfg = with(300, late_trigger::every_ms(7));
  const session a{12};
  auto cov = check_restores<std::int64_t>(aggregate_maker(a, agg::max(value_of{}), cfg), steps);
  BOOST_TEST(cov.retracted > 0u);
  BOOST_TEST(cov.late > 0u);
  check_restores<std::vector<int>>(memory_ids_maker(a, cfg), steps);
  cov = check_tiered(a, cfg, steps);
  BOOST_TEST(cov.retracted > 0u);
}

BOOST_AUTO_TEST_CASE(count_windows_continue_exactly_after_a_restore) {
  // 30 keys: count windows fire every few events, so with fewer keys so little state stays open
  // that a snapshot sometimes found every block in memory (check_tiered requires one on disk)
  const auto steps = script(15, 150, 30, 30);
  const count_window a{5, 3};
  auto cov = check_restores<std::int64_t>(aggregate_maker(a, agg::sum(value_of{}), window_config{}), steps);
  BOOST_TEST(cov.finals > 0u);
  check_restores<std::vector<int>>(memory_ids_maker(a, window_config{}), steps);
  check_tiered(a, window_config{}, steps);
}

namespace {

/// A key without a codec: such a job runs, but cannot be checkpointed.
struct opaque_key {
  int id = 0;
  bool operator==(const opaque_key& o) const { return id == o.id; }
};

struct opaque_key_of {
  opaque_key operator()(const ev& e) const { return {e.key}; }
};

bool names(const job_error& e, const char* type) {
  BOOST_TEST_MESSAGE(e.what());
  return std::string{e.what()}.find(type) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_snapshot_of_state_without_a_codec_names_the_type) {
  const auto steps = script(16, 10, 20);
  auto op = ops::make_window_logic<ev, opaque_key>(
      tumbling{1000}, opaque_key_of{},
      ops::aggregate_function<ev, opaque_key, agg::count_of>{agg::count()}, window_config{}, "w");
  run<std::uint64_t>(*op, steps, 0, 1);  // events, no watermark yet: open panes
  BOOST_CHECK_EXCEPTION(snapshot(*op, 1), job_error, [](const job_error& e) { return names(e, "opaque_key"); });

  // The events a process function keeps need a codec too.
  using bare_fn = ops::process_function<test::reading, int, std::function<int(
      const int&, const window_id&, window_events<test::reading>&)>>;
  auto bare = ops::make_window_logic<test::reading, int>(
      tumbling{1000}, key_of{},
      bare_fn{[](const int&, const window_id&, window_events<test::reading>&) { return 0; },
              std::make_unique<memory_window_store<int, test::reading>>()},
      window_config{}, "w");
  recording_emitter out;
  bare->process(0, test::readings({{1, 10, 5}, {2, 20, 6}}), out);
  BOOST_CHECK_EXCEPTION(snapshot(*bare, 1), job_error, [](const job_error& e) { return names(e, "reading"); });
}

BOOST_AUTO_TEST_CASE(truncated_or_mismatched_window_state_is_refused) {
  const auto steps = script(17, 40, 30);
  const auto cfg = with(100, late_trigger::every_event());
  auto make = aggregate_maker(tumbling{50}, agg::sum(value_of{}), cfg);
  auto op = make();
  run<std::int64_t>(*op, steps, 0, steps.size() / 2);
  const auto bytes = snapshot(*op, 1);
  BOOST_REQUIRE_GT(bytes.size(), 100u);
  const std::vector<std::uint8_t> half(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(bytes.size() / 2));
  BOOST_CHECK_THROW(restore(*make(), half, 1), wire_error);
  // State of a tumbling window does not restore into a session window.
  auto sessions = aggregate_maker(session{10}, agg::sum(value_of{}), cfg)();
  BOOST_CHECK_EXCEPTION(restore(*sessions, bytes, 1), job_error,
                        [](const job_error& e) { return names(e, "another kind of window"); });
}

// ---- asynchronous snapshots: capture at the barrier, written later ------------------------------

namespace {

/// An event whose encodings are counted: capturing the memory store must not encode (or copy) a
/// single event; writing the capture later does.
struct counted_ev : ev {};
std::size_t encoded_events = 0;

}  // namespace

template <>
struct tidemark::codec<counted_ev> {
  static void encode(byte_writer& w, const counted_ev& x) {
    ++encoded_events;
    codec<ev>::encode(w, x);
  }
  static void decode(byte_reader& r, counted_ev& x) { codec<ev>::decode(r, x); }
};

namespace {

struct counted_ids_of {
  std::vector<int> operator()(const int&, const window_id&, window_events<counted_ev>& events) const {
    std::vector<int> ids;
    for (const auto& e : events) ids.push_back(e.id);
    return ids;
  }
};

/// Runs steps [from, to) of `steps` (and finish() when `to` is the end) on `op`, with counted events.
void run_counted(operator_logic& op, const std::vector<step>& steps, std::size_t from, std::size_t to) {
  recording_emitter out;
  for (auto i = from; i < to; ++i) {
    const auto& s = steps[i];
    if (s.k != step::kind::events) {
      apply(op, s, out);
      continue;
    }
    std::vector<counted_ev> es;
    std::vector<event_time> ts;
    std::vector<std::uint64_t> hs;
    for (const auto& e : s.events) {
      es.push_back(counted_ev{e});
      ts.push_back(e.t);
      hs.push_back(detail::mix_hash(std::hash<int>{}(e.key)));
    }
    op.process(0, make_batch(std::move(es), std::move(ts), std::move(hs)), out);
  }
  if (to == steps.size()) op.finish(out);
}

/// Captures the state at two cuts and writes both captures only after the operator ran to the end
/// of the script (appending to, firing, merging and purging the captured windows): each must
/// write exactly what a snapshot wrote at its cut. No event is encoded at a capture.
template <class Assigner>
void check_captures(Assigner a, window_config cfg, const std::vector<step>& steps) {
  auto op = ops::make_window_logic<counted_ev, int>(
      a, key_of{},
      ops::process_function<counted_ev, int, counted_ids_of>{
          counted_ids_of{}, std::make_unique<memory_window_store<int, counted_ev>>()},
      cfg, "w");
  std::vector<std::vector<std::uint8_t>> at_cut;
  std::vector<state_capture> captured;
  std::size_t from = 0;
  for (auto cut : {steps.size() / 3, 2 * steps.size() / 3}) {
    run_counted(*op, steps, from, cut);
    from = cut;
    at_cut.push_back(snapshot(*op, cut));
    encoded_events = 0;
    captured.push_back(op->capture(cut));
    BOOST_TEST(encoded_events == 0u, "the capture at step " << cut << " encoded events");
  }
  BOOST_TEST(metric(*op, "window_store_events") > 0.0);
  run_counted(*op, steps, from, steps.size());
  BOOST_TEST(metric(*op, "window_store_events") == 0.0);  // every captured window was purged
  for (std::size_t k = 0; k < captured.size(); ++k) {
    std::vector<std::uint8_t> written;
    state_writer w{k, written};
    encoded_events = 0;
    captured[k](w);
    BOOST_TEST(encoded_events > 0u);
    BOOST_TEST(written == at_cut[k], "capture " << k << " differs from the snapshot at its cut");
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_capture_written_later_equals_the_snapshot_at_the_barrier) {
  check_captures(tumbling{50}, with(150, late_trigger::at_offsets({3, 20}), trigger::on_count(3)),
                 script(11, 220, 60));
  check_captures(sliding{60, 25}, with(80, late_trigger::every_events(2)), script(13, 200, 50));
  check_captures(session{12}, with(300, late_trigger::every_ms(7)), script(14, 200, 40));
  check_captures(count_window{5, 3}, window_config{}, script(15, 150, 30, 30));
}
