// The replayable MQTT source and the publisher's stable ids, against a real mosquitto broker: a
// restore emits exactly what followed the snapshot (from the log and from the persistent session),
// a SIGKILLed subscriber loses nothing it acknowledged, repeats of a tidemark-id are dropped, a
// restored publisher gives replayed messages the ids they had, and its checkpoint waits for the
// broker's acknowledgements.
#define BOOST_TEST_MODULE riot_mqtt_replay
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "../../support/mosquitto_broker.hpp"
#include "../../support/temp_dir.hpp"
#include "tidemark/core/state.hpp"
#include "tidemark/riot/io/mqtt_replay.hpp"

using namespace tidemark;
using namespace tidemark::riot::io;
using namespace std::chrono_literals;
using tidemark::test::broker_at;
using tidemark::test::eventually;
using tidemark::test::temp_dir;
using broker = tidemark::test::mosquitto_broker;

namespace {

mqtt_source_config source_config(int port, const temp_dir& dir) {
  mqtt_source_config c;
  c.subscription.broker = broker_at(port);
  c.subscription.broker.client_id = "replay-test";
  c.subscription.topic = "readings";
  c.log_dir = dir / "mqtt_log";
  return c;
}

instance_info instance(std::string name) {
  instance_info info;
  info.name = std::move(name);
  return info;
}

struct collecting_emitter final : emitter {
  std::vector<mqtt_message> got;
  void emit_watermark(event_time) override {}
  void emit_idle(bool) override {}
  void emit_on(std::uint32_t, batch_ptr b) override {
    for (auto& m : static_cast<batch<mqtt_message>&>(*b).values) got.push_back(m);
  }
};

// Pulls until `n` messages in all were emitted or 20 s passed.
std::vector<std::string> pull_payloads(mqtt_log_source& source, std::size_t n) {
  collecting_emitter out;
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (out.got.size() < n && std::chrono::steady_clock::now() < deadline)
    source.pull(n - out.got.size(), out);
  std::vector<std::string> payloads;
  for (const auto& m : out.got) payloads.push_back(m.payload);
  return payloads;
}

// Pulls for `d` and returns what came (to show that nothing more comes).
std::size_t pull_for(mqtt_log_source& source, std::chrono::milliseconds d) {
  collecting_emitter out;
  auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) source.pull(100, out);
  return out.got.size();
}

std::vector<std::string> numbered(const std::string& tag, int from, int to) {
  std::vector<std::string> xs;
  for (int i = from; i <= to; ++i) xs.push_back(tag + std::to_string(i));
  return xs;
}

std::vector<std::uint8_t> snapshot_of(source_logic& s, std::uint64_t checkpoint) {
  std::vector<std::uint8_t> bytes;
  state_writer w{checkpoint, bytes};
  s.snapshot(w);
  return bytes;
}

template <class Logic>
void restore_from(Logic& s, std::uint64_t checkpoint, const std::vector<std::uint8_t>& bytes) {
  state_reader r{checkpoint, bytes.data(), bytes.size()};
  s.restore(r);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_restored_source_emits_exactly_what_followed_the_snapshot) {
  broker mosquitto;
  temp_dir dir{"mqtt-replay"};
  const auto published = numbered("m", 1, 50);
  const std::size_t k = 12;

  auto first = std::make_unique<mqtt_log_source>(source_config(mosquitto.port(), dir), instance("src"));
  first->open();
  BOOST_REQUIRE(eventually([&] { return first->subscribed(); }, 5s));
  mqtt_publish publisher{{broker_at(mosquitto.port()), "readings", 1}};
  BOOST_REQUIRE(publisher.connected());
  for (int i = 0; i < 30; ++i) BOOST_REQUIRE(publisher.process(published[i]));
  BOOST_REQUIRE(eventually([&] { return first->logged() == 30; }, 10s));

  auto emitted = pull_payloads(*first, k);
  BOOST_TEST(emitted == std::vector<std::string>(published.begin(), published.begin() + k),
             boost::test_tools::per_element());
  auto bytes = snapshot_of(*first, 1);
  first.reset();  // the source goes away with 18 logged messages it never emitted

  // Published while no client is connected: the persistent session keeps them for the source.
  for (int i = 30; i < 50; ++i) BOOST_REQUIRE(publisher.process(published[i]));

  mqtt_log_source second{source_config(mosquitto.port(), dir), instance("src")};
  second.open();
  restore_from(second, 1, bytes);
  auto replayed = pull_payloads(second, published.size() - k);
  BOOST_TEST(replayed == std::vector<std::string>(published.begin() + k, published.end()),
             boost::test_tools::per_element());
  BOOST_TEST(pull_for(second, 300ms) == 0u);
  BOOST_TEST(second.logged() == 20u);  // the 20 the session held; the 18 came from the log
  BOOST_TEST(second.errors().count() == 0u);
}

