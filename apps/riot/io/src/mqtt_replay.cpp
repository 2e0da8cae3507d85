// The replayable MQTT source (a WiredTiger log written before each QoS 1 acknowledgement) and the
// publisher sink that numbers its messages so a replay repeats their ids.
#include "tidemark/riot/io/mqtt_replay.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <random>
#include <stdexcept>
#include <vector>

#include "tidemark/core/state.hpp"

namespace tidemark::riot::io {

namespace {

// Log keys: the sequence number, 8 bytes big-endian, so bytewise order is sequence order.
std::string seq_key(std::uint64_t seq) {
  std::string k(8, '\0');
  for (int i = 7; i >= 0; --i, seq >>= 8) k[static_cast<std::size_t>(i)] = static_cast<char>(seq & 0xff);
  return k;
}

std::uint64_t key_seq(std::string_view k) {
  std::uint64_t seq = 0;
  for (unsigned char c : k) seq = (seq << 8) | c;
  return seq;
}

std::string encode(const mqtt_message& m) {
  std::vector<std::uint8_t> bytes;
  byte_writer w{bytes};
  codec<mqtt_message>::encode(w, m);
  return {bytes.begin(), bytes.end()};
}

mqtt_message decode(std::string_view v) {
  byte_reader r{reinterpret_cast<const std::uint8_t*>(v.data()), v.size()};
  mqtt_message m;
  codec<mqtt_message>::decode(r, m);
  return m;
}

// Table names allow letters, digits, '_', '-' and '.'; a client id may hold anything else too.
std::string log_table(const std::string& client_id) {
  std::string name = "mqtt_log.";
  for (char c : client_id) name += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ? c : '_';
  return name;
}

mqtt_source_config validated(mqtt_source_config c) {
  if (c.subscription.broker.client_id.empty())
    throw std::invalid_argument("MQTT source on '" + c.subscription.topic +
                                "': set subscription.broker.client_id to a stable id; it names the "
                                "broker session and the source log that a restart resumes");
  if (c.log_dir.empty())
    throw std::invalid_argument("MQTT source on '" + c.subscription.topic +
                                "': set log_dir, the directory of the source log");
  if (c.retain == 0) throw std::invalid_argument("MQTT source: retain must be at least 1");
  c.subscription.qos = 1;
  c.subscription.broker.persistent_session = true;
  return c;
}

}  // namespace

// ---- mqtt_log_source ----

mqtt_log_source::mqtt_log_source(mqtt_source_config config, const instance_info& info)
    : config_(validated(std::move(config))),
      client_id_(config_.subscription.broker.client_id + "-" + std::to_string(info.index)),
      table_(log_table(client_id_)) {}

// The network thread writes through writer_: stop it before the members go.
mqtt_log_source::~mqtt_log_source() { client_.reset(); }

void mqtt_log_source::open() {
  conn_ = persistence::wt_connection::open_shared(config_.log_dir, "log=(enabled=true)");
  reader_.emplace(conn_, table_, persistence::durability::power_loss);
  {
    std::lock_guard<std::mutex> lock{mutex_};
    writer_.emplace(conn_, table_, persistence::durability::power_loss);
    bool first = true;
    reader_->scan("", std::nullopt, [&](std::string_view k, std::string_view v) {
      auto seq = key_seq(k);
      if (first) first_seq_ = seq;
      first = false;
      next_seq_ = seq + 1;
      auto m = decode(v);
      if (!m.id.empty()) {
        ids_.insert(m.id);
        id_order_.emplace_back(seq, std::move(m.id));
      }
      return true;
    });
  }
  next_emit_ = first_seq_;
  auto subscription = config_.subscription;
  subscription.broker.client_id = client_id_;
  client_ = std::make_unique<mqtt_subscribe>(subscription, [this](mqtt_message m) { append(std::move(m)); });
}

void mqtt_log_source::append(mqtt_message m) {
  {
    std::lock_guard<std::mutex> lock{mutex_};
    // After a failed write nothing more is logged and the job fails at the next pull.
    // libmosquitto acknowledges these messages all the same, so the failure says they are lost.
    if (write_failure_) return;
    if (!m.id.empty() && ids_.count(m.id)) {
      ++duplicates_;
      return;
    }
    try {
      writer_->insert(seq_key(next_seq_), encode(m));
    } catch (const std::exception& e) {
      write_failure_ = "MQTT source '" + client_id_ + "': cannot append to its log in '" +
                       config_.log_dir + "' (" + e.what() + "); the message on '" + m.topic +
                       "' and any after it were acknowledged to the broker and are lost";
      errors_.report({*write_failure_});
      return;
    }
    if (!m.id.empty()) {
      ids_.insert(m.id);
      id_order_.emplace_back(next_seq_, std::move(m.id));
    }
    ++next_seq_;
    ++logged_;
  }
  appended_.notify_one();
}

bool mqtt_log_source::pull(std::size_t max, emitter& out) {
  std::uint64_t end = 0;
  {
    std::unique_lock<std::mutex> lock{mutex_};
    // A pull must not hold the actor: wait at most 1 ms for a message.
    appended_.wait_for(lock, std::chrono::milliseconds{1},
                       [&] { return write_failure_ || next_emit_ < next_seq_; });
    if (write_failure_) throw job_error(*write_failure_);
    end = std::min<std::uint64_t>(next_seq_, next_emit_ + max);
  }
  if (end <= next_emit_) return true;
  auto b = std::make_unique<batch<mqtt_message>>();
  b->values.reserve(static_cast<std::size_t>(end - next_emit_));
  for (const auto& r : reader_->range(seq_key(next_emit_), seq_key(end))) {
    if (key_seq(r.key) != next_emit_)
      throw job_error("MQTT source '" + client_id_ + "': its log in '" + config_.log_dir +
                      "' lacks entry " + std::to_string(next_emit_));
    b->values.push_back(decode(r.value));
    ++next_emit_;
  }
  if (next_emit_ != end)
    throw job_error("MQTT source '" + client_id_ + "': its log in '" + config_.log_dir +
                    "' lacks entry " + std::to_string(next_emit_));
  out.emit(std::move(b));
  return true;
}

void mqtt_log_source::snapshot(state_writer& out) {
  out.write(next_emit_);
  positions_[out.checkpoint()] = next_emit_;
}

void mqtt_log_source::restore(state_reader& in) {
  const auto pos = in.read<std::uint64_t>();
  {
    std::lock_guard<std::mutex> lock{mutex_};
    if (pos < first_seq_ || pos > next_seq_)
      throw job_error("MQTT source '" + client_id_ + "': checkpoint " + std::to_string(in.checkpoint()) +
                      " continues at log entry " + std::to_string(pos) + ", but the log in '" +
                      config_.log_dir + "' holds entries " + std::to_string(first_seq_) + " to " +
                      std::to_string(next_seq_ - 1) +
                      "; restore from a retained checkpoint with the same log directory");
  }
  next_emit_ = pos;
  completed_.push_back(pos);  // a restored checkpoint is a completed one
}

void mqtt_log_source::on_checkpoint_complete(std::uint64_t id) {
  auto it = positions_.find(id);
  if (it == positions_.end()) return;
  completed_.push_back(it->second);
  positions_.erase(positions_.begin(), std::next(it));
  while (completed_.size() > config_.retain) completed_.pop_front();
  trim_below(completed_.front());
}

void mqtt_log_source::trim_below(std::uint64_t seq) {
  std::uint64_t from = 0;
  std::uint64_t to = 0;
  {
    std::lock_guard<std::mutex> lock{mutex_};
    from = first_seq_;
    to = std::min(seq, next_seq_ - 1);  // the newest entry numbers the next one after a restart
    if (to <= from) return;
    while (!id_order_.empty() && id_order_.front().first < to) {
      ids_.erase(id_order_.front().second);
      id_order_.pop_front();
    }
    first_seq_ = to;
  }
  // Not synced: entries a crash brings back are trimmed again by the next completion.
  persistence::wt_session session = conn_->open_session();
  auto cursor = session.open_cursor("table:" + table_);
  persistence::wt_transaction txn{session};
  for (auto s = from; s < to; ++s) {
    auto k = seq_key(s);
    cursor.set_key(k);
    cursor.remove();
  }
  txn.commit();
}

bool mqtt_log_source::subscribed() const { return client_ && client_->subscribed(); }

std::uint64_t mqtt_log_source::logged() const {
  std::lock_guard<std::mutex> lock{mutex_};
  return logged_;
}

std::uint64_t mqtt_log_source::duplicates() const {
  std::lock_guard<std::mutex> lock{mutex_};
  return duplicates_;
}

// ---- mqtt_publish_sink ----

mqtt_publish_sink::mqtt_publish_sink(mqtt_publish_config config, const instance_info& info)
    : flush_timeout_(config.flush_timeout),
      task_(std::move(config)),
      prefix_(info.name + "/"),
      instance_(info.index),
      run_(std::random_device{}()) {
  run_ = (run_ << 32) | std::random_device{}();
}

std::string mqtt_publish_sink::next_id() const {
  return prefix_ + std::to_string(run_) + "/" + std::to_string(instance_) + "/" + std::to_string(seq_);
}

void mqtt_publish_sink::process(std::size_t, batch_ptr in, emitter&) {
  for (const auto& payload : static_cast<batch<std::string>&>(*in).values) {
    auto id = next_id();
    ++seq_;  // counted whether or not the publish succeeds, so a replay numbers the same way
    guarded([&] { task_.process(payload, id); });
  }
}

void mqtt_publish_sink::add_metrics(std::map<std::string, double>& out) const {
  out["task_errors"] = static_cast<double>(task_.errors().count());
}

// What was published before the barrier must be at the broker before the checkpoint can
// complete: the replay starts after it, so a message still in the client would be lost.
void mqtt_publish_sink::snapshot(state_writer& out) {
  if (auto left = task_.flush(flush_timeout_); left > 0)
    throw job_error("MQTT publisher '" + prefix_.substr(0, prefix_.size() - 1) + "': " + std::to_string(left) +
                    " messages not acknowledged by the broker within " +
                    std::to_string(flush_timeout_.count()) + " ms, so checkpoint " +
                    std::to_string(out.checkpoint()) + " cannot complete" +
                    (task_.errors().count() ? " (" + task_.errors().last() + ")" : ""));
  out.write(run_);
  out.write(seq_);
}

void mqtt_publish_sink::restore(state_reader& in) {
  in.read(run_);
  in.read(seq_);
}

}  // namespace tidemark::riot::io
