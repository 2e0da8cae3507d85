// PRED: SenML stream -> decision-tree classification, and linear-regression prediction with a
// block average of the observed value -> residual error -> MQTT publish. Both predictors take the
// models TRAIN announces on MQTT (blob download, swapped in while running).
#include <sstream>

#include "common.hpp"
#include "tidemark/core/state.hpp"
#include "tidemark/riot/io/blob_tasks.hpp"
#include "tidemark/riot/io/streams.hpp"
#include "tidemark/riot/model_codec.hpp"

namespace tidemark::riot::apps::detail {

namespace {

/// One message as the prediction operators see it.
struct pred_row {
  std::int64_t msg_id = 0;
  std::string sensor;
  std::string row;  ///< prediction columns: attributes, then the observed target
  double observed = 0;  ///< the observed target
  /// What the residual error is relative to: the block average of the observed target over the
  /// stream so far, or before the first block completes the observed value itself (1 when 0).
  double scale = 1;
  TIDEMARK_FIELDS(msg_id, sensor, row, observed, scale)
};

/// The analytic type of a model blob name "<DS>-<TYPE>-<end>.model" (empty when malformed).
std::string analytic_type(std::string_view name) {
  auto a = name.find('-');
  auto b = a == std::string_view::npos ? a : name.find('-', a + 1);
  return b == std::string_view::npos ? std::string{} : std::string{name.substr(a + 1, b - a - 1)};
}

/// A prediction operator that swaps its model while running: every 10 ms it takes the model
/// notices that arrived on its subscription, downloads the models of its type (`Predictor::type`)
/// from the blob store and hands them to the predictor. Rows are predicted in between. A
/// checkpoint saves the model in use (its bytes); notices are not replayed (MQTT at-most-once):
/// after a restore the operator predicts with the saved model until the next notice.
template <class Predictor>
class model_swapping final : public operator_logic {
 public:
  model_swapping(Predictor p, const io::mqtt_subscribe_config& notices, io::blob_download_config blobs, error_sink errors)
      : p_(std::move(p)), sub_(notices), download_(std::move(blobs)), errors_(std::move(errors)) {}

  void process(std::size_t, batch_ptr in, emitter& out) override {
    auto b = std::make_unique<batch<tagged>>();
    collector<tagged> c{b->values};
    for (const auto& r : static_cast<batch<pred_row>&>(*in).values) p_.predict(r, c, errors_);
    if (!b->values.empty()) out.emit(std::move(b));
  }
  std::int64_t timer_period_ms() const override { return 10; }
  void on_timer(std::int64_t, emitter&) override {
    while (auto notice = sub_.poll()) {
      if (analytic_type(notice->payload) != Predictor::type) continue;
      auto bytes = download_.process(notice->payload);
      if (!bytes) continue;  // counted by the download task
      if (auto r = p_.update(*bytes); !r) {
        errors_.report(r.error());
      } else {
        ++swaps_;
        model_ = std::move(*bytes);
      }
    }
  }
  void snapshot(state_writer& out) override { out.write(model_); }
  void restore(state_reader& in) override {
    in.read(model_);
    if (!model_) return;
    if (auto r = p_.update(*model_); !r)
      throw job_error("riot-pred: the checkpoint's " + std::string{Predictor::type} +
                      " model does not load: " + r.error().message);
  }
  void add_metrics(std::map<std::string, double>& out) const override {
    out["model_swaps"] = static_cast<double>(swaps_);
    out["model_download_errors"] = static_cast<double>(download_.errors().count());
  }

 private:
  Predictor p_;
  io::mqtt_subscribe sub_;
  io::blob_download download_;
  error_sink errors_;
  std::uint64_t swaps_ = 0;
  std::optional<std::string> model_;  // the bytes of the model in use, for checkpoints
};

/// DTC: the class of each row ("<msg>,<sensor>,DTC,obsVal:<row>,RES:<class>").
class classifier {
 public:
  static constexpr const char* type = "DTC";
  explicit classifier(decision_tree_classify task) : task_(std::move(task)) {}
  expected<bool> update(std::string_view bytes) { return task_.update_model(bytes); }
  void predict(const pred_row& r, collector<tagged>& out, const error_sink& errors) {
    auto label = task_.process(r.row);
    if (!label) return errors.report(label.error());
    out({r.msg_id, std::to_string(r.msg_id) + "," + r.sensor + ",DTC,obsVal:" + r.row + ",RES:" + *label});
  }

 private:
  decision_tree_classify task_;
};

/// MLR: the predicted target and its residual error against the block average of the observed
/// target ("<msg>,<sensor>,MLR,obsVal:<row>,PRED:<p>,ERROR:<(observed - p) / average>"); the
/// average comes with the row (pred_row::scale), so any instance predicts any row.
class regressor {
 public:
  static constexpr const char* type = "MLR";
  explicit regressor(linear_regression_predict task) : task_(std::move(task)) {}
  expected<bool> update(std::string_view bytes) { return task_.update_model(bytes); }
  void predict(const pred_row& r, collector<tagged>& out, const error_sink& errors) {
    auto p = task_.process(r.row);
    if (!p) return errors.report(p.error());
    std::ostringstream s;
    s << r.msg_id << ',' << r.sensor << ",MLR,obsVal:" << r.row << ",PRED:" << *p
      << ",ERROR:" << (r.observed - *p) / r.scale;
    out({r.msg_id, s.str()});
  }

