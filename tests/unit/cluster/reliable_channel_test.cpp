// The reliable channel protocol (net/reliable_channel.hpp) against a simulated link with a clock
// of its own: whatever the link drops, duplicates, reorders or delays in either direction (data
// one way, the receiver's reports the other), the receiver delivers exactly the frames the
// producer sent, once each and in order, and the sender keeps no more than the credit window.
#define BOOST_TEST_MODULE reliable channel
#include <boost/test/unit_test.hpp>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "net/reliable_channel.hpp"

using namespace tidemark;
using namespace std::chrono_literals;
using time_point = std::chrono::steady_clock::time_point;

namespace {

/// What the link does to one direction's packets; `drop_nth(i)` drops the i-th packet (from 0).
struct link_model {
  double drop = 0, duplicate = 0, reorder = 0;
  std::chrono::milliseconds delay{1}, jitter{0};
  std::function<bool(std::size_t)> drop_nth;
  /// [from, to) since the start: nothing gets through (a partition).
  std::chrono::milliseconds cut_from{0}, cut_to{0};
};

template <class Packet>
struct direction {
  link_model model;
  std::mt19937_64* rng;
  std::multimap<time_point, Packet> in_flight;
  std::size_t sent = 0;

  void send(const Packet& p, time_point now, time_point start) {
    const auto i = sent++;
    std::uniform_real_distribution<double> u{0, 1};
    if (model.drop_nth && model.drop_nth(i)) return;
    if (now - start >= model.cut_from && now - start < model.cut_to) return;
    if (u(*rng) < model.drop) return;
    const int copies = u(*rng) < model.duplicate ? 2 : 1;
    for (int c = 0; c < copies; ++c) {
      auto at = now + model.delay +
                std::chrono::milliseconds{std::uniform_int_distribution<long>{
                    0, model.jitter.count()}(*rng)};
      if (u(*rng) < model.reorder) at += 5ms;  // overtaken by what follows
      in_flight.emplace(at, p);
    }
  }
};

struct outcome {
  std::vector<std::string> produced;   // what the sending stage emitted, in order
  std::vector<std::string> delivered;  // what the receiving stage got, in order
  std::size_t most_unacked = 0;
  std::uint64_t retransmitted = 0, probes = 0, duplicates = 0, held = 0;
  std::chrono::milliseconds rto{0};  // the sender's retransmit timeout at the end
  bool finished = false;
};

/// A sending stage with `window` credits emits `items` frames (two batches, then a watermark,
/// ..., then end-of-stream) as fast as credit allows; the receiving stage processes each batch at
/// once and returns credit in grants of half the window, as stage_core does.
outcome run(std::uint32_t window, std::size_t items, link_model data, link_model reports,
            std::uint64_t seed) {
  net::reliability_options opts;
  net::reliable_sender<std::string> sender{window, opts};
  net::reliable_receiver<std::string> receiver{opts};
  std::mt19937_64 rng{seed};
  direction<std::pair<std::uint64_t, std::string>> forward{std::move(data), &rng, {}, 0};
  direction<net::channel_state> backward{std::move(reports), &rng, {}, 0};
  outcome out;
  const time_point start{std::chrono::seconds{1}};
  time_point now = start;
  std::uint64_t credit = window, seq = 0, ungranted = 0;
  const std::uint32_t grant = std::max<std::uint32_t>(1, window / 2);
  auto resend = [&](std::uint64_t s, const std::string& f) { forward.send({s, f}, now, start); };
  while (now - start < 120s) {
    // the sending stage
    while (out.produced.size() < items) {
      const auto i = out.produced.size();
      const bool last = i + 1 == items, batch = !last && i % 3 != 2;
      if (batch && credit == 0) break;
      if (batch) --credit;
      auto frame = (last ? "eos " : batch ? "batch " : "watermark ") + std::to_string(i);
      out.produced.push_back(frame);
      sender.sent(seq, frame, batch, last, now);
      forward.send({seq++, frame}, now, start);
    }
    out.most_unacked = std::max(out.most_unacked, sender.unacked());
    // the link, then the timers of both ends
    for (auto it = forward.in_flight.begin();
         it != forward.in_flight.end() && it->first <= now; it = forward.in_flight.erase(it))
      if (it->second.second == "probe")  // not a frame: the node answers it without accepting it
        receiver.on_probe(now);
      else
        receiver.accept(it->second.first, it->second.second, now, [&](std::string f) {
        if (f.rfind("batch", 0) == 0 && ++ungranted == grant) {
          receiver.add_credit(grant, now);
          ungranted = 0;
        }
        out.delivered.push_back(std::move(f));
      });
    for (auto it = backward.in_flight.begin();
         it != backward.in_flight.end() && it->first <= now; it = backward.in_flight.erase(it))
      credit += sender.on_state(it->second, now, resend);
    if (auto s = receiver.report(now)) backward.send(*s, now, start);
    sender.poll(now, resend, [&] { forward.send({seq, "probe"}, now, start); });
    if (out.delivered.size() == items && sender.unacked() == 0) {
      out.finished = true;
      break;
    }
    now += 1ms;
  }
  out.retransmitted = sender.retransmitted();
  out.rto = sender.retransmit_timeout();
  out.probes = sender.probes();
  out.duplicates = receiver.duplicates();
  out.held = receiver.held_total();
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_perfect_link_delivers_in_order_without_retransmissions) {
  auto out = run(8, 500, {}, {}, 1);
  BOOST_TEST(out.finished);
  BOOST_TEST(out.delivered == out.produced);
  BOOST_TEST(out.retransmitted == 0u);
  BOOST_TEST(out.duplicates == 0u);
  BOOST_TEST(out.held == 0u);
}

BOOST_AUTO_TEST_CASE(a_dropped_frame_is_sent_again_and_the_frames_behind_it_wait) {
  link_model data;
  data.drop_nth = [](std::size_t i) { return i == 0 || i == 7; };
  auto out = run(8, 100, data, {}, 2);
  BOOST_TEST(out.finished);
  BOOST_TEST(out.delivered == out.produced);
  BOOST_TEST(out.retransmitted >= 2u);
  BOOST_TEST(out.held >= 1u);
}

BOOST_AUTO_TEST_CASE(duplicated_frames_are_delivered_once) {
  link_model data;
  data.duplicate = 1;
  auto out = run(8, 200, data, {}, 3);
  BOOST_TEST(out.finished);
  BOOST_TEST(out.delivered == out.produced);
  BOOST_TEST(out.duplicates >= 200u);  // every frame came twice
}

BOOST_AUTO_TEST_CASE(a_lost_report_that_would_free_the_window_is_asked_for_again) {
  // every report until 200 ms is lost: the sender's window runs out and only a probe (or a
  // retransmission) makes the receiver report again
  link_model reports;
  reports.cut_from = 0ms;
  reports.cut_to = 200ms;
  auto out = run(4, 60, {}, reports, 4);
  BOOST_TEST(out.finished);
  BOOST_TEST(out.delivered == out.produced);
  BOOST_TEST(out.retransmitted + out.probes >= 1u);
}

BOOST_AUTO_TEST_CASE(random_drops_duplicates_reordering_delays_and_a_partition_lose_nothing) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    link_model data, reports;
    for (auto* m : {&data, &reports}) {
      m->drop = 0.1;
      m->duplicate = 0.1;
      m->reorder = 0.1;
      m->delay = 5ms;
      m->jitter = 15ms;
      m->cut_from = 300ms;
      m->cut_to = 1300ms;
    }
    const std::uint32_t window = 1 + seed % 8;
    auto out = run(window, 400, data, reports, seed);
    BOOST_TEST_CONTEXT("seed " << seed << ", window " << window) {
      BOOST_TEST(out.finished);
      BOOST_TEST(out.delivered == out.produced);
      BOOST_TEST(out.retransmitted > 0u);
      BOOST_TEST(out.duplicates > 0u);
      // the credit window bounds what the sender keeps: its batches and the signals between them
      BOOST_TEST(out.most_unacked <= window + window / 2 + 2);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_slow_link_raises_the_timeout_instead_of_sending_everything_again) {
  // 400 ms each way, twice the least timeout: without measuring the round trip every frame would
  // go out three times or more
  link_model slow;
  slow.delay = 400ms;
  auto out = run(8, 300, slow, slow, 5);
  BOOST_TEST_MESSAGE("retransmitted " << out.retransmitted << ", timeout " << out.rto.count()
                                      << " ms");
  BOOST_TEST(out.finished);
  BOOST_TEST(out.delivered == out.produced);
  BOOST_TEST(out.rto.count() >= 800);
  BOOST_TEST(out.retransmitted < 60u);  // the first window's frames, before the first sample
}

BOOST_AUTO_TEST_CASE(stale_and_impossible_reports_grant_nothing) {
  net::reliable_sender<int> s{4, {}};
  const time_point t{1s};
  for (std::uint64_t i = 0; i < 4; ++i) s.sent(i, int(i), true, false, t);
  auto none = [](std::uint64_t, const int&) { BOOST_FAIL("nothing to resend"); };
  BOOST_TEST(s.on_state({2, 2, false}, t, none) == 2u);
  BOOST_TEST(s.unacked() == 2u);
  BOOST_TEST(s.on_state({2, 2, false}, t, none) == 0u);  // a duplicate
  BOOST_TEST(s.on_state({1, 1, false}, t, none) == 0u);  // an older one, reordered
  BOOST_TEST(s.on_state({9, 9, false}, t, none) == 0u);  // acknowledges frames never sent
  BOOST_TEST(s.unacked() == 2u);
  BOOST_TEST(s.on_state({4, 4, false}, t, none) == 2u);
  BOOST_TEST(s.unacked() == 0u);
}