BOOST_AUTO_TEST_CASE(a_killed_subscriber_loses_nothing_it_acknowledged) {
  broker mosquitto;
  temp_dir dir{"mqtt-replay"};
  const auto published = numbered("k", 1, 300);
  int ready[2];
  BOOST_REQUIRE(pipe(ready) == 0);
  pid_t child = fork();
  BOOST_REQUIRE(child >= 0);
  if (child == 0) {  // the subscriber that will be killed while messages stream in
    close(ready[0]);
    mqtt_log_source source{source_config(mosquitto.port(), dir), instance("src")};
    source.open();
    while (!source.subscribed()) std::this_thread::sleep_for(5ms);
    char c = 's';
    if (write(ready[1], &c, 1) != 1) _exit(2);
    while (source.logged() < 50) std::this_thread::sleep_for(1ms);
    c = 'l';
    if (write(ready[1], &c, 1) != 1) _exit(2);
    for (;;) std::this_thread::sleep_for(1s);
  }
  close(ready[1]);
  char c = 0;
  BOOST_REQUIRE(read(ready[0], &c, 1) == 1);  // subscribed
  mqtt_publish publisher{{broker_at(mosquitto.port()), "readings", 1}};
  BOOST_REQUIRE(publisher.connected());
  // Ids let the restarted source drop what the broker redelivers though the log has it.
  auto publish = [&](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i)
      BOOST_REQUIRE(publisher.process(published[i], "test/1/0/" + std::to_string(i)));
  };
  // half before the kill (the subscriber logs some or all of it), half after it: the broker keeps
  // those for the persistent session, however fast the subscriber was before it died
  const auto half = published.size() / 2;
  publish(0, half);
  BOOST_REQUIRE(read(ready[0], &c, 1) == 1);  // 50 logged
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  close(ready[0]);
  publish(half, published.size());

  mqtt_log_source restarted{source_config(mosquitto.port(), dir), instance("src")};
  restarted.open();  // not restored: emits from the oldest entry of the log
  auto got = pull_payloads(restarted, published.size());
  BOOST_TEST(pull_for(restarted, 300ms) == 0u);
  // As many as published and every one of them: each exactly once.
  BOOST_TEST(got.size() == published.size());
  BOOST_TEST(std::set<std::string>(got.begin(), got.end()) ==
             std::set<std::string>(published.begin(), published.end()));
  // The crash came mid-stream: part came from the dead subscriber's log, part from the broker.
  BOOST_TEST(restarted.logged() > 0u);
  BOOST_TEST(restarted.logged() < published.size());
}

