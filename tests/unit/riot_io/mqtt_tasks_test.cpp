// MQTT publish/subscribe through a real mosquitto broker that the test starts on a free loopback
// port: a round trip of CITY SenML lines, reconnection after the broker restarts, and the counted
// errors of an unreachable broker, and a broker that loses its port to another process.
#define BOOST_TEST_MODULE riot_mqtt_tasks
#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

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
