// Batching is transparent: event-time results (window results, revisions, late events) do not
// depend on batch size, linger, adaptive batching, parallelism or thread timing, because no
// element overtakes a watermark that was emitted before it. Checked on random out-of-order streams
// against the batch-1, parallelism-1 run and against a sequential reference simulation written
// here.
#define BOOST_TEST_MODULE batching_transparency
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <map>
#include <random>
#include <sstream>
#include <tuple>

#include "tidemark/runtime/runtime.hpp"

using namespace tidemark;

namespace {

struct ev {
  int key = 0;
  event_time t = 0;
  long v = 0;  ///< random, so that a window's sum identifies its contents
};

auto time_of = [](const ev& e) { return e.t; };
auto key_of = [](const ev& e) { return e.key; };
auto v_of = [](const ev& e) { return e.v; };

// ---- what a run produced, in a form that compares exactly ------------------------------------

/// key, window start, window end, revision, final, timing, value
using result_row = std::tuple<int, event_time, event_time, std::uint32_t, bool, int, long>;

struct window_outcome {
  std::vector<result_row> results;  ///< sorted
  std::vector<long> late;           ///< values of the late events, sorted
};

/// One outcome per window kind: tumbling, sliding, session.
using outcome = std::vector<window_outcome>;

const char* const kinds[] = {"tumbling", "sliding", "session"};

std::string print(const result_row& r) {
  std::ostringstream out;
  out << "key " << std::get<0>(r) << " [" << std::get<1>(r) << "," << std::get<2>(r) << ") rev "
      << std::get<3>(r) << (std::get<4>(r) ? " final" : "") << " timing " << std::get<5>(r)
      << " value " << std::get<6>(r);
  return out.str();
}

/// Empty when equal, else the first difference.
std::string difference(const outcome& got, const outcome& want) {
  for (std::size_t k = 0; k < want.size(); ++k) {
    const auto& a = got[k];
    const auto& b = want[k];
    std::ostringstream out;
    if (a.late != b.late)
      out << kinds[k] << ": " << a.late.size() << " late events, expected " << b.late.size();
    else if (a.results != b.results) {
      out << kinds[k] << ": " << a.results.size() << " results, expected " << b.results.size();
      auto m = std::mismatch(a.results.begin(), a.results.end(), b.results.begin(), b.results.end());
      if (m.first != a.results.end()) out << "; got " << print(*m.first);
      if (m.second != b.results.end()) out << "; expected " << print(*m.second);
    }
    if (!out.str().empty()) return out.str();
  }
  return {};
}

// ---- the runtime -----------------------------------------------------------------------------

constexpr event_time max_delay = 5;  // bounded out-of-orderness of the watermarks
constexpr event_time lateness = 30;  // allowed lateness of every window
const tumbling tumble{20};
const sliding slide{30, 10};
const session sessions{4};

template <class R>
void add_results(window_outcome& o, const std::vector<window_result<int, R>>& rs) {
  for (const auto& r : rs)
    o.results.emplace_back(r.key, r.window.start, r.window.end, r.revision, r.final,
                           static_cast<int>(r.timing), r.value);
  std::sort(o.results.begin(), o.results.end());
}

void add_late(window_outcome& o, const std::vector<ev>& es) {
  for (const auto& e : es) o.late.push_back(e.v);
  std::sort(o.late.begin(), o.late.end());
}

/// events => timestamps (a watermark after every element) => key_by => the three windows.
outcome run_windows(const std::vector<ev>& events, std::uint32_t parallelism, run_options opts) {
  job j{"batching_transparency"};
  auto keyed = j.from_container(events, "events")
                   .assign_timestamps(time_of, bounded_out_of_orderness(max_delay).every_events(1))
                   .key_by(key_of);
  auto t = keyed.window(tumble).allowed_lateness(lateness).aggregate(agg::sum(v_of), "tumbling");
  auto s = keyed.window(slide).allowed_lateness(lateness).aggregate(agg::sum(v_of), "sliding");
  auto g = keyed.window(sessions).allowed_lateness(lateness).aggregate(agg::sum(v_of), "session");
  t.parallelism(parallelism);
  s.parallelism(parallelism);
  g.parallelism(parallelism);
  auto tr = t.results().collect();
  auto tl = t.late().collect();
  auto sr = s.results().collect();
  auto sl = s.late().collect();
  auto gr = g.results().collect();
  auto gl = g.late().collect();
  run(j, opts);
  outcome o(3);
  add_results(o[0], tr.values());
  add_late(o[0], tl.values());
  add_results(o[1], sr.values());
  add_late(o[1], sl.values());
  add_results(o[2], gr.values());
  add_late(o[2], gl.values());
  return o;
}

// ---- the reference: one pass over the events in source order --------------------------------

event_time purge_time(const window_id& w) {
  return w.end > end_of_time - lateness ? end_of_time : w.end + lateness;
}

/// A window of one key: its sum, the revision its next result gets, whether the watermark passed
/// its end.
struct ref_pane {
  window_id w;
  long sum = 0;
  std::uint32_t revision = 0;
  bool expired = false;
};

void emit(window_outcome& o, int key, ref_pane& p, pane_timing timing, bool final) {
  o.results.emplace_back(key, p.w.start, p.w.end, p.revision++, final, static_cast<int>(timing), p.sum);
}

/// Fires what watermark `wm` completes: on time when it passes the end, finally when it also passes
/// the allowed lateness. Returns true when the pane is done.
bool fire_due(window_outcome& o, int key, ref_pane& p, event_time wm) {
  if (p.w.end > wm) return false;
  const bool done = purge_time(p.w) <= wm;
  if (!p.expired) {
    p.expired = true;
    emit(o, key, p, pane_timing::on_time, done);
  } else if (done) {
    emit(o, key, p, pane_timing::late, true);
  }
  return done;
}

/// Adds an event to a pane; a late event re-fires a window that already fired.
void add(window_outcome& o, int key, ref_pane& p, const ev& e) {
  p.sum += e.v;
  if (p.expired) emit(o, key, p, pane_timing::late, false);
}

/// Tumbling and sliding windows.
template <class Assigner>
struct aligned_reference {
  Assigner assigner;
  std::map<std::pair<int, event_time>, ref_pane> panes;  // by key and window start

