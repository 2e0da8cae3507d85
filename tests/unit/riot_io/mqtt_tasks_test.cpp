// MQTT publish/subscribe through a real mosquitto broker that the test starts on a free loopback
// port: a round trip of CITY SenML lines, a burst that outruns libmosquitto's wake-up pipe,
// reconnection after the broker restarts, a client that
// ends at once while it reconnects, the counted errors of an unreachable broker, and a broker that
// loses its port to another process.
#define BOOST_TEST_MODULE riot_mqtt_tasks
#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../../support/mosquitto_broker.hpp"
#include "sample_data.hpp"
#include "tidemark/riot/io/mqtt_tasks.hpp"

using namespace tidemark::riot::io;
using namespace std::chrono_literals;
using tidemark::test::broker_at;
using tidemark::test::eventually;
using tidemark::test::free_port;
using broker = tidemark::test::mosquitto_broker;

namespace {

/// Sockets of this host in SYN-SENT towards loopback port `port` (/proc/net/tcp).
int connecting_sockets(int port) {
  std::ifstream tcp{"/proc/net/tcp"};
  char remote[32];
  std::snprintf(remote, sizeof remote, "0100007F:%04X", port);
  int n = 0;
  for (std::string line; std::getline(tcp, line);) {
    std::istringstream fields{line};
    std::string slot, local, rem, state;
    fields >> slot >> local >> rem >> state;
    n += rem == remote && state == "02";
  }
  return n;
}

}  // namespace

BOOST_AUTO_TEST_CASE(city_lines_make_the_round_trip_in_order) {
  broker mosquitto;
  mqtt_subscribe subscriber{{broker_at(mosquitto.port()), "citydata"}};
  BOOST_REQUIRE(subscriber.subscribed());
  mqtt_publish publisher{{broker_at(mosquitto.port()), "citydata"}};
  BOOST_REQUIRE(publisher.connected());

  auto events = tidemark::test::city_events(20);
  for (const auto& e : events) BOOST_TEST(publisher.process(e.line));
  BOOST_TEST(publisher.published() == 20u);
  for (const auto& e : events) {
    auto m = subscriber.poll(5s);
    BOOST_REQUIRE(m.has_value());
    BOOST_TEST(m->topic == "citydata");
    BOOST_TEST(m->payload == e.line);
  }
  BOOST_TEST(!subscriber.poll(100ms).has_value());
  BOOST_TEST(publisher.errors().count() == 0u);
  BOOST_TEST(subscriber.errors().count() == 0u);
  BOOST_TEST(subscriber.dropped() == 0u);
}

// Each publish also writes a byte to libmosquitto's internal wake-up pipe, which our network
// thread does not read: after a few hundred bytes the pipe is full. A burst of 1,000 (QoS 1, so
// the broker keeps every one for the subscriber) must neither block the publisher nor lose one.
BOOST_AUTO_TEST_CASE(a_burst_past_the_wake_up_pipe_arrives_whole_and_in_order) {
  broker mosquitto;
  mqtt_subscribe subscriber{{broker_at(mosquitto.port()), "burst", 1}};
  BOOST_REQUIRE(subscriber.subscribed());
  mqtt_publish_config config{broker_at(mosquitto.port()), "burst"};
  config.qos = 1;
  mqtt_publish publisher{config};
  BOOST_REQUIRE(publisher.connected());

  constexpr int n = 1000;
  for (int i = 0; i < n; ++i) BOOST_REQUIRE(publisher.process("message " + std::to_string(i)));
  BOOST_TEST(publisher.flush(10s) == 0u);  // the broker acknowledged every one
  for (int i = 0; i < n; ++i) {
    auto m = subscriber.poll(5s);
    BOOST_REQUIRE_MESSAGE(m.has_value(), "message " << i << " of " << n << " did not arrive");
    BOOST_REQUIRE_EQUAL(m->payload, "message " + std::to_string(i));
  }
  BOOST_TEST(publisher.errors().count() == 0u);
  BOOST_TEST(subscriber.dropped() == 0u);
}

BOOST_AUTO_TEST_CASE(clients_reconnect_and_resubscribe_after_the_broker_restarts) {
  broker mosquitto;
  mqtt_subscribe subscriber{{broker_at(mosquitto.port()), "models/#"}};
  mqtt_publish publisher{{broker_at(mosquitto.port()), "models/TAXI"}};
  BOOST_REQUIRE(subscriber.subscribed() && publisher.connected());
  BOOST_TEST(publisher.process("TAXI-MLR-1000.model"));
  BOOST_TEST(subscriber.poll(5s).value().payload == "TAXI-MLR-1000.model");

  mosquitto.stop();
  BOOST_REQUIRE(eventually([&] { return !publisher.connected() && !subscriber.subscribed(); }, 5s));
  BOOST_TEST(!publisher.process("lost while down"));
  mosquitto.start();
  BOOST_REQUIRE(eventually([&] { return publisher.connected() && subscriber.subscribed(); }, 10s));
  BOOST_TEST(publisher.process("TAXI-DTC-2000.model"));
  auto m = subscriber.poll(5s);
  BOOST_REQUIRE(m.has_value());
  BOOST_TEST(m->topic == "models/TAXI");
  BOOST_TEST(m->payload == "TAXI-DTC-2000.model");
  BOOST_TEST(publisher.published() == 2u);
}

