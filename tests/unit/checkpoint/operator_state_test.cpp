// Checkpoints of sources and non-window operators: an instance interrupted at a snapshot and a
// fresh instance restored from its bytes together produce exactly what one uninterrupted instance
// produces (the data itself for sources, an independent reference or a straight run for operators).
#define BOOST_TEST_MODULE operator_state
#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "../event_time/harness.hpp"
#include "checkpoint_harness.hpp"
#include "tidemark/core/async.hpp"
#include "tidemark/core/event_time.hpp"
#include "tidemark/core/job.hpp"
#include "tidemark/core/state.hpp"

using namespace tidemark;
using tidemark::test::recording_emitter;
using tidemark::test::restore_from;
using tidemark::test::snapshot_of;

namespace {

instance_info instance(std::uint32_t index = 0, std::uint32_t parallelism = 1) {
  instance_info info;
  info.name = "op";
  info.index = index;
  info.parallelism = parallelism;
  return info;
}

/// Pulls `pulls` times (or to the end) with batches of `max`; true while the source has more.
bool pull_some(source_logic& s, std::size_t pulls, std::size_t max, emitter& out) {
  bool more = true;
  for (std::size_t i = 0; i < pulls && more; ++i) more = s.pull(max, out);
  return more;
}

/// For every interruption point: `pulls` pulls of `max` into one instance, snapshot, restore into
/// a fresh one (after open), pull to the end. The concatenation must equal `expected`.
template <class T, class Make>
void check_source_replays(Make make, const std::vector<T>& expected, std::size_t max) {
  const std::size_t total_pulls = expected.size() / max + 2;
  for (std::size_t pulls = 0; pulls <= total_pulls; ++pulls) {
    BOOST_TEST_CONTEXT("snapshot after " << pulls << " pulls of " << max) {
      recording_emitter out;
      auto first = make();
      BOOST_CHECK(first->replayable());
      first->open();
      pull_some(*first, pulls, max, out);
      const auto state = snapshot_of(*first);
      first.reset();  // the crash
      auto second = make();
      second->open();
      restore_from(*second, state);
      pull_some(*second, SIZE_MAX, max, out);
      BOOST_CHECK(out.values<T>() == expected);
    }
  }
}

/// Batch of `xs` with the key hashes key_by computes for `key`.
template <class T, class KeyFn>
batch_ptr keyed_batch(const std::vector<T>& xs, KeyFn key) {
  auto b = std::make_unique<batch<T>>();
  b->values = xs;
  for (const auto& x : xs) b->hashes.push_back(detail::mix_hash(std::hash<decltype(key(x))>{}(key(x))));
  return b;
}

/// Feeds `chunks` to one operator made by `make`, or to one up to chunk `cut` and a restored
/// fresh one after it; returns what was emitted on port 0.
template <class Out, class Make, class Feed>
std::vector<Out> run(Make make, std::size_t chunks, Feed feed, std::optional<std::size_t> cut) {
  recording_emitter out;
  auto op = make();
  for (std::size_t i = 0; i < chunks; ++i) {
    if (cut && i == *cut) {
      const auto state = snapshot_of(*op);
      op = make();
      restore_from(*op, state);
    }
    feed(*op, i, out);
  }
  op->finish(out);
  return out.values<Out>();
}

struct no_codec {
  int v = 0;
};

}  // namespace

// ---- sources ---------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(a_container_source_continues_its_slice_from_the_checkpoint) {
  std::vector<int> xs(100);
  for (int i = 0; i < 100; ++i) xs[i] = i * 3;
  auto shared = std::make_shared<const std::vector<int>>(xs);
  // instance 1 of 3 emits elements 33..65
  const std::vector<int> slice(xs.begin() + 33, xs.begin() + 66);
  check_source_replays<int>(
      [&] { return std::make_unique<ops::container_source<int>>(shared, instance(1, 3)); }, slice, 7);
}

BOOST_AUTO_TEST_CASE(a_container_source_refuses_a_position_outside_its_slice) {
  auto shared = std::make_shared<const std::vector<int>>(std::vector<int>(100));
  ops::container_source<int> first{shared, instance(2, 3)};  // elements 66..99
  const auto state = snapshot_of(first);
  ops::container_source<int> other{shared, instance(0, 3)};  // elements 0..32
  state_reader r{7, state.data(), state.size()};
  BOOST_CHECK_THROW(other.restore(r), job_error);
}

