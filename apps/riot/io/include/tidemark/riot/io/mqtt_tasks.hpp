// RIoTBench's MQTT publish and subscribe against a real broker (mosquitto), through libmosquitto,
// speaking MQTT 5. Each task owns one client with a network thread that reconnects with exponential
// backoff; an unreachable broker shows up as counted errors and connected() == false, never as a crash.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "tidemark/core/codec.hpp"
#include "tidemark/core/error.hpp"

namespace tidemark::riot::io {

/// Which broker to use and how to stay connected to it.
struct mqtt_broker {
  std::string host = "127.0.0.1";
  int port = 1883;
  std::string client_id;  ///< empty: the library makes a random one (as the originals' UUIDs)
  int keepalive_s = 30;
  /// How long a task's constructor waits for the first connection before it goes on unconnected.
  std::chrono::milliseconds connect_timeout{2000};
  /// Reconnect delays double from min to max after a lost or refused connection.
  unsigned reconnect_min_s = 1;
  unsigned reconnect_max_s = 30;
  /// A persistent session (MQTT 5 clean start off, kept `session_expiry_s` after a disconnect):
  /// the broker keeps the subscription and queues QoS 1 messages while the client is away, and
  /// redelivers those it delivered without an acknowledgement. Needs a non-empty client_id.
  bool persistent_session = false;
  std::uint32_t session_expiry_s = 86400;
};

/// The MQTT 5 user property that carries a message's stable id (see mqtt_publish::process).
inline constexpr const char* tidemark_id_property = "tidemark-id";

namespace detail {
class mqtt_client;
}

struct mqtt_publish_config {
  mqtt_broker broker;
  std::string topic;  ///< IO.MQTT_PUBLISH.TOPIC_NAME, e.g. "citydata"
  int qos = 0;        ///< the originals publish with QoS 0, not retained
  bool retain = false;
  /// How long a checkpoint of the publisher sink (mqtt_publish_sink) waits for the broker to
  /// acknowledge what was published before it.
  std::chrono::milliseconds flush_timeout{10000};
};

/// Publishes each payload to the configured topic.
class mqtt_publish {
 public:
  explicit mqtt_publish(mqtt_publish_config config);
  ~mqtt_publish();
  mqtt_publish(const mqtt_publish&) = delete;
  mqtt_publish& operator=(const mqtt_publish&) = delete;

  /// Hands `payload` to the client; false (counted in errors()) when there is no connection or
  /// the library refuses it. QoS 0 payloads are not kept for a later connection. A non-empty
  /// `id` travels as the user property "tidemark-id", so consumers can drop repeats.
  bool process(std::string_view payload, std::string_view id = {});

  /// Waits up to `limit` until the broker acknowledged every QoS > 0 message handed over so far
  /// (libmosquitto keeps them, also across reconnects, until then); returns how many are still
  /// unacknowledged, 0 when all are.
  std::uint64_t flush(std::chrono::milliseconds limit);

  bool connected() const;
  std::uint64_t published() const noexcept { return published_; }
  /// Failed publishes and failed connection attempts (thread-safe snapshot).
  error_sink errors() const;

 private:
  mqtt_publish_config config_;
  std::unique_ptr<detail::mqtt_client> client_;
  std::uint64_t published_ = 0;
};

/// One received message.
struct mqtt_message {
  std::string topic;
  std::string payload;
  std::string id;  ///< the "tidemark-id" user property; empty when the publisher set none
  TIDEMARK_FIELDS(topic, payload, id)
};

struct mqtt_subscribe_config {
  mqtt_broker broker;
  std::string topic;  ///< a topic filter; wildcards (+, #) allowed
  int qos = 0;
  std::size_t queue_capacity = 10000;  ///< when full, the oldest waiting message is dropped
};

/// Subscribes to a topic filter; the network thread puts messages into a bounded thread-safe
/// queue that poll() takes from. The subscription is renewed after every reconnect.
class mqtt_subscribe {
 public:
  /// Called on the client's network thread for each message; must not throw.
  using message_handler = std::function<void(mqtt_message)>;

  /// Waits up to broker.connect_timeout until the subscription is acknowledged.
  explicit mqtt_subscribe(mqtt_subscribe_config config);
  /// Hands each message to `handler` instead of the queue (poll() then finds nothing). With
  /// QoS 1 the broker gets the message's acknowledgement only after `handler` returned, so what
  /// the handler made durable is never lost to a crash of this process: a message whose handler
  /// did not finish is delivered again (to a persistent session, see mqtt_broker).
  mqtt_subscribe(mqtt_subscribe_config config, message_handler handler);
  ~mqtt_subscribe();
  mqtt_subscribe(const mqtt_subscribe&) = delete;
  mqtt_subscribe& operator=(const mqtt_subscribe&) = delete;

  /// The oldest waiting message, waiting up to `wait` for one; nullopt when none came.
  std::optional<mqtt_message> poll(std::chrono::milliseconds wait = std::chrono::milliseconds{0});

  /// Connected and subscribed.
  bool subscribed() const;
  /// Messages dropped because the queue was full.
  std::uint64_t dropped() const;
  error_sink errors() const;

 private:
  std::unique_ptr<detail::mqtt_client> client_;
};

}  // namespace tidemark::riot::io
