// libmosquitto behind the MQTT tasks: one client per task with a network thread of its own that
// serves the socket and reconnects with exponential backoff. Callbacks run on that thread, so
// everything they touch is guarded by the client's mutex. Not the library's thread
// (mosquitto_loop_start): libmosquitto 2.0.11 loses a disconnect that comes while its thread
// reconnects, and mosquitto_loop_stop then waits for ever (eclipse-mosquitto issue 2545); the
// riot-apps bench hung so at the end of a run. Our thread stops when told, whatever the
// connection does.
//
// Nor mosquitto_loop: it wakes once per queued packet (a publish writes a byte to the library's
// wake-up pipe and mosquitto_loop reads one byte per turn), so each message cost the network
// thread a select, a read and a write of its own, besides the publisher's write to the pipe. The
// thread polls the socket and an eventfd that a publish signals only while no wake-up is pending,
// and writes everything queued at each wake-up: a batch of messages costs one wake-up.
#include "tidemark/riot/io/mqtt_tasks.hpp"

#include <mosquitto.h>
#include <mqtt_protocol.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>

namespace tidemark::riot::io {

namespace detail {

namespace {
// The text of the current errno (thread-safe, unlike strerror).
std::string errno_text() { return std::error_code{errno, std::generic_category()}.message(); }
}  // namespace

class mqtt_client {
 public:
  /// Called on the network thread for each message, before libmosquitto acknowledges it (QoS 1:
  /// the PUBACK is queued for that same thread, so it cannot leave before the handler returns).
  using message_handler = mqtt_subscribe::message_handler;

  /// Connects to `broker`; when `subscription` is non-empty, subscribes to it on every connect
  /// and hands what arrives to `handler`, or, without one, queues it (up to `capacity` messages).
  mqtt_client(const mqtt_broker& broker, std::string subscription, int qos, std::size_t capacity,
              message_handler handler = {})
      : endpoint_(broker.host + ":" + std::to_string(broker.port)),
        subscription_(std::move(subscription)),
        qos_(qos),
        capacity_(capacity),
        handler_(std::move(handler)) {
    static std::once_flag init;
    std::call_once(init, [] { mosquitto_lib_init(); });
    if (broker.persistent_session && broker.client_id.empty())
      throw std::invalid_argument("MQTT client for " + endpoint_ +
                                  ": a persistent session needs a stable client_id");
    mosq_ = mosquitto_new(broker.client_id.empty() ? nullptr : broker.client_id.c_str(),
                          !broker.persistent_session, this);
    if (!mosq_) throw std::runtime_error("MQTT client for " + endpoint_ + ": cannot create a client");
    // MQTT 5 for user properties (the tidemark-id of a message) and session expiry.
    mosquitto_int_option(mosq_, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5);
    mosquitto_connect_callback_set(mosq_, &on_connect);
    mosquitto_disconnect_callback_set(mosq_, &on_disconnect);
    mosquitto_subscribe_callback_set(mosq_, &on_subscribe);
    mosquitto_message_v5_callback_set(mosq_, &on_message);
    mosquitto_publish_callback_set(mosq_, &on_publish);
    mosquitto_threaded_set(mosq_, true);  // other threads publish while network_loop runs
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) {
      mosquitto_destroy(mosq_);
      throw std::runtime_error("MQTT client for " + endpoint_ +
                               ": cannot create its wake-up eventfd: " + errno_text());
    }
    if (int rc = connect(broker); rc != MOSQ_ERR_SUCCESS)
      connection_failed(rc == MOSQ_ERR_ERRNO ? errno_text() : mosquitto_strerror(rc));
    try {
      network_ = std::thread{[this, min = broker.reconnect_min_s, max = broker.reconnect_max_s] {
        network_loop(std::chrono::seconds{std::max(1u, min)},
                     std::chrono::seconds{std::max(min, max)});
      }};
    } catch (const std::system_error& e) {
      mosquitto_destroy(mosq_);
      ::close(wake_fd_);
      throw std::runtime_error("MQTT client for " + endpoint_ +
                               ": cannot start its network thread: " + e.what());
    }
    std::unique_lock<std::mutex> lock{mutex_};
    ready_.wait_for(lock, broker.connect_timeout, [this] { return ready(); });
    if (!ready())
      errors_.report({"MQTT broker " + endpoint_ + " unreachable within " +
                      std::to_string(broker.connect_timeout.count()) + " ms" +
                      (last_failure_.empty() ? "" : " (" + last_failure_ + ")") + "; retrying in the background"});
  }

  ~mqtt_client() {
    {
      std::lock_guard<std::mutex> lock{mutex_};
      stopping_ = true;
    }
    stop_.notify_all();
    wake();
    network_.join();  // it sends our DISCONNECT, if connected, on its way out
    mosquitto_destroy(mosq_);
    ::close(wake_fd_);
  }