BOOST_AUTO_TEST_CASE(a_seeded_generator_replays_by_running_again) {
  const std::size_t n = 1000;
  // the reference: the values of the same seeded engine, drawn in a plain loop
  std::vector<std::uint64_t> expected;
  std::mt19937_64 reference(99);
  for (std::size_t i = 0; i < n; ++i) expected.push_back(reference() % 1000);
  auto generator = [rng = std::mt19937_64(99), left = n]() mutable -> std::optional<std::uint64_t> {
    if (left == 0) return std::nullopt;
    --left;
    return rng() % 1000;
  };
  using source = ops::generator_source<std::uint64_t, decltype(generator)>;
  check_source_replays<std::uint64_t>([&] { return std::make_unique<source>(generator); }, expected, 128);
}

BOOST_AUTO_TEST_CASE(a_generator_knows_when_it_is_being_replayed) {
  // a paced generator records which of its calls were replays (it must not sleep in those)
  auto replays = std::make_shared<std::vector<bool>>();
  auto generator = [replays, i = 0]() mutable -> std::optional<int> {
    replays->push_back(replaying_generator());
    return i < 10 ? std::optional<int>{i++} : std::nullopt;
  };
  using source = ops::generator_source<int, decltype(generator)>;
  recording_emitter out;
  source first{generator};
  first.pull(4, out);
  const auto state = snapshot_of(first);
  replays->clear();
  source second{generator};
  restore_from(second, state);
  BOOST_CHECK(*replays == std::vector<bool>(4, true));
  BOOST_CHECK(!replaying_generator());
  second.pull(1, out);
  BOOST_CHECK_EQUAL(replays->back(), false);
  BOOST_CHECK((out.values<int>() == std::vector<int>{0, 1, 2, 3, 4}));
}

BOOST_AUTO_TEST_CASE(a_generator_that_ends_before_the_checkpoint_position_fails_the_restore) {
  auto counting = [i = 0]() mutable -> std::optional<int> { return i < 50 ? std::optional<int>{i++} : std::nullopt; };
  using source = ops::generator_source<int, decltype(counting)>;
  recording_emitter out;
  source first{counting};
  first.pull(40, out);
  const auto state = snapshot_of(first);
  auto shorter = [i = 0]() mutable -> std::optional<int> { return i < 10 ? std::optional<int>{i++} : std::nullopt; };
  ops::generator_source<int, decltype(shorter)> second{shorter};
  state_reader r{7, state.data(), state.size()};
  BOOST_CHECK_EXCEPTION(second.restore(r), job_error, [](const job_error& e) {
    return std::string{e.what()}.find("ended after 10 elements") != std::string::npos;
  });
}

BOOST_AUTO_TEST_CASE(a_text_file_source_seeks_back_to_the_checkpoint_line) {
  const std::string path = "operator_state_test_lines.txt";
  std::vector<std::string> lines;
  {
    std::ofstream f(path);
    for (int i = 0; i < 250; ++i) {
      lines.push_back("line " + std::to_string(i) + std::string(static_cast<std::size_t>(i % 7), '#'));
      f << lines.back() << (i + 1 < 250 ? "\n" : "");  // the last line without a newline
    }
  }
  job j;
  j.from_text_file(path).count();
  const auto make_source = j.graph().node(0).make_source;
  // instance 1 of 2 reads the odd lines
  std::vector<std::string> odd;
  for (std::size_t i = 1; i < lines.size(); i += 2) odd.push_back(lines[i]);
  check_source_replays<std::string>([&] { return make_source(instance(1, 2)); }, odd, 16);
  std::remove(path.c_str());
}

// ---- operators -------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(keyed_reduce_and_fold_continue_every_key_from_the_checkpoint) {
  std::mt19937 rng(5);
  std::vector<std::vector<int>> chunks(12);
  for (auto& c : chunks)
    for (int i = 0; i < 50; ++i) c.push_back(static_cast<int>(rng() % 1000));
  auto key = [](const int& x) { return x % 13; };
  // the reference: running sums per key, element by element
  std::vector<int> sums;
  std::vector<std::pair<int, std::int64_t>> folds;
  std::map<int, int> sum_of;
  std::map<int, std::int64_t> fold_of;
  for (const auto& c : chunks)
    for (int x : c) {
      sums.push_back(sum_of.count(key(x)) ? sum_of[key(x)] += x : sum_of[key(x)] = x);
      folds.emplace_back(key(x), fold_of.count(key(x)) ? fold_of[key(x)] += 2 * x : fold_of[key(x)] = 100 + 2 * x);
    }
  auto plus = [](int a, const int& x) { return a + x; };
  auto value = [](const int&, const int& a) { return a; };
  using reduce = ops::fold_logic<int, int, int, decltype(key), decltype(plus), decltype(value)>;
  auto make_reduce = [&] { return std::make_unique<reduce>(key, std::nullopt, plus, value); };
  auto twice = [](std::int64_t a, const int& x) { return a + 2 * x; };
  auto pair = [](const int& k, const std::int64_t& a) { return std::make_pair(k, a); };
  using fold = ops::fold_logic<int, int, std::int64_t, decltype(key), decltype(twice), decltype(pair)>;
  auto make_fold = [&] { return std::make_unique<fold>(key, std::int64_t{100}, twice, pair); };
  auto feed = [&](operator_logic& op, std::size_t i, emitter& out) { op.process(0, keyed_batch(chunks[i], key), out); };
  for (std::size_t cut = 0; cut <= chunks.size(); ++cut) {
    BOOST_TEST_CONTEXT("checkpoint before chunk " << cut) {
      BOOST_CHECK(run<int>(make_reduce, chunks.size(), feed, cut) == sums);
      BOOST_CHECK((run<std::pair<int, std::int64_t>>(make_fold, chunks.size(), feed, cut) == folds));
    }
  }
}

