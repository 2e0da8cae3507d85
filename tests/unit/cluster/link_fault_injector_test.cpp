// Injected link faults in a node's I/O thread (net/link_fault_injector.hpp), without sockets:
// what leaves when, for drops, duplicates, holding back, delays and partitions, and that the same
// seed makes the same draws.
#define BOOST_TEST_MODULE link fault injector
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "net/link_fault_injector.hpp"

using namespace tidemark;
using namespace std::chrono_literals;
using time_point = std::chrono::steady_clock::time_point;

namespace {

const time_point t0{std::chrono::seconds{1}};

zmq::message_t frame(int i) { return zmq::message_t{std::to_string(i)}; }

/// What flush() hands out at `now`, as "peer:payload".
std::vector<std::string> flushed(net::link_fault_injector& f, time_point now) {
  std::vector<std::string> out;
  f.flush(now, [&](std::uint32_t peer, zmq::message_t&& m) {
    out.push_back(std::to_string(peer) + ":" + m.to_string());
  });
  return out;
}

fault_command on_link(const std::string& peer, link_faults l, std::uint64_t seed = 1) {
  fault_command cmd;
  cmd.links[peer] = l;
  cmd.seed = seed;
  return cmd;
}

}  // namespace

BOOST_AUTO_TEST_CASE(without_faults_frames_leave_at_once_in_order) {
  net::link_fault_injector f;
  for (int i = 0; i < 3; ++i) f.send(1, "n2", frame(i), t0);
  BOOST_TEST(flushed(f, t0) == (std::vector<std::string>{"1:0", "1:1", "1:2"}));
  BOOST_TEST(!f.next_due());
}

BOOST_AUTO_TEST_CASE(a_link_drops_and_duplicates_only_its_own_frames) {
  net::link_fault_injector f;
  link_faults l;
  l.drop = 1;
  f.set(on_link("n2", l));
  f.send(1, "n2", frame(1), t0);
  f.send(2, "n3", frame(2), t0);
  BOOST_TEST(flushed(f, t0) == (std::vector<std::string>{"2:2"}));
  BOOST_TEST(f.dropped() == 1u);
  l = {};
  l.duplicate = 1;
  f.set(on_link("*", l));
  f.send(1, "n2", frame(3), t0);
  BOOST_TEST(flushed(f, t0) == (std::vector<std::string>{"1:3", "1:3"}));
  BOOST_TEST(f.duplicated() == 1u);
}

BOOST_AUTO_TEST_CASE(delayed_frames_wait_in_the_queue_and_a_held_frame_leaves_after_the_next) {
  net::link_fault_injector f;
  link_faults l;
  l.delay = 10ms;
  f.set(on_link("*", l));
  f.send(1, "n2", frame(1), t0);
  BOOST_TEST(flushed(f, t0 + 9ms).empty());
  BOOST_TEST((*f.next_due() == t0 + 10ms));
  BOOST_TEST(flushed(f, t0 + 10ms) == (std::vector<std::string>{"1:1"}));

  l = {};
  l.reorder = 1;  // every frame would be held, but one at a time: the next one passes it
  f.set(on_link("*", l));
  f.send(1, "n2", frame(1), t0);
  f.send(1, "n2", frame(2), t0);
  BOOST_TEST(flushed(f, t0) == (std::vector<std::string>{"1:2", "1:1"}));
  f.send(1, "n2", frame(3), t0);  // nothing follows: it leaves after the hold limit
  BOOST_TEST(flushed(f, t0 + 1ms).empty());
  BOOST_TEST(flushed(f, t0 + 1s) == (std::vector<std::string>{"1:3"}));
  BOOST_TEST(f.reordered() == 3u);
}

BOOST_AUTO_TEST_CASE(a_partition_drops_everything_to_the_cut_off_node_until_healed) {
  net::link_fault_injector f;
  fault_command cmd;
  cmd.unreachable = {"n2", "coordinator"};
  f.set(cmd);
  BOOST_TEST(f.unreachable("coordinator"));
  BOOST_TEST(!f.unreachable("n3"));
  f.send(1, "n2", frame(1), t0);
  f.send(2, "n3", frame(2), t0);
  BOOST_TEST(flushed(f, t0) == (std::vector<std::string>{"2:2"}));
  f.set({});
  f.send(1, "n2", frame(3), t0);
  BOOST_TEST(flushed(f, t0) == (std::vector<std::string>{"1:3"}));
  BOOST_TEST(f.dropped() == 1u);
}

BOOST_AUTO_TEST_CASE(the_same_seed_makes_the_same_draws) {
  auto run = [](std::uint64_t seed) {
    net::link_fault_injector f;
    link_faults l;
    l.drop = 0.3;
    l.duplicate = 0.3;
    l.jitter = 20ms;
    f.set(on_link("*", l, seed));
    for (int i = 0; i < 200; ++i) f.send(1, "n2", frame(i), t0);
    return flushed(f, t0 + 1s);
  };
  BOOST_TEST(run(7) == run(7));
  BOOST_TEST(run(7) != run(8));
}