  const std::string& endpoint() const noexcept { return endpoint_; }

  /// Publishes, with user property tidemark-id = `id` when `id` is not empty; on failure counts
  /// an error naming the topic and returns false.
  bool publish(const std::string& topic, std::string_view payload, int qos, bool retain,
               std::string_view id) {
    mosquitto_property* props = nullptr;
    if (!id.empty())
      mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, tidemark_id_property,
                                         std::string{id}.c_str());
    int rc = mosquitto_publish_v5(mosq_, nullptr, topic.c_str(), static_cast<int>(payload.size()),
                                  payload.data(), qos, retain, props);
    mosquitto_property_free_all(&props);
    if (rc == MOSQ_ERR_SUCCESS && !write_wanted_.exchange(true)) wake();
    std::lock_guard<std::mutex> lock{mutex_};
    // libmosquitto queues a QoS > 0 message before it tries to send it, and sends it after a
    // reconnect when there is no connection now: that one, too, awaits an acknowledgement.
    if (qos > 0 && (rc == MOSQ_ERR_SUCCESS || rc == MOSQ_ERR_NO_CONN)) ++unacknowledged_;
    if (rc == MOSQ_ERR_SUCCESS) return true;
    std::string why = rc == MOSQ_ERR_NO_CONN ? "not connected to the broker" : mosquitto_strerror(rc);
    if (rc == MOSQ_ERR_NO_CONN && !last_failure_.empty()) why += " (last attempt: " + last_failure_ + ")";
    errors_.report({"MQTT publish to topic '" + topic + "' at " + endpoint_ + " failed: " + why});
    return false;
  }

  /// Waits up to `limit` until the broker acknowledged every QoS > 0 publish; the number still
  /// unacknowledged (0: all are).
  std::uint64_t flush(std::chrono::milliseconds limit) {
    std::unique_lock<std::mutex> lock{mutex_};
    acknowledged_.wait_for(lock, limit, [this] { return unacknowledged_ <= 0; });
    return static_cast<std::uint64_t>(std::max<std::int64_t>(unacknowledged_, 0));
  }

  std::optional<mqtt_message> poll(std::chrono::milliseconds wait) {
    std::unique_lock<std::mutex> lock{mutex_};
    if (!arrived_.wait_for(lock, wait, [this] { return !queue_.empty(); })) return std::nullopt;
    auto m = std::move(queue_.front());
    queue_.pop_front();
    return m;
  }

  bool ready() const {  // callers hold mutex_ or call ready_now()
    return connected_ && (subscription_.empty() || subscribed_);
  }
  bool ready_now() const {
    std::lock_guard<std::mutex> lock{mutex_};
    return ready();
  }
  std::uint64_t dropped() const {
    std::lock_guard<std::mutex> lock{mutex_};
    return dropped_;
  }
  error_sink errors() const { return errors_; }  // a shared, thread-safe handle

 private:
  static mqtt_client& self(void* obj) { return *static_cast<mqtt_client*>(obj); }

  // A persistent session must say how long the broker keeps it: under MQTT 5 a session without
  // an expiry interval ends with the connection. libmosquitto keeps the CONNECT properties for
  // its reconnects. Only the non-blocking connect takes no properties, so a persistent client
  // connects synchronously (its network thread retries a failed first attempt all the same).
  int connect(const mqtt_broker& broker) {
    if (!broker.persistent_session)
      return mosquitto_connect_async(mosq_, broker.host.c_str(), broker.port, broker.keepalive_s);
    mosquitto_property* props = nullptr;
    mosquitto_property_add_int32(&props, MQTT_PROP_SESSION_EXPIRY_INTERVAL, broker.session_expiry_s);
    int rc = mosquitto_connect_bind_v5(mosq_, broker.host.c_str(), broker.port, broker.keepalive_s,
                                       nullptr, props);
    mosquitto_property_free_all(&props);
    return rc;
  }

  // The tidemark-id user property, or "" when the message has none.
  static std::string tidemark_id(const mosquitto_property* props) {
    std::string id;
    char* name = nullptr;
    char* value = nullptr;
    for (auto* p = mosquitto_property_read_string_pair(props, MQTT_PROP_USER_PROPERTY, &name, &value, false);
         p; p = mosquitto_property_read_string_pair(p, MQTT_PROP_USER_PROPERTY, &name, &value, true)) {
      if (id.empty() && std::string_view{name} == tidemark_id_property) id = value;
      std::free(name);
      std::free(value);
      name = value = nullptr;
    }
    return id;
  }

