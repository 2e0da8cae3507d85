// Thin adapters that put the I/O tasks on Tidemark streams. Every operator instance builds its
// own task (its own WiredTiger session, MQTT client, archive), so parallel instances never share
// one; sinks flush when their input ends and report the task's counted errors as the metric
// "task_errors" in the job report.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "tidemark/job.hpp"
#include "tidemark/riot/io/blob_tasks.hpp"
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

/// Adds a sink reading `in` (forward, same parallelism) whose instances run `make(info)`'s task.
template <class T, class Task, class Make, class Apply, class End>
void add_task_sink(job& j, const stream<T>& in, const char* op, std::string name, Make make,
                   Apply apply, End end) {
  logical_node n;
  n.op = op;
  n.kind = node_kind::sink;
  n.parallelism = j.graph().node(in.id()).parallelism;
  n.inputs = {logical_edge{in.id(), partitioning::forward}};
  n.make_operator = [make, apply, end](const instance_info& info) -> std::unique_ptr<operator_logic> {
    return std::make_unique<task_sink<T, Task, Apply, End>>(make(info), apply, end);
  };
  auto id = j.graph().add(std::move(n));
  j.graph().node(id).name = name.empty() ? std::string{op} + "_" + std::to_string(id) : std::move(name);
}

}  // namespace detail

/// Sink: stores each CSV row of `rows` in the table (table_insert), flushing the last batch at
/// the end of the stream. `rows` must belong to `j`.
inline void insert_into_table(job& j, const stream<std::string>& rows,
                              std::shared_ptr<persistence::wt_connection> conn,
                              table_insert_config config, std::string name = "") {
  detail::add_task_sink<std::string, table_insert>(
      j, rows, "table_insert", std::move(name),
      [conn, config](const instance_info&) { return std::make_unique<table_insert>(conn, config); },
      [](table_insert& t, const std::string& row) { t.process(row); },
      [](table_insert& t) { t.flush(); });
}

/// Sink: publishes each payload to the broker (mqtt_publish).
inline void publish_to_mqtt(job& j, const stream<std::string>& payloads, mqtt_publish_config config,
                            std::string name = "") {
  detail::add_task_sink<std::string, mqtt_publish>(
      j, payloads, "mqtt_publish", std::move(name),
      [config](const instance_info&) { return std::make_unique<mqtt_publish>(config); },
      [](mqtt_publish& t, const std::string& payload) { t.process(payload); }, [](mqtt_publish&) {});
}

/// Sink: uploads each named local file as a blob (blob_upload).
inline void upload_blobs(job& j, const stream<std::string>& file_paths, blob_upload_config config,
                         std::string name = "") {
  detail::add_task_sink<std::string, blob_upload>(
      j, file_paths, "blob_upload", std::move(name),
      [config](const instance_info&) { return std::make_unique<blob_upload>(config); },
      [](blob_upload& t, const std::string& path) { t.process(path); }, [](blob_upload&) {});
}

/// Sink: gathers entries into zip archives (zip_batch); instance i names its archives
/// "<archive_prefix>-i-<n>.zip" so parallel instances never collide; the last, shorter archive
/// is written at the end of the stream.
inline void zip_entries(job& j, const stream<zip_entry>& entries, zip_batch_config config,
                        std::string name = "") {
  detail::add_task_sink<zip_entry, zip_batch>(
      j, entries, "zip_batch", std::move(name),
      [config](const instance_info& info) {
        auto mine = config;
        mine.archive_prefix += "-" + std::to_string(info.index);
        return std::make_unique<zip_batch>(mine);
      },
      [](zip_batch& t, const zip_entry& e) { t.process(e); }, [](zip_batch& t) { t.finish(); });
}

/// Operator: the stored row for each probe row (table_lookup), nullopt when absent or when the
/// probe has no valid key.
inline stream<std::optional<std::string>> lookup_in_table(const stream<std::string>& probes,
                                                          std::shared_ptr<persistence::wt_connection> conn,
                                                          table_lookup_config config,
                                                          std::string name = "table_lookup") {
  // Each instance gets its own copy of this function object before the first call, so the task
  // built lazily on that call belongs to that instance alone.
  return probes.map(
      [conn, config, task = std::shared_ptr<table_lookup>{}](const std::string& probe) mutable {
        if (!task) task = std::make_shared<table_lookup>(conn, config);
        return task->process(probe);
      },
      std::move(name));
}

}  // namespace tidemark::riot::io