 private:
  linear_regression_predict task_;
};

/// The replayed data's projected rows joined by '\n' (what the initial models are trained on).
std::string initial_training_batch(const app_options& o, const std::vector<std::string>& columns) {
  senml_parse parse;
  std::string batch;
  for (const auto& line : dataset_lines(o.replay)) {
    auto rec = parse.process(senml_payload(line));
    if (!rec) continue;
    std::string row;
    for (std::size_t i = 0; i < columns.size(); ++i) {
      const auto* f = rec->find(columns[i]);
      if (!f || !f->numeric) {
        row.clear();
        break;
      }
      if (i) row.push_back(',');
      row += f->text;
    }
    if (row.empty()) continue;
    if (!batch.empty()) batch.push_back('\n');
    batch += row;
  }
  return batch;
}

}  // namespace

app_job build_pred(const app_options& o) {
  auto d = o.replay.dataset;
  auto columns = prediction_columns(d);  // throws for GRID
  app_job a{job{"riot-pred"}, nullptr};
  a.metrics = new_metrics(o, replay_schedule(o.replay).size());
  auto broker = broker_of(o.broker);
  auto id_field = senml_fanout_config::for_dataset(d, o.replay.data_dir).id_field;
  auto lr_config = linear_regression_config::for_dataset(d);
  // One instance (tasks_of): the block average of the observed target runs over the stream in
  // the source's order, as RIoTBench's BlockWindowAverage before its ErrorEstimation.
  auto rows =
      replay(a.job, o, a.metrics)
          .flat_map<pred_row>(
              per_instance([columns, id_field, target = lr_config.target_column,
                            average = block_average(block_average_config::for_dataset(d)),
                            errors = a.metrics->errors()](const instance_info&) {
                return [parse = senml_parse(), columns, id_field, target, average,
                        block = block_average::state{}, mean = std::optional<double>{},
                        errors](const numbered_line& l, collector<pred_row>& out) mutable {
                  auto rec = parse.process(senml_payload(l.line));
                  if (!rec) return errors.report(rec.error());
                  pred_row in{l.msg_id, {}, {}};
                  if (const auto* id = rec->find(id_field)) in.sensor = id->text;
                  for (std::size_t i = 0; i < columns.size(); ++i) {
                    const auto* f = rec->find(columns[i]);
                    if (!f || !f->numeric)
                      return errors.report(error{"pred_parse: message " +
                                                      std::to_string(l.msg_id) + ": no numeric '" +
                                                      columns[i] + "'"});
                    if (i) in.row.push_back(',');
                    in.row += f->text;
                    if (i == target) in.observed = std::stod(f->text);
                  }
                  if (auto m = average.step(block, in.observed)) mean = *m;
                  in.scale = mean && *mean != 0 ? *mean : (in.observed != 0 ? in.observed : 1.0);
                  out(std::move(in));
                };
              }),
              "pred_parse");

  // initial models, trained on the dataset's data (deterministic); later ones come from TRAIN
  auto batch = std::make_shared<const std::string>(initial_training_batch(o, columns));
  io::mqtt_subscribe_config notices{broker, model_topic(d)};
  io::blob_download_config blobs{io::directory_blobs{blob_dir(o), false}};
  auto dt_config = decision_tree_config::for_dataset(d);
  app_wiring w(a.job, app::pred, o.parallelism);
  auto classified = rows.transform<tagged>(
      "classify",
      [dt_config, batch, notices, blobs, errors = a.metrics->errors()](const instance_info&) {
        auto model = model_codec::decode_decision_tree(*decision_tree_train(dt_config).process(*batch));
        return std::make_unique<model_swapping<classifier>>(classifier(decision_tree_classify(dt_config, std::move(*model))),
                                                            notices, blobs, errors);
      },
      "decision_tree_classify");
  w.placed(classified, "decision_tree_classify");
  auto predicted = rows.transform<tagged>(
      "predict",
      [lr_config, batch, notices, blobs, errors = a.metrics->errors()](const instance_info&) {
        auto model = model_codec::decode_linear_regression(*linear_regression_train(lr_config).process(*batch));
        return std::make_unique<model_swapping<regressor>>(
            regressor(linear_regression_predict(lr_config, std::move(*model))), notices, blobs, errors);
      },
      "linear_regression_predict");
  w.placed(predicted, "linear_regression_predict");
  io::publish_to_mqtt(
      measured(classified.merge(predicted), a.metrics, primary_output_of(app::pred)),
      io::mqtt_publish_config{broker, pred_topic(d)}, "mqtt_publish");
  return a;
}

}  // namespace tidemark::riot::apps::detail