  void on_event(window_outcome& o, const ev& e, event_time wm) {
    bool accepted = false;
    assigner.assign(e.t, [&](const window_id& w) {
      if (e.t < wm && purge_time(w) <= wm) return;  // too late for this window
      accepted = true;
      auto [it, created] = panes.try_emplace({e.key, w.start});
      if (created) it->second = ref_pane{w, 0, 0, w.end <= wm};
      add(o, e.key, it->second, e);
    });
    if (!accepted) o.late.push_back(e.v);
  }

  void on_watermark(window_outcome& o, event_time wm) {
    for (auto it = panes.begin(); it != panes.end();)
      it = fire_due(o, it->first.first, it->second, wm) ? panes.erase(it) : std::next(it);
  }
};

/// Session windows: per key, disjoint sessions ordered by start; an event opens [t, t + gap) and
/// merges the sessions that overlap or touch it.
struct session_reference {
  event_time gap;
  std::map<int, std::vector<ref_pane>> keys;

  void on_event(window_outcome& o, const ev& e, event_time wm) {
    auto& list = keys[e.key];
    const window_id own{e.t, e.t + gap};
    std::vector<std::size_t> touching;
    for (std::size_t i = 0; i < list.size(); ++i)
      if (list[i].w.end >= own.start && list[i].w.start <= own.end) touching.push_back(i);
    if (touching.empty()) {
      if (purge_time(own) <= wm) {
        o.late.push_back(e.v);
        return;
      }
      auto at = std::find_if(list.begin(), list.end(), [&](auto& s) { return s.w.start > own.start; });
      auto& s = *list.insert(at, ref_pane{own, 0, 0, own.end <= wm});
      add(o, e.key, s, e);
      return;
    }
    window_id merged = own;
    for (auto i : touching) {
      merged.start = std::min(merged.start, list[i].w.start);
      merged.end = std::max(merged.end, list[i].w.end);
    }
    // sessions that reported results under a window that no longer exists are retracted
    for (auto i : touching)
      if (list[i].w != merged && list[i].revision > 0) emit(o, e.key, list[i], pane_timing::retracted, true);
    auto& survivor = list[touching.front()];
    if (survivor.w != merged) survivor.revision = 0;
    for (std::size_t n = 1; n < touching.size(); ++n) survivor.sum += list[touching[n]].sum;
    survivor.w = merged;
    survivor.expired = merged.end <= wm;
    list.erase(list.begin() + touching.front() + 1, list.begin() + touching.back() + 1);
    add(o, e.key, list[touching.front()], e);
  }

