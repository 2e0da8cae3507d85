// The RIoTBench applications on Tidemark: ETL, STATS, TRAIN and PRED, built as jobs from one set of
// options, and registered as the jobs riot-etl, riot-stats, riot-train and riot-pred.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "tidemark/core/job.hpp"
#include "tidemark/riot/apps/metrics.hpp"
#include "tidemark/riot/apps/replay.hpp"

namespace tidemark::riot::apps {

enum class app { etl, stats, train, pred };

/// "etl", "stats", "train" or "pred".
std::string_view to_string(app a) noexcept;

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
