// MQTT with checkpoints (docs/fault-tolerance.md, "MQTT"): a source that logs every message in a
// durable WiredTiger log before the broker gets its acknowledgement and emits from that log, so a
// restore replays it; and a publisher sink whose messages carry ids that a replay repeats.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>

#include "tidemark/core/operator.hpp"
#include "tidemark/persistence/table_store.hpp"
#include "tidemark/riot/io/mqtt_tasks.hpp"

namespace tidemark::riot::io {

struct mqtt_source_config {
  /// The broker and topic filter. The source always subscribes with QoS 1 in a persistent session
  /// under client id `<subscription.broker.client_id>-<instance>`, so broker.client_id must be
  /// set and stable across runs of the job (it names the session and the log).
  mqtt_subscribe_config subscription;
  /// Directory of the source log (a WiredTiger database, its own or shared with other sources of
  /// the process), e.g. `<data dir>/mqtt_log`. Table `mqtt_log.<client id>` per instance.
  std::string log_dir;
  /// How many completed checkpoints the job keeps (run_options::checkpoints.retain): the log
  /// keeps the entries from the oldest of them on, so any of them can be restored.
  std::size_t retain = 3;
};

/// One instance of the replayable MQTT source. Every message is appended to the log (synced:
/// survives kill -9 and power loss) on the client's network thread before libmosquitto
/// acknowledges it, so a message the broker counts as delivered is in the log. The source emits
/// from the log in sequence order; a checkpoint saves the next sequence number to emit and a
/// restore continues from it. A message whose tidemark-id is already in the log is dropped (the
/// broker redelivering, a publisher repeating after its own restore). Never ends.
class mqtt_log_source final : public source_logic {
 public:
  mqtt_log_source(mqtt_source_config config, const instance_info& info);
  ~mqtt_log_source() override;

  /// Opens the log and connects; the first pull emits from the oldest entry the log holds
  /// (unless restore moves it), so what an earlier run logged but never emitted is not lost.
  void open() override;
  bool pull(std::size_t max, emitter& out) override;

  bool replayable() const override { return true; }
  void snapshot(state_writer& out) override;
  /// Throws job_error when the log no longer holds the checkpoint's position (trimmed by a later
  /// checkpoint than the one restored, or another log directory).
  void restore(state_reader& in) override;
  /// Trims log entries (and their remembered ids) before the position of the oldest of the
  /// newest `retain` completed checkpoints; the newest entry always stays (it numbers the next).
  void on_checkpoint_complete(std::uint64_t id) override;

  const std::string& client_id() const noexcept { return client_id_; }
  /// Whether the client is connected and subscribed.
  bool subscribed() const;
  /// Messages appended to the log by this instance.
  std::uint64_t logged() const;
  /// Messages dropped because their tidemark-id was already in the log.
  std::uint64_t duplicates() const;
  /// Connection problems and failed log writes.
  error_sink errors() const { return errors_; }

 private:
  void append(mqtt_message m);  // on the network thread
  void trim_below(std::uint64_t seq);

  mqtt_source_config config_;
  std::string client_id_;
  std::string table_;
  std::shared_ptr<persistence::wt_connection> conn_;
  std::optional<persistence::table_store> reader_;  // the source's thread
  std::unique_ptr<mqtt_subscribe> client_;
  const error_sink errors_;

  // Shared with the network thread.
  mutable std::mutex mutex_;
  std::condition_variable appended_;
  std::optional<persistence::table_store> writer_;
  std::uint64_t first_seq_ = 1;  // oldest entry in the log
  std::uint64_t next_seq_ = 1;   // what the next appended message gets
  std::unordered_set<std::string> ids_;
  std::deque<std::pair<std::uint64_t, std::string>> id_order_;  // (seq, id), ascending
  std::uint64_t logged_ = 0;
  std::uint64_t duplicates_ = 0;
  std::optional<std::string> write_failure_;

  // The source's thread only.
  std::uint64_t next_emit_ = 1;
  std::map<std::uint64_t, std::uint64_t> positions_;  // checkpoint id -> next_emit_ it saved
  std::deque<std::uint64_t> completed_;               // positions of completed checkpoints
};

/// One instance of the MQTT publisher sink. Message i of the instance (counted from the start of
/// the job, across restores) carries tidemark-id `<name>/<run>/<instance>/<i>`, where <run> is
/// drawn when the job starts afresh and kept in every checkpoint: after a restore the replayed
/// messages carry the ids they had before the crash, so a consumer can drop repeats. Nothing is
/// staged: the publisher is at-least-once (with QoS >= 1): a snapshot waits until the broker
/// acknowledged everything published before it, and fails the checkpoint naming the count when
/// that takes longer than config.flush_timeout.
class mqtt_publish_sink final : public operator_logic {
 public:
  mqtt_publish_sink(mqtt_publish_config config, const instance_info& info);

  void process(std::size_t input, batch_ptr in, emitter& out) override;
  void add_metrics(std::map<std::string, double>& out) const override;
  void snapshot(state_writer& out) override;
  void restore(state_reader& in) override;

  /// The id the next message will carry.
  std::string next_id() const;
  const mqtt_publish& task() const noexcept { return task_; }

 private:
  std::chrono::milliseconds flush_timeout_;
  mqtt_publish task_;
  std::string prefix_;  // "<name>/", the run and the instance follow
  std::uint32_t instance_;
  std::uint64_t run_;
  std::uint64_t seq_ = 0;
};

}  // namespace tidemark::riot::io
