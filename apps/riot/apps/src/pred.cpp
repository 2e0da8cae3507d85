// PRED: SenML stream plus MQTT model notices (blob download, model swapped in while running) ->
// decision-tree classification, and linear-regression prediction with a block average of the
// observed value -> residual error -> MQTT publish.
#include <sstream>
#include <thread>

#include "common.hpp"
#include "tidemark/riot/io/blob_tasks.hpp"
#include "tidemark/riot/io/streams.hpp"
#include "tidemark/riot/model_codec.hpp"

namespace tidemark::riot::apps::detail {

namespace {

/// What the prediction operators see: a message's projected row, or a downloaded model.
struct pred_input {
  std::int64_t msg_id = 0;
  std::string sensor;
  std::string row;         ///< prediction columns: attributes, then the observed target
  std::string model_kind;  ///< "DTC" or "MLR" for a model update (empty for a row)
  std::string model;       ///< the model's bytes
};

/// Polls the model topic; ends once the data source has ended and nothing is waiting.
class notice_source final : public source_logic {
 public:
  notice_source(io::mqtt_subscribe_config config, std::shared_ptr<std::atomic<bool>> data_done)
      : config_(std::move(config)), data_done_(std::move(data_done)) {}
  void open() override { sub_ = std::make_unique<io::mqtt_subscribe>(config_); }
  bool pull(std::size_t, emitter& out) override {
    bool ending = data_done_->load();
    auto m = sub_->poll(std::chrono::milliseconds{0});
    if (!m) {
      if (ending) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds{1});
      return true;
    }
    auto b = std::make_unique<batch<tagged>>();
    b->values.push_back({0, std::move(m->payload)});
    out.emit(std::move(b));
    return true;
  }