  /// The network thread: serve() until the destructor says stop (it wakes at least every 100 ms
  /// to look); after a lost or failed connection it waits `delay`, doubling from `min` to `max`
  /// while attempts fail, and reconnects without blocking.
  void network_loop(std::chrono::seconds min, std::chrono::seconds max) {
    auto delay = min;
    std::unique_lock<std::mutex> lock{mutex_};
    while (!stopping_) {
      lock.unlock();
      const int rc = serve(100);
      lock.lock();
      if (rc == MOSQ_ERR_SUCCESS) {
        if (connected_) delay = min;
        continue;
      }
      if (stop_.wait_for(lock, delay, [this] { return stopping_; })) break;
      delay = std::min(delay * 2, max);
      lock.unlock();
      if (int r = mosquitto_reconnect_async(mosq_); r != MOSQ_ERR_SUCCESS)
        connection_failed(r == MOSQ_ERR_ERRNO ? errno_text() : mosquitto_strerror(r));
      lock.lock();
    }
    lock.unlock();
    // a last DISCONNECT, written here, where the socket is this thread's
    if (mosquitto_disconnect(mosq_) == MOSQ_ERR_SUCCESS)
      for (int i = 0; i < 10 && serve(10) == MOSQ_ERR_SUCCESS; ++i) {
      }
  }

  /// One turn of the network loop, as mosquitto_loop takes it but woken by wake_fd_: waits up to
  /// `timeout_ms` for the socket or a wake-up, reads what arrived, writes what is queued and
  /// keeps the connection alive. libmosquitto's result (MOSQ_ERR_NO_CONN without a connection).
  int serve(int timeout_ms) {
    const int sock = mosquitto_socket(mosq_);
    if (sock < 0) return MOSQ_ERR_NO_CONN;
    pollfd fds[2] = {
        {sock, static_cast<short>(POLLIN | (mosquitto_want_write(mosq_) ? POLLOUT : 0)), 0},
        {wake_fd_, POLLIN, 0}};
    if (::poll(fds, 2, timeout_ms) < 0) return errno == EINTR ? MOSQ_ERR_SUCCESS : MOSQ_ERR_ERRNO;
    const bool woken = fds[1].revents & POLLIN;
    if (woken) {
      std::uint64_t n;
      [[maybe_unused]] auto r = ::read(wake_fd_, &n, sizeof n);
      write_wanted_ = false;  // before the write below: a later publish wakes us again
    }
    if (fds[0].revents & (POLLIN | POLLERR | POLLHUP)) {
      const int rc = mosquitto_loop_read(mosq_, 1);
      if (rc != MOSQ_ERR_SUCCESS || mosquitto_socket(mosq_) < 0) return rc;
    }
    if ((fds[0].revents & POLLOUT) || woken) {
      const int rc = mosquitto_loop_write(mosq_, 1);
      if (rc != MOSQ_ERR_SUCCESS || mosquitto_socket(mosq_) < 0) return rc;
    }
    return mosquitto_loop_misc(mosq_);
  }

  void wake() {
    const std::uint64_t one = 1;
    [[maybe_unused]] auto r =
        ::write(wake_fd_, &one, sizeof one);  // fails only when it is full: awake anyway
  }

  // Called with mutex_ not held.
  void connection_failed(const std::string& why) {
    std::lock_guard<std::mutex> lock{mutex_};
    last_failure_ = why;
    errors_.report({"MQTT connection to " + endpoint_ + " failed: " + why});
  }

  static void on_connect(mosquitto* mosq, void* obj, int rc) {
    auto& c = self(obj);
    if (rc != 0) {
      c.connection_failed(mosquitto_reason_string(rc));  // MQTT 5 reason codes
      return;
    }
    {
      std::lock_guard<std::mutex> lock{c.mutex_};
      c.connected_ = true;
      c.subscribed_ = false;
    }
    if (!c.subscription_.empty()) {
      if (int s = mosquitto_subscribe(mosq, nullptr, c.subscription_.c_str(), c.qos_); s != MOSQ_ERR_SUCCESS)
        c.connection_failed("subscribing to '" + c.subscription_ + "': " + mosquitto_strerror(s));
    }
    c.ready_.notify_all();
  }

  static void on_disconnect(mosquitto*, void* obj, int rc) {
    auto& c = self(obj);
    {
      std::lock_guard<std::mutex> lock{c.mutex_};
      c.connected_ = false;
      c.subscribed_ = false;
    }
    // rc 0 is our own disconnect; anything else is a lost or refused connection.
    if (rc != 0) c.connection_failed(rc == MOSQ_ERR_ERRNO ? errno_text() : mosquitto_strerror(rc));
  }

