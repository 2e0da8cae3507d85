// MQTT publish/subscribe through a real mosquitto broker that the test starts on a free loopback
// port: a round trip of CITY SenML lines, reconnection after the broker restarts, and the counted
// errors of an unreachable broker.
#define BOOST_TEST_MODULE riot_mqtt_tasks
#include <boost/test/unit_test.hpp>

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