namespace {
struct user_session {
  std::int64_t count = 0;
  std::string last;
  TIDEMARK_FIELDS(count, last)
};
}  // namespace

BOOST_AUTO_TEST_CASE(keyed_process_continues_every_key_state_from_the_checkpoint) {
  std::vector<std::vector<std::string>> chunks;
  for (int c = 0; c < 8; ++c) {
    chunks.emplace_back();
    for (int i = 0; i < 30; ++i) chunks.back().push_back(std::string(1, static_cast<char>('a' + (c * 7 + i) % 5)) + std::to_string(i));
  }
  auto key = [](const std::string& s) { return s.substr(0, 1); };
  // per key: emit "key:count:previous" for every element, and one more line every third element
  std::vector<std::string> expected;
  std::map<std::string, user_session> reference;
  for (const auto& c : chunks)
    for (const auto& x : c) {
      auto& s = reference[key(x)];
      ++s.count;
      expected.push_back(key(x) + ":" + std::to_string(s.count) + ":" + s.last);
      if (s.count % 3 == 0) expected.push_back(key(x) + " third");
      s.last = x;
    }
  auto make_state = [] { return user_session{}; };
  auto f = [key](user_session& s, const std::string& x, collector<std::string>& out) {
    ++s.count;
    out(key(x) + ":" + std::to_string(s.count) + ":" + s.last);
    if (s.count % 3 == 0) out(key(x) + " third");
    s.last = x;
  };
  using process = ops::keyed_process_logic<std::string, std::string, std::string, decltype(key), user_session,
                                           decltype(make_state), decltype(f)>;
  auto make = [&] { return std::make_unique<process>(key, make_state, f); };
  auto feed = [&](operator_logic& op, std::size_t i, emitter& out) { op.process(0, keyed_batch(chunks[i], key), out); };
  for (std::size_t cut = 0; cut <= chunks.size(); ++cut)
    BOOST_TEST_CONTEXT("checkpoint before chunk " << cut) {
      BOOST_CHECK(run<std::string>(make, chunks.size(), feed, cut) == expected);
    }
}

BOOST_AUTO_TEST_CASE(timestamp_assignment_continues_its_watermarks_from_the_checkpoint) {
  std::mt19937 rng(11);
  std::vector<std::vector<std::int64_t>> chunks(10);
  std::int64_t t = 0;
  for (auto& c : chunks)
    for (int i = 0; i < 17; ++i) c.push_back(t += static_cast<std::int64_t>(rng() % 10) - 3);
  auto ts = [](const std::int64_t& x) { return x; };
  auto strategy = bounded_out_of_orderness(5).every_events(4);
  using logic = ops::timestamp_logic<std::int64_t, decltype(ts), no_punctuation>;
  auto make = [&] { return std::make_unique<logic>(ts, strategy); };
  auto run_all = [&](std::optional<std::size_t> cut) {
    recording_emitter out;
    auto op = make();
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      if (cut && i == *cut) {
        const auto state = snapshot_of(*op);
        op = make();
        restore_from(*op, state);
      }
      auto b = std::make_unique<batch<std::int64_t>>();
      b->values = chunks[i];
      op->process(0, std::move(b), out);
    }
    return std::make_pair(out.values<std::int64_t>(), out.watermarks());
  };
  const auto straight = run_all(std::nullopt);
  BOOST_REQUIRE(straight.second.size() > 5);  // the stream calls for watermarks
  for (std::size_t cut = 0; cut <= chunks.size(); ++cut)
    BOOST_TEST_CONTEXT("checkpoint before chunk " << cut) {
      const auto resumed = run_all(cut);
      BOOST_CHECK(resumed.first == straight.first);
      BOOST_CHECK(resumed.second == straight.second);
    }
}