 private:
  io::mqtt_subscribe_config config_;
  std::shared_ptr<std::atomic<bool>> data_done_;
  std::unique_ptr<io::mqtt_subscribe> sub_;
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

/// The analytic type of a model blob name "<DS>-<TYPE>-<end>.model" (empty when malformed).
std::string analytic_type(std::string_view name) {
  auto a = name.find('-');
  auto b = a == std::string_view::npos ? a : name.find('-', a + 1);
  return b == std::string_view::npos ? std::string{} : std::string{name.substr(a + 1, b - a - 1)};
}

}  // namespace

app_job build_pred(const app_options& o) {
  auto d = o.replay.dataset;
  auto columns = prediction_columns(d);  // throws for GRID
  app_job a{job{"riot-pred"}, nullptr, "mqtt", task_errors{}};
  a.metrics = new_metrics(o, replay_schedule(o.replay).size());
  auto done = std::make_shared<std::atomic<bool>>(false);
  auto broker = broker_of(o.broker);

  auto id_field = senml_fanout_config::for_dataset(d, o.replay.data_dir).id_field;
  auto rows = replay(a.job, o, a.metrics, done)
                  .flat_map<pred_input>(
                      [columns, id_field, errors = a.errors, parse = riot::detail::per_instance<senml_parse>()](
                          const numbered_line& l, collector<pred_input>& out) mutable {
                        auto rec = parse.get([] { return senml_parse(); }).process(senml_payload(l.line));
                        if (!rec) return errors.report(rec.error());
                        pred_input in{l.msg_id, {}, {}, {}, {}};
                        if (const auto* id = rec->find(id_field)) in.sensor = id->text;
                        for (std::size_t i = 0; i < columns.size(); ++i) {
                          const auto* f = rec->find(columns[i]);
                          if (!f || !f->numeric)
                            return errors.report(task_error{"pred_parse: message " + std::to_string(l.msg_id) + ": no numeric '" +
                                                            columns[i] + "'"});
                          if (i) in.row.push_back(',');
                          in.row += f->text;
                        }
                        out(std::move(in));
                      },
                      "pred_parse");
  auto models = a.job
                    .from_source<tagged>(
                        [config = io::mqtt_subscribe_config{broker, model_topic(d)}, done](const instance_info&) {
                          return std::make_unique<notice_source>(config, done);
                        },
                        "model_notices")
                    .parallelism(1)
                    .flat_map<pred_input>(
                        [config = io::blob_download_config{io::directory_blobs{blob_dir(o), false}}, errors = a.errors,
                         task = riot::detail::per_instance<io::blob_download>()](const tagged& notice,
                                                                                 collector<pred_input>& out) mutable {
                          auto type = analytic_type(notice.text);
                          if (type != "DTC" && type != "MLR")
                            return errors.report(task_error{"model notice '" + notice.text + "' names no DTC or MLR model"});
                          auto bytes = task.get([&] { return io::blob_download(config); }).process(notice.text);
                          if (bytes) out(pred_input{0, {}, {}, type, std::move(*bytes)});
                        },
                        "blob_download");
  auto inputs = rows.merge(models);

  auto batch = std::make_shared<const std::string>(initial_training_batch(o, columns));
  auto dt_config = decision_tree_config::for_dataset(d);
  auto classified = inputs.flat_map<tagged>(
      [dt_config, batch, errors = a.errors, task = riot::detail::per_instance<decision_tree_classify>()](
          const pred_input& in, collector<tagged>& out) mutable {
        auto& dtc = task.get([&] {
          auto model = model_codec::decode_decision_tree(*decision_tree_train(dt_config).process(*batch));
          return decision_tree_classify(dt_config, std::move(*model));
        });
        if (in.model_kind == "DTC") {
          if (auto r = dtc.update_model(in.model); !r) errors.report(r.error());
          return;
        }
        if (!in.model_kind.empty()) return;
        auto label = dtc.process(in.row);
        if (!label) return errors.report(label.error());
        out({in.msg_id, std::to_string(in.msg_id) + "," + in.sensor + ",DTC,obsVal:" + in.row + ",RES:" + *label});
      },
      "decision_tree_classify");

  struct regression {
    linear_regression_predict predict;
    block_average average;
    block_average::state block;
    std::optional<double> mean;
  };
  auto lr_config = linear_regression_config::for_dataset(d);
  auto avg_config = block_average_config::for_dataset(d);
  auto predicted = inputs.flat_map<tagged>(
      [lr_config, avg_config, batch, errors = a.errors, task = riot::detail::per_instance<regression>(),
       cells = std::vector<std::string_view>()](const pred_input& in, collector<tagged>& out) mutable {
        auto& r = task.get([&] {
          auto model = model_codec::decode_linear_regression(*linear_regression_train(lr_config).process(*batch));
          return regression{linear_regression_predict(lr_config, std::move(*model)), block_average(avg_config), {}, {}};
        });
        if (in.model_kind == "MLR") {
          if (auto u = r.predict.update_model(in.model); !u) errors.report(u.error());
          return;
        }
        if (!in.model_kind.empty()) return;
        auto p = r.predict.process(in.row);
        if (!p) return errors.report(p.error());
        split_csv(in.row, cells);
        double actual = std::stod(std::string{cells[lr_config.target_column]});
        if (auto m = r.average.step(r.block, actual)) r.mean = *m;
        // residual error against the moving (block) average of the observed value
        double scale = r.mean && *r.mean != 0 ? *r.mean : (actual != 0 ? actual : 1.0);
        std::ostringstream s;
        s << in.msg_id << ',' << in.sensor << ",MLR,obsVal:" << in.row << ",PRED:" << *p << ",ERROR:" << (actual - *p) / scale;
        out({in.msg_id, s.str()});
      },
      "linear_regression_predict");
  io::publish_to_mqtt(a.job, measured(classified.merge(predicted), a.metrics, "mqtt"),
                      io::mqtt_publish_config{broker, pred_topic(d)}, "mqtt_publish");
  return a;
}

}  // namespace tidemark::riot::apps::detail