BOOST_AUTO_TEST_CASE(a_repeated_tidemark_id_is_dropped_also_after_a_restart) {
  broker mosquitto;
  temp_dir dir{"mqtt-replay"};
  mqtt_publish publisher{{broker_at(mosquitto.port()), "readings", 1}};
  {
    mqtt_log_source source{source_config(mosquitto.port(), dir), instance("src")};
    source.open();
    BOOST_REQUIRE(eventually([&] { return source.subscribed(); }, 5s));
    BOOST_REQUIRE(publisher.process("x", "job/7/0/0"));
    BOOST_REQUIRE(publisher.process("x", "job/7/0/0"));  // as a restored publisher repeats it
    BOOST_REQUIRE(publisher.process("y", "job/7/0/1"));
    BOOST_REQUIRE(publisher.process("plain"));
    BOOST_REQUIRE(publisher.process("plain"));  // no id: nothing tells it from a new message
    BOOST_REQUIRE(eventually([&] { return source.logged() + source.duplicates() == 5; }, 10s));
    BOOST_TEST(source.duplicates() == 1u);
    BOOST_TEST(pull_payloads(source, 4) == (std::vector<std::string>{"x", "y", "plain", "plain"}),
               boost::test_tools::per_element());
  }
  mqtt_log_source source{source_config(mosquitto.port(), dir), instance("src")};
  source.open();
  BOOST_REQUIRE(eventually([&] { return source.subscribed(); }, 5s));
  BOOST_REQUIRE(publisher.process("y", "job/7/0/1"));  // the ids come back from the log
  BOOST_REQUIRE(publisher.process("z", "job/7/0/2"));
  BOOST_REQUIRE(eventually([&] { return source.logged() + source.duplicates() == 2; }, 10s));
  BOOST_TEST(source.duplicates() == 1u);
  // A fresh (not restored) source emits the whole log: the 4 kept before, then z.
  BOOST_TEST(pull_payloads(source, 5) == (std::vector<std::string>{"x", "y", "plain", "plain", "z"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(completed_checkpoints_trim_the_log_and_a_trimmed_position_is_refused) {
  broker mosquitto;
  temp_dir dir{"mqtt-replay"};
  auto config = source_config(mosquitto.port(), dir);
  config.retain = 1;
  mqtt_publish publisher{{broker_at(mosquitto.port()), "readings", 1}};
  std::vector<std::uint8_t> at_start;
  {
    mqtt_log_source source{config, instance("src")};
    source.open();
    BOOST_REQUIRE(eventually([&] { return source.subscribed(); }, 5s));
    for (const auto& p : numbered("t", 1, 10)) BOOST_REQUIRE(publisher.process(p));
    BOOST_REQUIRE(eventually([&] { return source.logged() == 10; }, 10s));
    at_start = snapshot_of(source, 1);
    BOOST_TEST(pull_payloads(source, 6).size() == 6u);
    snapshot_of(source, 2);
    source.on_checkpoint_complete(1);
    source.on_checkpoint_complete(2);  // retain 1: entries before position 7 go
  }
  {
    mqtt_log_source stale{config, instance("src")};
    stale.open();
    BOOST_CHECK_THROW(restore_from(stale, 1, at_start), job_error);
  }
  mqtt_log_source fresh{config, instance("src")};
  fresh.open();  // not restored: the oldest entry left is t7
  BOOST_TEST(pull_payloads(fresh, 4) == numbered("t", 7, 10), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_restored_publisher_gives_replayed_messages_the_same_ids) {
  broker mosquitto;
  mqtt_subscribe consumer{{broker_at(mosquitto.port()), "out", 1, 1000}};
  BOOST_REQUIRE(consumer.subscribed());
  mqtt_publish_config config{broker_at(mosquitto.port()), "out", 1};
  auto feed = [](operator_logic& sink, const std::vector<std::string>& xs) {
    auto b = std::make_unique<batch<std::string>>();
    b->values = xs;
    collecting_emitter none;
    sink.process(0, std::move(b), none);
  };
  auto receive = [&](std::size_t n) {
    std::vector<mqtt_message> got;
    while (got.size() < n) {
      auto m = consumer.poll(5s);
      if (!m) break;
      got.push_back(*m);
    }
    return got;
  };

  std::vector<std::uint8_t> bytes;
  std::vector<mqtt_message> before;
  {
    mqtt_publish_sink sink{config, instance("publish")};
    BOOST_REQUIRE(eventually([&] { return sink.task().connected(); }, 5s));
    feed(sink, numbered("p", 1, 5));
    state_writer w{3, bytes};
    sink.snapshot(w);
    feed(sink, numbered("p", 6, 10));
    before = receive(10);
  }
  BOOST_REQUIRE(before.size() == 10u);
  std::set<std::string> distinct;
  for (const auto& m : before) distinct.insert(m.id);
  BOOST_TEST(distinct.size() == 10u);
  BOOST_TEST(!distinct.count(""));

  mqtt_publish_sink restored{config, instance("publish")};
  BOOST_REQUIRE(eventually([&] { return restored.task().connected(); }, 5s));
  restore_from(restored, 3, bytes);
  feed(restored, numbered("p", 6, 10));  // the replay after checkpoint 3
  auto after = receive(5);
  BOOST_REQUIRE(after.size() == 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    BOOST_TEST(after[i].payload == before[5 + i].payload);
    BOOST_TEST(after[i].id == before[5 + i].id);
  }

  // A job that starts afresh numbers a new run: its ids never collide with the old run's.
  mqtt_publish_sink fresh{config, instance("publish")};
  BOOST_REQUIRE(eventually([&] { return fresh.task().connected(); }, 5s));
  feed(fresh, {"p1"});
  auto again = receive(1);
  BOOST_REQUIRE(again.size() == 1u);
  BOOST_TEST(again[0].id != before[0].id);
}

BOOST_AUTO_TEST_CASE(a_publisher_checkpoint_waits_for_the_brokers_acknowledgements) {
  broker mosquitto;
  mqtt_publish_config config{broker_at(mosquitto.port()), "out", 1};
  config.flush_timeout = 2s;
  mqtt_publish_sink sink{config, instance("publish")};
  BOOST_REQUIRE(eventually([&] { return sink.task().connected(); }, 5s));
  auto feed = [&](std::string x) {
    auto b = std::make_unique<batch<std::string>>();
    b->values.push_back(std::move(x));
    collecting_emitter none;
    sink.process(0, std::move(b), none);
  };
  std::vector<std::uint8_t> bytes;
  feed("acknowledged");
  state_writer first{1, bytes};
  BOOST_CHECK_NO_THROW(sink.snapshot(first));

  mosquitto.stop();
  BOOST_REQUIRE(eventually([&] { return !sink.task().connected(); }, 5s));
  feed("kept by the client");  // QoS 1: libmosquitto keeps it for the next connection
  state_writer second{2, bytes};
  BOOST_CHECK_THROW(sink.snapshot(second), job_error);  // it would be lost if this completed

  mosquitto.start();  // the client reconnects and sends it; now the checkpoint can complete
  state_writer third{3, bytes};
  BOOST_CHECK_NO_THROW(sink.snapshot(third));
}