BOOST_AUTO_TEST_CASE(an_async_operator_starts_again_what_it_had_not_emitted) {
  // The first instance leaves every third element hanging and completes the others at once; the
  // restored one completes everything at once. Every input must come out exactly once.
  auto hanging = std::make_shared<std::vector<async_result<int>>>();
  auto leave_some = [hanging](const int& x, async_result<int> r) {
    if (x % 3 == 0)
      hanging->push_back(std::move(r));
    else
      r.complete(x * 10);
  };
  auto at_once = [](const int& x, async_result<int> r) { r.complete(x * 10); };
  std::vector<int> inputs(60);
  for (int i = 0; i < 60; ++i) inputs[i] = i;
  recording_emitter out;
  ops::async_logic<int, int, decltype(leave_some)> first{leave_some, 8};
  first.set_wakeup([] {});
  auto send = [&](operator_logic& op, int from, int to) {
    auto b = std::make_unique<batch<int>>();
    b->values.assign(inputs.begin() + from, inputs.begin() + to);
    for (int x : b->values) b->times.push_back(x);
    op.process(0, std::move(b), out);
    op.on_watermark(to - 1, out);
  };
  send(first, 0, 30);
  BOOST_REQUIRE(first.pending());  // some elements are in flight or waiting
  const auto state = snapshot_of(first);
  hanging->front().complete(-1);  // completed after the snapshot, never emitted: the crash
  ops::async_logic<int, int, decltype(at_once)> second{at_once, 8};
  // as the runtime does: a wakeup asked for leads to on_wakeup on the operator's thread
  bool woken = false;
  second.set_wakeup([&] { woken = true; });
  auto deliver_wakeups = [&] {
    while (std::exchange(woken, false)) second.on_wakeup(out);
  };
  restore_from(second, state);
  deliver_wakeups();
  send(second, 30, 60);
  deliver_wakeups();
  BOOST_CHECK(!second.pending());
  auto got = out.values<int>();
  std::sort(got.begin(), got.end());
  std::vector<int> expected;
  for (int x : inputs) expected.push_back(x * 10);
  BOOST_CHECK(got == expected);
  // the watermark never passed an element that was still to come
  const auto wms = out.watermarks();
  BOOST_CHECK(std::is_sorted(wms.begin(), wms.end()));
  BOOST_CHECK_EQUAL(wms.back(), 59);
}

BOOST_AUTO_TEST_CASE(count_and_collect_sinks_keep_what_they_had_before_the_checkpoint) {
  auto total = std::make_shared<std::atomic<std::uint64_t>>(0);
  auto collected = std::make_shared<ops::collected_state<int>>();
  auto feed = [](operator_logic& op, int from, int to) {
    recording_emitter none;
    auto b = std::make_unique<batch<int>>();
    for (int i = from; i < to; ++i) b->values.push_back(i);
    op.process(0, std::move(b), none);
  };
  recording_emitter none;
  ops::count_sink count_first{total};
  ops::collect_sink<int> collect_first{collected};
  feed(count_first, 0, 40);
  feed(collect_first, 0, 40);
  const auto count_state = snapshot_of(count_first);
  const auto collect_state = snapshot_of(collect_first);
  ops::count_sink count_second{total};
  ops::collect_sink<int> collect_second{collected};
  restore_from(count_second, count_state);
  restore_from(collect_second, collect_state);
  feed(count_second, 40, 100);
  feed(collect_second, 40, 100);
  count_second.finish(none);
  collect_second.finish(none);
  BOOST_CHECK_EQUAL(total->load(), 100u);
  std::vector<int> expected(100);
  for (int i = 0; i < 100; ++i) expected[i] = i;
  BOOST_CHECK(collected->values == expected);
}

BOOST_AUTO_TEST_CASE(state_without_a_codec_fails_the_checkpoint_naming_its_type) {
  auto key = [](const int& x) { return x % 2; };
  auto f = [](no_codec a, const int& x) { return no_codec{a.v + x}; };
  auto value = [](const int&, const no_codec& a) { return a.v; };
  ops::fold_logic<int, int, no_codec, decltype(key), decltype(f), decltype(value)> op{key, no_codec{}, f, value};
  recording_emitter out;
  op.process(0, keyed_batch(std::vector<int>{1, 2, 3}, key), out);
  BOOST_CHECK_EXCEPTION(snapshot_of(op), job_error, [](const job_error& e) {
    return std::string{e.what()}.find("no_codec") != std::string::npos;
  });
}