// A client ends when its owner is done with it, also while it reconnects: the riot-apps bench once
// hung for good in a sink's destructor, in libmosquitto's mosquitto_loop_stop, whose network
// thread loses a disconnect that comes while it reconnects (eclipse-mosquitto issue 2545). Here
// the broker goes away, and the client's next attempt hangs: the port then has a listener whose
// accept queue is full, so the connection is never made.
BOOST_AUTO_TEST_CASE(a_client_ends_at_once_while_it_reconnects) {
  broker mosquitto;
  const int port = mosquitto.port();
  auto publisher = std::make_unique<mqtt_publish>(mqtt_publish_config{broker_at(port), "citydata"});
  BOOST_REQUIRE(publisher->connected());
  mosquitto.stop();
  BOOST_REQUIRE(eventually([&] { return !publisher->connected(); }, 5s));

  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  BOOST_REQUIRE(listener >= 0);
  const int on = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  BOOST_REQUIRE(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  BOOST_REQUIRE(listen(listener, 0) == 0);
  // fill the accept queue: a connection not made within 200 ms had its SYN dropped, the queue is
  // full
  std::vector<int> queued;
  for (bool full = false; !full && queued.size() < 16;) {
    const int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    BOOST_REQUIRE(c >= 0);
    connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    pollfd made{c, POLLOUT, 0};
    full = poll(&made, 1, 200) == 0;
    queued.push_back(c);
  }
  BOOST_REQUIRE(connecting_sockets(port) == 1);  // the last one
  // the client's next attempt (after its 1 s backoff) is under way, and hangs
  BOOST_REQUIRE(eventually([&] { return connecting_sockets(port) > 1; }, 5s));

  // should the destructor hang, the test fails instead of waiting with it (and ctest's timeout
  // ends the process); the thread owns what it touches
  auto ended = std::make_shared<std::atomic<bool>>(false);
  std::thread{[ended, p = std::move(publisher)]() mutable {
    p.reset();
    *ended = true;
  }}.detach();
  BOOST_TEST(eventually([&] { return ended->load(); }, 5s));
  for (int c : queued) close(c);
  close(listener);
}

BOOST_AUTO_TEST_CASE(an_unreachable_broker_gives_counted_errors_not_a_crash) {
  const int port = free_port();
  const std::string endpoint = "127.0.0.1:" + std::to_string(port);
  auto b = broker_at(port);
  b.connect_timeout = 300ms;
  mqtt_publish publisher{{b, "citydata"}};
  BOOST_TEST(!publisher.connected());
  BOOST_TEST(!publisher.process("1422748800000,{}"));
  BOOST_TEST(!publisher.process("1422748801000,{}"));
  BOOST_TEST(publisher.published() == 0u);
  auto errors = publisher.errors();
  BOOST_TEST(errors.count() >= 3u);  // the failed connection, the timeout, two publishes
  BOOST_TEST(errors.last() == "MQTT publish to topic 'citydata' at " + endpoint +
                                  " failed: not connected to the broker (last attempt: Connection refused)");

  mqtt_subscribe subscriber{{b, "citydata"}};
  BOOST_TEST(!subscriber.subscribed());
  BOOST_TEST(!subscriber.poll(50ms).has_value());
  BOOST_TEST(subscriber.errors().count() >= 1u);
}

// Another process binds the port between the broker's check and mosquitto's own bind (concurrent
// tests can be handed the same free port): the broker must not report itself started (before, it
// trusted whoever answered on the port) but name the taken port, so callers can pick another.
BOOST_AUTO_TEST_CASE(a_broker_whose_port_another_process_holds_says_the_port_is_taken) {
  int holder = socket(AF_INET, SOCK_STREAM, 0);
  BOOST_REQUIRE(holder >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  BOOST_REQUIRE(bind(holder, reinterpret_cast<sockaddr*>(&addr), sizeof addr) ==
                0);  // bound, not listening
  socklen_t len = sizeof addr;
  BOOST_REQUIRE(getsockname(holder, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  const int port = ntohs(addr.sin_port);
  BOOST_TEST(!accepts_connections(port));  // so the check before the start passes
  try {
    broker b{"127.0.0.1", port};
    BOOST_ERROR("the broker claims port " << port << " that another socket holds");
  } catch (const port_taken& e) {
    BOOST_TEST(std::string{e.what()} == "cannot start mosquitto on 127.0.0.1:" +
                                            std::to_string(port) + ": the port is taken");
  }
  close(holder);
  broker free{"127.0.0.1", port};  // once released, the same port serves
  BOOST_TEST(accepts_connections(port));
}
