// Property tests of the window operators against a brute-force reference: random out-of-order
// event streams pass through assign_timestamps (random watermark strategies), key_by and a window
// operator (random triggers); the final results must equal windows computed offline from all
// events, revisions must count 0, 1, ... with exactly one final result per (window, key), and
// every event dropped as too late must appear exactly once in the late output.
// Built twice: with the memory window store, and (TIDEMARK_TIERED_PROPERTY, tests/unit/aion_state)
// with the tiered store on a storage service, where results must be the same.
#define BOOST_TEST_MODULE window_property
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <map>
#include <random>
#include <sstream>

#include "harness.hpp"
#include "tidemark/core/event_time.hpp"
#include "tidemark/core/window_operators.hpp"
#ifdef TIDEMARK_TIERED_PROPERTY
#include "../../support/shared_storage.hpp"
#include "tidemark/core/tiered_window_store.hpp"
#endif

using namespace tidemark;
using tidemark::test::key_of;
using tidemark::test::make_batch;
using tidemark::test::pipe_emitter;
using tidemark::test::recording_emitter;

namespace {

struct ev {
  int key = 0;
  event_time t = 0;
  std::int64_t value = 0;
  int id = 0;
};

struct value_of {
  std::int64_t operator()(const ev& e) const { return e.value; }
};
/// A full-window function: the sorted ids of the window's events.
struct ids_of {
  std::vector<int> operator()(const int&, const window_id&, window_events<ev>& events) const {
    std::vector<int> ids;
    for (const auto& e : events) ids.push_back(e.id);
    std::sort(ids.begin(), ids.end());
    return ids;
  }
};

using pane_key = std::pair<int, window_id>;
using reference = std::map<pane_key, std::vector<int>>;  // sorted event ids per (key, window)

struct scenario {
  std::vector<ev> events;  // in arrival order
  event_time disorder = 0;
  event_time bound = 0;
  std::uint64_t every_events = 1;
  int punctuate_every = 0;
  window_config cfg;
};

scenario random_scenario(std::mt19937_64& rng, int n) {
  scenario sc;
  auto pick = [&](auto lo, auto hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  sc.disorder = pick(0, 300);
  sc.bound = pick(0, sc.disorder);
  sc.every_events = std::vector<std::uint64_t>{1, 5, 37, 200}[pick(0, 3)];
  sc.punctuate_every = static_cast<int>(pick(0, 1) * pick(2, 50));
  const int keys = static_cast<int>(pick(1, 20));
  event_time base = 1000;
  for (int i = 0; i < n; ++i) {
    base += pick(0, 5);
    const bool very_late = pick(0, 49) == 0;
    const auto delay = very_late ? pick(sc.disorder, 5 * sc.disorder + 50) : pick(0, sc.disorder);
    sc.events.push_back(ev{static_cast<int>(pick(0, keys - 1)), base - delay, pick(1, 1000), i});
  }
  sc.cfg.allowed_lateness = pick(0, 1) * pick(0, 400);
  if (pick(0, 2) == 0) sc.cfg.early = trigger::on_count(static_cast<std::uint64_t>(pick(1, 5)));
  switch (pick(0, 3)) {
    case 0: sc.cfg.late = late_trigger::every_event(); break;
    case 1: sc.cfg.late = late_trigger::every_events(static_cast<std::uint64_t>(pick(2, 4))); break;
    case 2: sc.cfg.late = late_trigger::every_ms(pick(5, 30)); break;
    default: sc.cfg.late = late_trigger::at_offsets({pick(0, 10), pick(10, 100)}); break;
  }
  return sc;
}

template <class R>
struct run_output {
  std::vector<window_result<int, R>> results;  // in emission order
  std::vector<int> late_ids;
  std::vector<event_time> arrival_watermarks;  // per event, in arrival order
};

/// Runs the scenario through assign_timestamps -> key_by -> window, ticking processing time.
template <class R>
run_output<R> drive(const scenario& sc, operator_logic& window, std::mt19937_64& rng) {
  auto ts = [](const ev& e) { return e.t; };
  auto punctuation = [p = sc.punctuate_every](const ev& e) { return p > 0 && e.id % p == 0; };
  auto strategy =
      bounded_out_of_orderness(sc.bound).every_events(sc.every_events).every_ms(50).punctuated(punctuation);
  ops::timestamp_logic<ev, decltype(ts), decltype(punctuation)> assign{ts, strategy};
  ops::key_by_logic<ev, key_of> key_by{key_of{}};
  recording_emitter out;
  pipe_emitter into_window{window, out};
  pipe_emitter into_key_by{key_by, into_window};
  std::int64_t now = 0;
  std::size_t pos = 0;
  while (pos < sc.events.size()) {
    auto n = std::min<std::size_t>(sc.events.size() - pos, 1 + rng() % 64);
    std::vector<ev> xs(sc.events.begin() + pos, sc.events.begin() + pos + n);
    pos += n;
    assign.process(0, make_batch(std::move(xs)), into_key_by);
    now += static_cast<std::int64_t>(rng() % 20);
    assign.on_timer(now, into_key_by);
    window.on_timer(now, out);
  }
  window.finish(out);
  run_output<R> result;
  result.results = out.values<window_result<int, R>>();
  for (const auto& e : out.values<ev>(late_port)) result.late_ids.push_back(e.id);
  result.arrival_watermarks = into_window.arrival_watermarks;
  BOOST_REQUIRE_EQUAL(result.arrival_watermarks.size(), sc.events.size());
  return result;
}

std::string describe(const pane_key& p) {
  std::ostringstream s;
  s << "key " << p.first << " [" << p.second.start << "," << p.second.end << ")";
  return s.str();
}

/// Checks the revision protocol and returns the final, non-retracted results.
template <class R>
std::map<pane_key, R> final_results(const std::vector<window_result<int, R>>& results) {
  std::map<pane_key, std::vector<const window_result<int, R>*>> by_pane;
  for (const auto& r : results) by_pane[{r.key, r.window}].push_back(&r);
  std::map<pane_key, R> finals;
  for (const auto& [p, rs] : by_pane) {
    for (std::size_t i = 0; i < rs.size(); ++i) {
      BOOST_REQUIRE_MESSAGE(rs[i]->revision == i, describe(p) << ": revision " << rs[i]->revision
                                                              << " at position " << i);
      BOOST_REQUIRE_MESSAGE(rs[i]->final == (i + 1 == rs.size()),
                            describe(p) << ": final flag wrong at revision " << i);
    }
    if (rs.back()->timing != pane_timing::retracted) finals[p] = rs.back()->value;
  }
  return finals;
}

std::int64_t sum_of_ids(const std::vector<int>& ids, const scenario& sc) {
  std::int64_t s = 0;
  for (auto id : ids) s += sc.events[static_cast<std::size_t>(id)].value;
  return s;
}

/// Compares one run (aggregate: sums; process: id lists) with the reference.
template <class R>
void check(const run_output<R>& run, const reference& ref, std::vector<int> expected_late,
           const scenario& sc) {
  auto finals = final_results(run.results);
  BOOST_REQUIRE_EQUAL(finals.size(), ref.size());
  for (const auto& [p, ids] : ref) {
    auto it = finals.find(p);
    BOOST_REQUIRE_MESSAGE(it != finals.end(), describe(p) << ": no final result");
    if constexpr (std::is_same_v<R, std::vector<int>>)
      BOOST_REQUIRE_MESSAGE(it->second == ids, describe(p) << ": wrong events");
    else
      BOOST_REQUIRE_MESSAGE(it->second == sum_of_ids(ids, sc), describe(p) << ": wrong sum");
  }
  auto late = run.late_ids;
  std::sort(late.begin(), late.end());
  BOOST_REQUIRE_MESSAGE(late == expected_late, "late output has " << late.size() << " events, expected "
                                                                   << expected_late.size());
}

/// Reference for tumbling and sliding windows: an event joins every window of its time whose
/// allowed lateness had not ended when it arrived; an event that joins none is dropped.
template <class Assigner>
reference aligned_reference(const scenario& sc, const Assigner& a,
                            const std::vector<event_time>& arrival_wm, std::vector<int>& dropped) {
  reference ref;
  for (std::size_t i = 0; i < sc.events.size(); ++i) {
    const auto& e = sc.events[i];
    bool accepted = false;
    a.assign(e.t, [&](const window_id& w) {
      if (w.end + sc.cfg.allowed_lateness <= arrival_wm[i]) return;
      accepted = true;
      ref[{e.key, w}].push_back(e.id);
    });
    if (!accepted) dropped.push_back(e.id);
  }
  for (auto& [p, ids] : ref) std::sort(ids.begin(), ids.end());
  return ref;
}

/// Reference sessions: per key, events sorted by time; an event within `gap` of the session's
/// last event (inclusive: windows that touch merge) extends it.
reference session_reference(const scenario& sc, event_time gap) {
  std::map<int, std::vector<ev>> by_key;
  for (const auto& e : sc.events) by_key[e.key].push_back(e);
  reference ref;
  for (auto& [k, es] : by_key) {
    std::sort(es.begin(), es.end(), [](const ev& a, const ev& b) { return a.t < b.t; });
    std::vector<int> ids;
    window_id w{es.front().t, es.front().t + gap};
    for (const auto& e : es) {
      if (e.t > w.end) {
        std::sort(ids.begin(), ids.end());
        ref[{k, w}] = ids;
        ids.clear();
        w = {e.t, e.t + gap};
      }
      w.end = std::max(w.end, e.t + gap);
      ids.push_back(e.id);
    }
    std::sort(ids.begin(), ids.end());
    ref[{k, w}] = ids;
  }
  return ref;
}

/// Reference count windows: per key, positions in arrival order.
reference count_reference(const scenario& sc, const count_window& c) {
  std::map<int, std::uint64_t> next;
  reference ref;
  for (const auto& e : sc.events) {
    const auto pos = next[e.key]++;
    for (std::uint64_t start = 0; start <= pos; start += c.slide)
      if (pos < start + c.size)
        ref[{e.key, window_id{static_cast<event_time>(start), static_cast<event_time>(start + c.size)}}]
            .push_back(e.id);
  }
  return ref;
}

using sum_fn = ops::aggregate_function<ev, int, agg::sum_of<value_of>>;
using ids_fn = ops::process_function<ev, int, ids_of>;

#ifdef TIDEMARK_TIERED_PROPERTY
/// Tiny m-buckets and blocks so that events go through disk: one store fills its m-buckets and
/// pre-stages; the other works under a memory budget that is always under severe pressure.
ids_fn make_ids_fn(const window_config& cfg, std::uint64_t round) {
  static const std::weak_ptr<persistence::storage_service> plain = test::shared_service();
  static const std::weak_ptr<persistence::storage_service> pressed =
      test::shared_service(persistence::storage_config{"", 2, 1, 4096});
  tiered t;
  t.memory_events = 3;
  t.block_events = 4;
  if (round % 2 == 1) {
    t.bootstrap_fraction = 0.5;
    t.prestage = false;
  }
  return ids_fn{ids_of{}, std::make_unique<tiered_window_store<int, ev>>(
                              t, (round % 2 ? pressed : plain).lock(), cfg.allowed_lateness)};
}
#else
ids_fn make_ids_fn(const window_config&, std::uint64_t) {
  return ids_fn{ids_of{}, std::make_unique<memory_window_store<int, ev>>()};
}
#endif

/// How often the random runs hit each case, so that the tests cannot pass without exercising it.
struct coverage {
  std::size_t dropped = 0;
  std::size_t by_timing[4] = {};
  void count(const run_output<std::int64_t>& run) {
    dropped += run.late_ids.size();
    for (const auto& r : run.results) ++by_timing[static_cast<int>(r.timing)];
  }
  std::size_t early() const { return by_timing[static_cast<int>(pane_timing::early)]; }
  std::size_t late() const { return by_timing[static_cast<int>(pane_timing::late)]; }
  std::size_t retracted() const { return by_timing[static_cast<int>(pane_timing::retracted)]; }
};

/// Runs both the aggregate and the process form of a window type over many random scenarios.
template <class MakeAssigner, class Reference>
coverage property(std::uint64_t seed, MakeAssigner make_assigner, Reference make_reference) {
  std::mt19937_64 rng{seed};
  coverage cov;
  for (int round = 0; round < 40; ++round) {
    BOOST_TEST_CONTEXT("seed " << seed << " round " << round) {
      auto sc = random_scenario(rng, 1500);
      auto a = make_assigner(rng, sc);
      auto sums = ops::make_window_logic<ev, int>(a, key_of{}, sum_fn{agg::sum(value_of{})}, sc.cfg, "w");
      auto run_sums = drive<std::int64_t>(sc, *sums, rng);
      std::vector<int> dropped;
      auto ref = make_reference(sc, a, run_sums.arrival_watermarks, dropped);
      check(run_sums, ref, dropped, sc);
      cov.count(run_sums);
      auto ids = ops::make_window_logic<ev, int>(a, key_of{}, make_ids_fn(sc.cfg, round), sc.cfg, "w");
      auto run_ids = drive<std::vector<int>>(sc, *ids, rng);
      dropped.clear();
      ref = make_reference(sc, a, run_ids.arrival_watermarks, dropped);
      check(run_ids, ref, dropped, sc);
    }
  }
  return cov;
}

/// property() for the window types aligned_reference describes (tumbling, sliding); their random
/// runs must drop events and give late and early results.
template <class MakeAssigner>
void aligned_property(std::uint64_t seed, MakeAssigner make_assigner) {
  auto cov = property(seed, make_assigner, [](const scenario& sc, const auto& a, const auto& wm, auto& dropped) {
    return aligned_reference(sc, a, wm, dropped);
  });
  BOOST_TEST(cov.dropped > 0u);
  BOOST_TEST(cov.late() > 0u);
  BOOST_TEST(cov.early() > 0u);
}

}  // namespace

BOOST_AUTO_TEST_CASE(tumbling_windows_match_the_reference) {
  aligned_property(
      1, [](auto& rng, const scenario&) { return tumbling{static_cast<event_time>(10 + rng() % 200)}; });
}

BOOST_AUTO_TEST_CASE(sliding_windows_match_the_reference) {
  aligned_property(2, [](auto& rng, const scenario&) {
    auto slide = static_cast<event_time>(5 + rng() % 50);
    return sliding{slide * static_cast<event_time>(1 + rng() % 4) + static_cast<event_time>(rng() % 3), slide};
  });
}

BOOST_AUTO_TEST_CASE(session_windows_match_the_reference_including_merges) {
  // Allowed lateness covers the largest delay, so no session is purged before its last event
  // and late events keep bridging sessions that already fired.
  auto cov = property(
      3,
      [](auto& rng, scenario& sc) {
        sc.cfg.allowed_lateness = 5 * sc.disorder + 51;
        return session{static_cast<event_time>(1 + rng() % 30)};
      },
      [](const scenario& sc, const session& a, const auto&, auto&) {
        return session_reference(sc, a.gap);
      });
  BOOST_TEST(cov.dropped == 0u);
  BOOST_TEST(cov.retracted() > 0u);
  BOOST_TEST(cov.late() > 0u);
}

BOOST_AUTO_TEST_CASE(count_windows_match_the_reference) {
  auto cov = property(
      4,
      [](auto& rng, const scenario&) {
        auto size = 1 + rng() % 12;
        return count_window{size, 1 + rng() % (size + 2)};
      },
      [](const scenario& sc, const count_window& a, const auto&, auto&) {
        return count_reference(sc, a);
      });
  BOOST_TEST(cov.by_timing[static_cast<int>(pane_timing::on_time)] > 0u);
}