  void on_watermark(window_outcome& o, event_time wm) {
    for (auto& [key, list] : keys) {
      const int k = key;
      list.erase(std::remove_if(list.begin(), list.end(), [&](ref_pane& p) { return fire_due(o, k, p, wm); }),
                 list.end());
    }
  }
};

outcome reference(const std::vector<ev>& events) {
  outcome o(3);
  aligned_reference<tumbling> t{tumble, {}};
  aligned_reference<sliding> s{slide, {}};
  session_reference g{sessions.gap, {}};
  auto watermark = [&](event_time wm) {
    t.on_watermark(o[0], wm);
    s.on_watermark(o[1], wm);
    g.on_watermark(o[2], wm);
  };
  // the watermark assign_timestamps emits after each element (when it advances)
  event_time wm = start_of_time;
  event_time max_seen = start_of_time;
  for (const auto& e : events) {
    t.on_event(o[0], e, wm);
    s.on_event(o[1], e, wm);
    g.on_event(o[2], e, wm);
    max_seen = std::max(max_seen, e.t);
    if (max_seen - max_delay > wm) watermark(wm = max_seen - max_delay);
  }
  watermark(end_of_time);
  for (auto& w : o) {
    std::sort(w.results.begin(), w.results.end());
    std::sort(w.late.begin(), w.late.end());
  }
  return o;
}

// ---- streams ---------------------------------------------------------------------------------

/// `n` events one millisecond apart over `keys` keys, in the order they arrive after
/// heavy-tailed delays (lognormal, and one in fifty held back by 50 to 400 ms).
std::vector<ev> out_of_order_stream(std::uint32_t seed, int n, int keys) {
  std::mt19937_64 rng{seed};
  std::lognormal_distribution<double> delay{1.0, 1.3};
  std::bernoulli_distribution held_back{0.02};
  std::uniform_real_distribution<double> far{50, 400};
  std::uniform_int_distribution<int> key{0, keys - 1};
  std::uniform_int_distribution<long> value{1, 1L << 40};
  std::vector<std::pair<double, ev>> arriving;
  for (int i = 0; i < n; ++i) {
    auto d = delay(rng) + (held_back(rng) ? far(rng) : 0.0);
    arriving.push_back({i + d, ev{key(rng), 1000 + i, value(rng)}});
  }
  std::stable_sort(arriving.begin(), arriving.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<ev> events;
  for (auto& [at, e] : arriving) events.push_back(e);
  return events;
}

run_options options(std::size_t batch_size, int linger_ms, bool adaptive = false) {
  run_options o;
  o.batch_size = batch_size;
  o.linger = std::chrono::milliseconds{linger_ms};
  o.adaptive_batching = adaptive;
  o.print_summary = false;
  return o;
}

}  // namespace

BOOST_AUTO_TEST_CASE(an_element_behind_a_watermark_stays_behind_it) {
  // The example: (key 0, t 1) moves the watermark to 1, so (key 1, t 0) is late for
  // its window [0, 1) at every batch size.
  std::vector<ev> events{{0, 1, 10}, {1, 0, 20}};
  for (std::size_t batch_size : {1, 16, 4096})
    for (std::uint32_t parallelism : {1u, 3u}) {
      job j{"repro"};
      auto w = j.from_container(events)
                   .assign_timestamps(time_of, bounded_out_of_orderness(0).every_events(1))
                   .key_by(key_of)
                   .window(tumbling{1})
                   .aggregate(agg::sum(v_of));
      w.parallelism(parallelism);
      auto results = w.results().collect();
      auto late = w.late().collect();
      run(j, options(batch_size, 5));
      BOOST_TEST_CONTEXT("batch " << batch_size << ", parallelism " << parallelism) {
        BOOST_REQUIRE_EQUAL(late.values().size(), 1u);
        BOOST_TEST(late.values()[0].v == 20);
        BOOST_TEST(results.values().size() == 1u);
      }
    }
}

BOOST_AUTO_TEST_CASE(results_do_not_depend_on_batching_parallelism_or_timing) {
  const int events_per_stream = 2000;
  for (std::uint32_t rep = 0; rep < 10; ++rep) {
    auto events = out_of_order_stream(rep + 1, events_per_stream, 6);
    const auto expected = reference(events);
    // the reference must exercise what it claims to: late refires, drops, retractions
    std::size_t late_refires = 0, retractions = 0;
    for (const auto& w : expected)
      for (const auto& r : w.results) {
        late_refires += std::get<5>(r) == static_cast<int>(pane_timing::late) && !std::get<4>(r);
        retractions += std::get<5>(r) == static_cast<int>(pane_timing::retracted);
      }
    BOOST_TEST(late_refires > 0u);
    BOOST_TEST(retractions > 0u);
    for (const auto& w : expected) BOOST_TEST(!w.late.empty());

    const auto baseline = run_windows(events, 1, options(1, 0));
    BOOST_TEST_CONTEXT("stream " << rep << ", batch 1, parallelism 1 against the reference") {
      auto diff = difference(baseline, expected);
      BOOST_TEST(diff.empty(), diff);
    }
    // fixed batching with linger 0 and 5 ms, and adaptive batching (batches cut wherever a
    // stage happens to be idle)
    const std::pair<int, bool> batchings[] = {{0, false}, {5, false}, {5, true}};
    for (std::size_t batch_size : {1, 7, 64, 4096})
      for (auto [linger, adaptive] : batchings)
        for (std::uint32_t parallelism = 1; parallelism <= 4; ++parallelism) {
          if (batch_size == 1 && linger == 0 && parallelism == 1) continue;  // the baseline
          auto got = run_windows(events, parallelism, options(batch_size, linger, adaptive));
          BOOST_TEST_CONTEXT("stream " << rep << ", batch " << batch_size << ", linger " << linger
                                       << " ms" << (adaptive ? ", adaptive" : "")
                                       << ", parallelism " << parallelism) {
            auto diff = difference(got, baseline);
            BOOST_TEST(diff.empty(), diff);
          }
        }
  }
}
