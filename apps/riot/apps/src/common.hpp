// Pieces the four RIoTBench applications share: the replay stream, latency measurement before a
// sink, the shared WiredTiger connection of a run, the dataset's row layout and the broker address.
#pragma once

#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tidemark/core/job.hpp"
#include "tidemark/persistence/wiredtiger.hpp"
#include "tidemark/riot/apps/apps.hpp"
#include "tidemark/riot/apps/replay_source.hpp"
#include "tidemark/riot/io/mqtt_tasks.hpp"
#include "tidemark/riot/io/streams.hpp"
#include "tidemark/riot/io/table_tasks.hpp"
#include "tidemark/riot/streams.hpp"

namespace tidemark::riot::apps::detail {

/// A text that belongs to an input message (a row, a payload, a file path).
struct tagged {
  std::int64_t msg_id = 0;
  std::string text;
  TIDEMARK_FIELDS(msg_id, text)
};

/// The id of the sensor a SenML line is about (the value of its entry named `id_field`), found in
/// the text without parsing it: what the lines are partitioned by before the parser. The whole
/// line when there is no such entry (the parser rejects such a line, so it has no order to keep).
std::string_view senml_sensor_of(std::string_view line, std::string_view id_field);

/// Places the tasks of one application at the instances its options give them (tasks_of says
/// which tasks may run in parallel and what they are partitioned by).
class app_wiring {
 public:
  app_wiring(job& j, app a, task_parallelism p) : job_(j), app_(a), parallelism_(std::move(p)) {}

  /// Instances of task `name`: its --task-parallelism, else --parallelism, for a data-parallel
  /// task; 1 for the others. Throws std::logic_error for a name tasks_of does not list.
  std::uint32_t of(const std::string& name) const;
  /// Instances of the operator that produces `s`.
  template <class T>
  std::uint32_t of(const stream<T>& s) const {
    return job_.graph().node(s.id()).parallelism;
  }

  /// `in` as task `name` must read it, partitioned by `key`: as it is when `in` is already
  /// partitioned by that key (`aligned`) over as many instances as the task has, or when both run
  /// one instance (forward keeps the order and fuses the two); else partition_by(key).
  template <class T, class Key>
  stream<T> feed(const stream<T>& in, const std::string& name, bool aligned, Key key) const {
    const auto p = of(name);
    if (p == of(in) && (aligned || p == 1)) return in;
    return in.partition_by(std::move(key), name + "_by_key");
  }

  /// Gives the operator producing `s` the instances of task `name`; returns `s`.
  template <class T>
  stream<T> placed(stream<T> s, const std::string& name) const {
    s.parallelism(of(name));
    return s;
  }

 private:
  job& job_;
  app app_;
  task_parallelism parallelism_;
};

/// The replayed lines of `options` as a stream (parallelism 1: message ids follow the schedule).
stream<numbered_line> replay(job& j, const app_options& options, const std::shared_ptr<run_metrics>& metrics);

/// Records the latency of each element as output `output` and passes its text on to the sink.
stream<std::string> measured(const stream<tagged>& in, std::shared_ptr<run_metrics> metrics, std::string output);

/// The WiredTiger connection of a run's store directory, shared by everything in this process
/// that uses it (WiredTiger allows one open connection per directory).
std::shared_ptr<persistence::wt_connection> store_of(const app_options& options);
/// MB the job's store (store_of(options)) holds in its cache now; 0 while it is not open.
double store_cache_mb(const app_options& options);
/// store_of(options) when an operator instance asks: a job built in a process that runs none of
/// its store's operators (a coordinator, another node) never opens the store.
io::store_opener store_opener_of(const app_options& options);
std::string blob_dir(const app_options& options);

/// The unannotated CSV row of a dataset: column names in schema order.
struct row_layout {
  std::vector<std::string> columns;
  std::size_t timestamp = 0;  ///< column of the event time
  std::size_t id = 0;         ///< column of the sensor id
  std::size_t index_of(std::string_view name) const;  ///< throws naming the column
};
row_layout layout_of(const app_options& options);
/// ETL's table: key (timestamp as integer, sensor id).
io::table_insert_config archive_table(const row_layout& layout);

/// The prediction columns of TRAIN and PRED: the decision tree's attributes, then its label column
/// (CITY: temperature, humidity, light, dust, airquality_raw; TAXI: trip_time_in_secs,
/// trip_distance, fare_amount; FIT: nine accelerometer axes, ecg_lead_1). GRID throws.
std::vector<std::string> prediction_columns(riot::dataset d);
/// Appends the cells of `row` at `columns`, comma-joined, as one more line of the newline-separated
/// `lines`; returns false and leaves `lines` as it was when one of them is empty or absent.
bool append_projected_line(std::string& lines, std::string_view row,
                           const std::vector<std::size_t>& columns);

/// "HOST:PORT" -> broker settings; throws std::invalid_argument naming the value.
io::mqtt_broker broker_of(const std::string& address);

/// Comma-separated cells (no quoting, as in the RIoTBench data); the first `at_most` only.
void split_csv(std::string_view row, std::vector<std::string_view>& cells,
               std::size_t at_most = std::numeric_limits<std::size_t>::max());

/// Remembers the metrics of the job built for a directory (see take_metrics).
std::shared_ptr<run_metrics> new_metrics(const app_options& options, std::uint64_t expected);
/// The metrics of the last job built for `out_dir` in this process, kept for take_metrics; or null.
std::shared_ptr<run_metrics> metrics_of(const std::string& out_dir);

/// ETL up to annotation: parse -> range filter -> Bloom filter -> interpolation -> join per
/// message -> annotate; the rows in schema order (plus annotation fields), tagged with msg ids.
/// Partitioned by sensor id from the parser on at the instances `w` gives ETL's tasks.
stream<tagged> etl_rows(const stream<numbered_line>& lines, const app_options& options, error_sink errors,
                        const app_wiring& w);

app_job build_etl(const app_options& options);
app_job build_stats(const app_options& options);
app_job build_train(const app_options& options);
app_job build_pred(const app_options& options);

}  // namespace tidemark::riot::apps::detail
