// Thin adapters that put the I/O tasks on Tidemark streams. Every operator instance builds its
// own task (its own WiredTiger session, MQTT client, archive), so parallel instances never share
// one; sinks flush when their input ends and report the task's counted errors as the metric
// "task_errors" in the job report.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "tidemark/core/job.hpp"
#include "tidemark/riot/io/blob_tasks.hpp"
#include "tidemark/riot/io/mqtt_replay.hpp"
#include "tidemark/riot/io/mqtt_tasks.hpp"
#include "tidemark/riot/io/table_tasks.hpp"
#include "tidemark/riot/io/zip_tasks.hpp"

namespace tidemark::riot::io {

namespace detail {

/// A sink instance around one task: apply(task, x) per element, end(task) when the input ends.
template <class T, class Task, class Apply, class End>
class task_sink final : public operator_logic {
 public:
  task_sink(std::unique_ptr<Task> task, Apply apply, End end)
      : task_(std::move(task)), apply_(std::move(apply)), end_(std::move(end)) {}

  void process(std::size_t, batch_ptr in, emitter&) override {
    for (const auto& x : static_cast<batch<T>&>(*in).values) guarded([&] { apply_(*task_, x); });
  }
  void finish(emitter&) override { end_(*task_); }
  void add_metrics(std::map<std::string, double>& out) const override {
    out["task_errors"] = static_cast<double>(task_->errors().count());
  }

 private:
  std::unique_ptr<Task> task_;
  Apply apply_;
  End end_;
};

/// What stream::sink needs to run `make_task(info)`'s task in each instance.
template <class T, class Task, class MakeTask, class Apply, class End>
auto task_sinks(MakeTask make_task, Apply apply, End end) {
  return [make_task, apply, end](const instance_info& info) {
    return std::make_unique<task_sink<T, Task, Apply, End>>(make_task(info), apply, end);
  };
}

}  // namespace detail

/// The WiredTiger connection a task uses, opened when an operator instance is created: only the
/// process (the node) that runs the instance opens the store, never the one that built the job.
using store_opener = std::function<std::shared_ptr<persistence::wt_connection>()>;

/// Sink: stores each CSV row of `rows` in the table (table_insert), flushing the last batch at
/// the end of the stream.
inline void insert_into_table(const stream<std::string>& rows, store_opener open,
                              table_insert_config config, std::string name = "") {
  rows.sink("table_insert",
            detail::task_sinks<std::string, table_insert>(
                [open, config](const instance_info&) {
                  return std::make_unique<table_insert>(open(), config);
                },
                [](table_insert& t, const std::string& row) { t.process(row); },
                [](table_insert& t) { t.flush(); }),
            std::move(name));
}
/// The same with a connection that is already open.
inline void insert_into_table(const stream<std::string>& rows,
                              std::shared_ptr<persistence::wt_connection> conn,
                              table_insert_config config, std::string name = "") {
  insert_into_table(rows, store_opener{[conn] { return conn; }}, std::move(config), std::move(name));
}

/// Sink: publishes each payload to the broker (mqtt_publish), with a tidemark-id that a replay
/// after a restore repeats (mqtt_publish_sink): at-least-once, repeats recognizable.
inline void publish_to_mqtt(const stream<std::string>& payloads, mqtt_publish_config config,
                            std::string name = "") {
  payloads.sink(
      "mqtt_publish",
      [config](const instance_info& info) { return std::make_unique<mqtt_publish_sink>(config, info); },
      std::move(name));
}

/// Source: the messages on `config.subscription.topic`, each instance through its own durable
/// log and persistent session (mqtt_log_source): replayable, so a restored job neither loses nor
/// repeats what the log holds. It never ends.
inline stream<mqtt_message> subscribe_from_mqtt(job& j, mqtt_source_config config,
                                                std::string name = "mqtt_subscribe") {
  return j.from_source<mqtt_message>(
      [config](const instance_info& info) { return std::make_unique<mqtt_log_source>(config, info); },
      std::move(name));
}

/// Sink: uploads each named local file as a blob (blob_upload_sink: with checkpoints, each blob
/// once the checkpoint covering it completed).
inline void upload_blobs(const stream<std::string>& file_paths, blob_upload_config config,
                         std::string name = "") {
  file_paths.sink(
      "blob_upload",
      [config](const instance_info&) { return std::make_unique<blob_upload_sink>(config); },
      std::move(name));
}

/// Sink: gathers entries into zip archives (zip_batch); instance i names its archives
/// "<archive_prefix>-i-<n>.zip" so parallel instances never collide; the last, shorter archive
/// is written at the end of the stream.
inline void zip_entries(const stream<zip_entry>& entries, zip_batch_config config,
                        std::string name = "") {
  entries.sink(
      "zip_batch",
      detail::task_sinks<zip_entry, zip_batch>(
          [config](const instance_info& info) {
            auto mine = config;
            mine.archive_prefix += "-" + std::to_string(info.index);
            return std::make_unique<zip_batch>(mine);
          },
          [](zip_batch& t, const zip_entry& e) { t.process(e); }, [](zip_batch& t) { t.finish(); }),
      std::move(name));
}

/// Operator: the stored row for each probe row (table_lookup), nullopt when absent or when the
/// probe has no valid key.
inline stream<std::optional<std::string>> lookup_in_table(const stream<std::string>& probes,
                                                          std::shared_ptr<persistence::wt_connection> conn,
                                                          table_lookup_config config,
                                                          std::string name = "table_lookup") {
  return probes.map(per_instance([conn, config](const instance_info&) {
                      return [task = std::make_unique<table_lookup>(conn, config)](
                                 const std::string& probe) { return task->process(probe); };
                    }),
                    std::move(name));
}

}  // namespace tidemark::riot::io
