// TRAIN: timer -> table range scan of the rows archived since the last run -> linear regression
// training, and quartile annotation -> decision tree training -> blob upload -> MQTT notice.
#include <filesystem>
#include <fstream>

#include "common.hpp"
#include "tidemark/core/state.hpp"
#include "tidemark/riot/io/blob_tasks.hpp"
#include "tidemark/riot/io/streams.hpp"

namespace tidemark::riot::apps::detail {

namespace {

/// One training run: the archived rows with event time in [start, end).
struct train_tick {
  std::int64_t id = 0;
  std::int64_t start = 0, end = 0;
  TIDEMARK_FIELDS(id, start, end)
};

/// The rows of one run, projected to the prediction columns, newline-separated.
struct train_batch {
  std::int64_t id = 0;
  std::int64_t end = 0;
  std::string rows;
  std::size_t count = 0;
  TIDEMARK_FIELDS(id, end, rows, count)
};

/// Emits the ticks one interval apart (the first after one interval) and records their emit time.
/// A checkpoint saves the next tick; after a restore it comes one interval after the restore.
class timer_source final : public source_logic {
 public:
  timer_source(std::vector<train_tick> ticks, std::int64_t interval_ns, std::shared_ptr<run_metrics> metrics)
      : ticks_(std::move(ticks)), interval_ns_(interval_ns), metrics_(std::move(metrics)) {}
  void open() override { metrics_->start(); }
  bool pull(std::size_t, emitter& out) override {
    if (next_ >= ticks_.size()) return false;
    if (metrics_->now_ns() < due()) return true;
    auto b = std::make_unique<batch<train_tick>>();
    b->values.push_back(ticks_[next_++]);
    metrics_->emitted(b->values.front().id, 1);
    out.emit(std::move(b));
    return next_ < ticks_.size();
  }
  std::chrono::nanoseconds idle_for() const override {
    return std::chrono::nanoseconds{std::max<std::int64_t>(0, due() - metrics_->now_ns())};
  }
  bool replayable() const override { return true; }
  void snapshot(state_writer& out) override { out.write(static_cast<std::uint64_t>(next_)); }
  void restore(state_reader& in) override {
    const auto next = in.read<std::uint64_t>();
    if (next > ticks_.size())
      throw job_error("riot-train timer: the checkpoint is at tick " + std::to_string(next) + " of " +
                      std::to_string(ticks_.size()) + " (restore it with the options it was taken with)");
    first_ = next_ = static_cast<std::size_t>(next);
    paced_from_ns_ = metrics_->now_ns();
  }

 private:
  std::vector<train_tick> ticks_;
  std::int64_t interval_ns_;
  std::shared_ptr<run_metrics> metrics_;
  std::size_t next_ = 0;
  std::size_t first_ = 0;            // the tick pacing counts from (the restored one)
  std::int64_t paced_from_ns_ = 0;  // when pacing started, on the metrics' clock

  std::int64_t due() const {
    return paced_from_ns_ + static_cast<std::int64_t>(next_ - first_ + 1) * interval_ns_;
  }
};

/// Trains with `Task` (decision_tree_train or linear_regression_train) and writes the model file
/// "<DS>-<code>-<end>.model" into `dir`; emits its path.
template <class Task, class Config>
stream<tagged> train_models(const stream<train_batch>& in, Config config, std::string prefix, std::string dir,
                            error_sink errors, const std::string& name) {
  return in.template flat_map<tagged>(
      per_instance([config, prefix, dir, errors](const instance_info&) {
        return [task = Task(config), prefix, dir, errors](const train_batch& b,
                                                          collector<tagged>& out) mutable {
          if (b.count < 10)
            return;  // too few rows to train on (an empty range, or the archive's end)
          auto model = task.process(b.rows);
          if (!model) return errors.report(model.error());
          std::filesystem::create_directories(dir);
          auto path = dir + "/" + prefix + std::to_string(b.end) + ".model";
          std::ofstream(path, std::ios::binary) << *model;
          out({b.id, path});
        };
      }),
      name);
}

}  // namespace

app_job build_train(const app_options& o) {
  auto d = o.replay.dataset;
  auto columns = prediction_columns(d);  // throws for GRID
  app_job a{job{"riot-train"}, nullptr};

  // Tick ranges: equal slices of the archived event times (the replay that archive_rows stores).
  replay_schedule schedule(o.replay);
  auto first = schedule.next();
  std::int64_t last = first->time;
  while (auto m = schedule.next()) last = m->time;
  std::vector<train_tick> ticks;
  auto runs = std::max<std::uint32_t>(1, o.train_runs);
  auto span = last + 1 - first->time;
  for (std::uint32_t i = 0; i < runs; ++i)
    ticks.push_back({static_cast<std::int64_t>(i) + 1, first->time + span * i / runs, first->time + span * (i + 1) / runs});
  auto interval_ns = o.replay.rate > 0
                         ? static_cast<std::int64_t>(static_cast<double>(schedule.size()) / runs / o.replay.rate * 1e9)
                         : static_cast<std::int64_t>(o.train_interval_ms) * 1'000'000;
  a.metrics = new_metrics(o, runs);

  auto tick = a.job
                  .from_source<train_tick>(
                      [ticks, interval_ns, metrics = a.metrics](const instance_info&) {
                        return std::make_unique<timer_source>(ticks, interval_ns, metrics);
                      },
                      "timer")
                  .parallelism(1);
  // Every task after the timer handles one tick or one model at a time: rebalanced (tasks_of).
  app_wiring w(a.job, app::train, o.parallelism);
  auto layout = layout_of(o);
  std::vector<std::size_t> projected;
  for (const auto& c : columns) projected.push_back(layout.index_of(c));
  auto batches = w.placed(
      tick.map(per_instance([open = store_opener_of(o), projected](const instance_info&) {
                 return
                     [scan = io::table_range_scan(open(), io::table_range_scan_config{"archive"}),
                      projected](const train_tick& t) mutable {
                       train_batch b{t.id, t.end, {}, 0};
                       scan.for_each(t.start, t.end, [&](std::string_view row) {
                         b.count += append_projected_line(b.rows, row, projected);
                       });
                       return b;
                     };
               }),
               "range_scan"),
      "range_scan");
  std::string ds{riot::to_string(d)};
  auto models_dir = o.out_dir + "/models";
  auto mlr = w.placed(train_models<linear_regression_train>(batches, linear_regression_config::for_dataset(d),
                                                            ds + "-MLR-", models_dir, a.metrics->errors(),
                                                            "linear_regression_train"),
                      "linear_regression_train");
  auto dtc = w.placed(train_models<decision_tree_train>(batches, decision_tree_config::for_dataset(d), ds + "-DTC-",
                                                        models_dir, a.metrics->errors(), "decision_tree_train"),
                      "decision_tree_train");
  auto uploaded = mlr.merge(dtc).flat_map<tagged>(
      per_instance([config = io::blob_upload_config{io::directory_blobs{blob_dir(o), false}, ""}](
                       const instance_info&) {
        return
            [task = io::blob_upload(config)](const tagged& model, collector<tagged>& out) mutable {
              if (auto name = task.process(model.text)) out({model.msg_id, *name});
            };
      }),
      "blob_upload");
  w.placed(uploaded, "blob_upload");
  io::publish_to_mqtt(measured(uploaded, a.metrics, primary_output_of(app::train)),
                      io::mqtt_publish_config{broker_of(o.broker), model_topic(d)}, "model_notice");
  return a;
}

}  // namespace tidemark::riot::apps::detail