  static void on_subscribe(mosquitto*, void* obj, int, int, const int*) {
    auto& c = self(obj);
    {
      std::lock_guard<std::mutex> lock{c.mutex_};
      c.subscribed_ = true;
    }
    c.ready_.notify_all();
  }

  // A publish was sent (QoS 0) or acknowledged (QoS > 0). A client publishes at its one QoS;
  // the acknowledgement can come before publish() counted the message, so the count may dip
  // below zero for a moment.
  static void on_publish(mosquitto*, void* obj, int) {
    auto& c = self(obj);
    {
      std::lock_guard<std::mutex> lock{c.mutex_};
      if (c.qos_ > 0) --c.unacknowledged_;
    }
    c.acknowledged_.notify_all();
  }

  static void on_message(mosquitto*, void* obj, const mosquitto_message* m,
                         const mosquitto_property* props) {
    auto& c = self(obj);
    mqtt_message message{m->topic,
                         std::string{static_cast<const char*>(m->payload), static_cast<std::size_t>(m->payloadlen)},
                         tidemark_id(props)};
    if (c.handler_) {
      c.handler_(std::move(message));  // must not throw: it runs inside libmosquitto
      return;
    }
    {
      std::lock_guard<std::mutex> lock{c.mutex_};
      if (c.queue_.size() >= c.capacity_) {
        c.queue_.pop_front();
        ++c.dropped_;
      }
      c.queue_.push_back(std::move(message));
    }
    c.arrived_.notify_one();
  }

  std::string endpoint_;
  std::string subscription_;
  int qos_;
  std::size_t capacity_;
  message_handler handler_;
  mosquitto* mosq_ = nullptr;
  int wake_fd_ = -1;                       ///< eventfd: queued packets to write, or stop
  std::atomic<bool> write_wanted_{false};  ///< wake_fd_ was signalled and not yet served

  mutable std::mutex mutex_;
  bool stopping_ = false;  ///< the destructor runs: the network thread ends
  std::condition_variable stop_;
  std::thread network_;  ///< network_loop: started in the constructor's body, joined first
  std::condition_variable ready_;
  std::condition_variable arrived_;
  std::condition_variable acknowledged_;
  std::int64_t unacknowledged_ = 0;
  bool connected_ = false;
  bool subscribed_ = false;
  std::string last_failure_;
  const error_sink errors_;
  std::deque<mqtt_message> queue_;
  std::uint64_t dropped_ = 0;
};

}  // namespace detail

// ---- mqtt_publish ----

namespace {
mqtt_publish_config validated(mqtt_publish_config config) {
  if (config.topic.empty()) throw std::invalid_argument("mqtt_publish: topic must not be empty");
  return config;
}
}  // namespace

mqtt_publish::mqtt_publish(mqtt_publish_config config)
    : config_(validated(std::move(config))),
      client_(std::make_unique<detail::mqtt_client>(config_.broker, "", config_.qos, 0)) {}

mqtt_publish::~mqtt_publish() = default;

bool mqtt_publish::process(std::string_view payload, std::string_view id) {
  bool ok = client_->publish(config_.topic, payload, config_.qos, config_.retain, id);
  published_ += ok;
  return ok;
}

std::uint64_t mqtt_publish::flush(std::chrono::milliseconds limit) { return client_->flush(limit); }

bool mqtt_publish::connected() const { return client_->ready_now(); }
error_sink mqtt_publish::errors() const { return client_->errors(); }

// ---- mqtt_subscribe ----

namespace {
std::unique_ptr<detail::mqtt_client> make_subscriber(const mqtt_subscribe_config& config,
                                                     mqtt_subscribe::message_handler handler) {
  if (config.topic.empty()) throw std::invalid_argument("mqtt_subscribe: topic must not be empty");
  if (config.queue_capacity == 0) throw std::invalid_argument("mqtt_subscribe: queue_capacity must be > 0");
  return std::make_unique<detail::mqtt_client>(config.broker, config.topic, config.qos, config.queue_capacity,
                                               std::move(handler));
}
}  // namespace

mqtt_subscribe::mqtt_subscribe(mqtt_subscribe_config config) : client_(make_subscriber(config, {})) {}
mqtt_subscribe::mqtt_subscribe(mqtt_subscribe_config config, message_handler handler)
    : client_(make_subscriber(config, std::move(handler))) {}
mqtt_subscribe::~mqtt_subscribe() = default;

std::optional<mqtt_message> mqtt_subscribe::poll(std::chrono::milliseconds wait) {
  return client_->poll(wait);
}
bool mqtt_subscribe::subscribed() const { return client_->ready_now(); }
std::uint64_t mqtt_subscribe::dropped() const { return client_->dropped(); }
error_sink mqtt_subscribe::errors() const { return client_->errors(); }

}  // namespace tidemark::riot::io
