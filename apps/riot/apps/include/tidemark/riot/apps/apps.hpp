// The RIoTBench applications on Tidemark: ETL, STATS, TRAIN and PRED, built as jobs from one set of
// options, and registered as the jobs riot-etl, riot-stats, riot-train and riot-pred.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tidemark/core/job.hpp"
#include "tidemark/riot/apps/metrics.hpp"
#include "tidemark/riot/apps/replay.hpp"
#include "tidemark/riot/observation.hpp"

namespace tidemark::riot::apps {

enum class app { etl, stats, train, pred };

/// "etl", "stats", "train" or "pred".
std::string_view to_string(app a) noexcept;

/// How many instances each data-parallel task of an application runs (--parallelism N and
/// --task-parallelism NAME=N,...). Sources, sinks and the tasks that need the stream's one global
/// order always run one instance (see tasks_of).
struct task_parallelism {
  std::uint32_t all = 1;                        ///< every data-parallel task
  std::map<std::string, std::uint32_t> tasks;  ///< per task name; overrides `all`
  /// The instances of data-parallel task `task`.
  std::uint32_t of(const std::string& task) const;
};

/// One task (operator) of an application and how it may run in parallel.
struct app_task {
  std::string name;  ///< the operator's name, as --task-parallelism and the plan name it
  bool parallel;     ///< data-parallel: runs --parallelism instances
  /// Parallel: what its input is partitioned by. Not parallel: why it runs one instance.
  std::string partitioning;
};

/// Every task of `a` in dataflow order: the names --task-parallelism accepts (the parallel ones)
/// and the ones it refuses, with the reason.
const std::vector<app_task>& tasks_of(app a);

/// Parses "NAME=N,NAME=N" (empty: none) for `a`, with `all` instances for the tasks not named.
/// Throws std::invalid_argument naming an unknown task, a task that runs one instance (and why),
/// or an N below 1.
task_parallelism parse_task_parallelism(app a, std::uint32_t all, std::string_view per_task);

/// What a run of an application is configured with (the job options, parsed).
struct app_options {
  /// The input stream: dataset, spatial scale, speed or rate, profile, message count, seed.
  replay_config replay;
  /// MQTT broker "HOST:PORT" for ETL's output, TRAIN's notices and PRED's notices and output.
  std::string broker = "127.0.0.1:1883";
  /// Where the run keeps its table store, blobs, charts, models and report (created if missing).
  /// Required: build_app rejects an empty one (the registered jobs default to a fresh temp dir).
  std::string out_dir;
  /// TRAIN: training runs (timer ticks), each over the next equal slice of the archived rows.
  std::uint32_t train_runs = 5;
  /// TRAIN: milliseconds between ticks when no rate is given (with --rate R a tick comes every
  /// rows-per-run / R seconds, so rows reach training at R per second).
  std::uint32_t train_interval_ms = 1000;
  /// STATS: observations per accumulated window (0: RIoTBench's TUPLE_WINDOW_SIZE).
  std::uint32_t stats_window = 0;
  /// Print a progress line per second while running.
  bool progress = false;
  /// Whole seconds at the start that report.json also leaves out, in `latency_after_warmup_ms`
  /// (per output) and `throughput_in_after_warmup`: the window a benchmark judges (0: none).
  std::uint32_t warmup_seconds = 0;
  /// Instances of the data-parallel tasks; results are the same as with one, up to order.
  task_parallelism parallelism;
};

/// Topics: ETL publishes "<ds>data" (e.g. "citydata"), TRAIN announces models on "models/<DS>",
/// PRED publishes "<ds>pred".
std::string etl_topic(riot::dataset d);
std::string model_topic(riot::dataset d);
std::string pred_topic(riot::dataset d);

/// A built application: its job and the metrics its source, sinks and tasks fill.
struct app_job {
  tidemark::job job;
  std::shared_ptr<run_metrics> metrics;
};

/// The sink output whose latency and rate a run of `a` reports: "blob" for STATS, else "mqtt".
std::string primary_output_of(app a);

/// Builds the application's job; deterministic given the options (the table, blob directory and
/// charts go under out_dir). TRAIN and PRED reject GRID (it has no attribute to predict from), as
/// in the paper.
app_job build_app(app a, const app_options& options);

/// STATS up to its statistics: replay -> SenML parse -> block averages, Kalman + sliding
/// regressions, distinct counts, merged (what build_app(app::stats) accumulates and plots), on
/// `j`, at the instances `options.parallelism` gives the tasks. The same elements at any
/// parallelism, and each (sensor, statistic, field) in message order.
stream<observation> stats_statistics(job& j, const app_options& options, const std::shared_ptr<run_metrics>& metrics);

/// TRAIN's input: what ETL archives (annotated rows of the replayed stream, key (timestamp, id))
/// written into out_dir's table store. Returns the rows written.
std::uint64_t archive_rows(const app_options& options);

/// Hands over (and forgets) the metrics of the last job built for `out_dir` in this process (the
/// registered jobs' report step takes them), or nullptr.
std::shared_ptr<run_metrics> take_metrics(const std::string& out_dir);

/// Writes `<out_dir>/report.json` (options, run metrics, the runtime's per-operator metrics) and
/// returns its path.
std::string write_report(app a, const app_options& options, const run_metrics& metrics,
                         const std::string& primary_output, const std::string& runtime_json);

}  // namespace tidemark::riot::apps
