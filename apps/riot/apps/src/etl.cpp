// ETL: SenML parse -> range filter -> Bloom filter -> interpolation -> join per message ->
// annotate -> (table insert) and (CSV -> SenML -> MQTT publish).
#include <filesystem>
#include <map>
#include <fstream>
#include <unordered_map>

#include "common.hpp"
#include "tidemark/riot/io/streams.hpp"
#include "tidemark/riot/parse.hpp"

namespace tidemark::riot::apps::detail {

namespace {

/// The metadata file with every key copied for the spatial copies ("<key>-k:<annotation>");
/// the original file when scale is 1. Written under out_dir, with the same content every time.
std::string scaled_metadata(const app_options& o, const std::string& original) {
  if (o.replay.scale <= 1) return original;
  auto path = o.out_dir + "/metadata-" + std::string{riot::to_string(o.replay.dataset)} + "-x" +
              std::to_string(o.replay.scale) + ".txt";
  std::filesystem::create_directories(o.out_dir);
  auto entries = read_metadata(original);
  std::ofstream out(path + ".part");
  for (const auto& [key, annotation] : entries)
    for (std::uint32_t k = 0; k < o.replay.scale; ++k)
      out << replay_schedule::copy_id(key, k) << ':' << annotation << '\n';
  out.close();
  std::filesystem::rename(path + ".part", path);
  return path;
}

std::vector<std::string> keys_of(const std::string& metadata_path) {
  std::vector<std::string> keys;
  for (auto& entry : read_metadata(metadata_path)) keys.push_back(std::move(entry.first));
  return keys;
}

/// Reassembles each message's observations into its CSV row once all observables arrived.
class message_join {
 public:
  message_join(const senml_fanout_config& fan, const row_layout& layout) : fields_(fan.observables.size()) {
    for (std::size_t i = 0; i < fan.observables.size(); ++i) observable_[fan.observables[i]] = i;
    for (const auto& c : layout.columns) {
      auto m = std::find(fan.meta_fields.begin(), fan.meta_fields.end(), c);
      if (m != fan.meta_fields.end())
        columns_.push_back({true, static_cast<std::size_t>(m - fan.meta_fields.begin())});
      else
        columns_.push_back({false, observable_.at(c)});
    }
  }

  void process(const observation& o, collector<tagged>& out) {
    auto f = observable_.find(o.obs_type);
    if (f == observable_.end()) return;
    auto& p = pending_[o.msg_id];
    if (p.values.empty()) {
      p.values.resize(fields_);
      p.meta = o.meta;
    }
    p.values[f->second] = o.missing ? std::string{} : o.text;
    if (++p.filled < fields_) return;
    split_csv(p.meta.view(), meta_cells_);
    tagged row{o.msg_id, {}};
    for (std::size_t i = 0; i < columns_.size(); ++i) {
      if (i) row.text.push_back(',');
      const auto& c = columns_[i];
      if (c.meta) {
        if (c.index < meta_cells_.size()) row.text.append(meta_cells_[c.index]);
      } else {
        row.text += p.values[c.index];
      }
    }
    pending_.erase(o.msg_id);
    out(std::move(row));
  }

 private:
  struct partial {
    shared_text meta;
    std::vector<std::string> values;
    std::size_t filled = 0;
  };
  struct column {
    bool meta;
    std::size_t index;
  };
  std::size_t fields_;
  std::unordered_map<std::string, std::size_t> observable_;
  std::vector<column> columns_;
  std::unordered_map<std::int64_t, partial> pending_;
  std::vector<std::string_view> meta_cells_;
};

/// The sensor id of an ETL row (its id column): what the tasks after the join partition by.
struct row_sensor {
  std::size_t id;
  std::string_view operator()(const tagged& r) const {
    thread_local std::vector<std::string_view> cells;
    split_csv(r.text, cells);
    return id < cells.size() ? cells[id] : std::string_view{r.text};
  }
};

/// C2S for rows whose missing values (empty cells) are left out of the SenML record: one
/// csv_to_senml per set of missing columns (there are few), the full one for complete rows.
class senml_writer {
 public:
  explicit senml_writer(csv_to_senml_config config) : config_(std::move(config)) {}

  expected<std::string> process(const std::string& row) {
    split_csv(row, cells_);
    std::string missing;  // one flag per column
    for (auto c : cells_) missing.push_back(c.empty() ? '1' : '0');
    auto it = by_missing_.find(missing);
    if (it == by_missing_.end()) {
      csv_to_senml_config reduced;
      for (std::size_t i = 0; i < config_.names.size(); ++i)
        if (i >= missing.size() || missing[i] == '0') {
          reduced.names.push_back(config_.names[i]);
          reduced.units.push_back(config_.units[i]);
          reduced.kinds.push_back(config_.kinds[i]);
        }
      it = by_missing_.emplace(missing, csv_to_senml(std::move(reduced))).first;
    }
    if (missing.find('1') == std::string::npos) return it->second.process(row);
    reduced_row_.clear();
    for (auto c : cells_)
      if (!c.empty()) {
        if (!reduced_row_.empty()) reduced_row_.push_back(',');
        reduced_row_.append(c);
      }
    return it->second.process(reduced_row_);
  }

 private:
  csv_to_senml_config config_;
  std::map<std::string, csv_to_senml> by_missing_;
  std::vector<std::string_view> cells_;
  std::string reduced_row_;
};

}  // namespace

stream<tagged> etl_rows(const stream<numbered_line>& lines, const app_options& o, error_sink errors,
                        const app_wiring& w) {
  auto d = o.replay.dataset;
  const auto& dir = o.replay.data_dir;
  auto fan = senml_fanout_config::for_dataset(d, dir);
  auto layout = layout_of(o);
  // Valid ids for the Bloom filter: the annotation keys (GRID has no metadata: its meter ids).
  std::optional<annotate_config> ann;
  std::vector<std::string> ids;
  if (d != dataset::grid) {
    ann = annotate_config::for_dataset(d, dir);
    ann->metadata_path = scaled_metadata(o, ann->metadata_path);
    ids = keys_of(ann->metadata_path);
  } else {
    replay_schedule schedule(o.replay);
    for (const auto& id : schedule.base_ids())
      for (std::uint32_t k = 0; k < o.replay.scale; ++k) ids.push_back(replay_schedule::copy_id(id, k));
  }
  auto bloom = std::make_shared<const bloom_filter_check>(
      bloom_filter_check::from_ids(bloom_filter_config::for_dataset(d), ids));

  // Partitioned by sensor id from the parser on (tasks_of): interpolation keeps state per sensor
  // and field, and the table the rows end in keeps the last row per (time, sensor).
  auto line_sensor = [id_field = fan.id_field](const numbered_line& l) {
    return senml_sensor_of(l.line, id_field);
  };
  auto obs_sensor = [](const observation& x) { return x.sensor_id.view(); };
  auto obs = w.placed(parse_senml(w.feed(lines, "senml_parse", false, line_sensor), fan, errors), "senml_parse");
  auto ranged = w.placed(
      range_filter_marks(w.feed(obs, "range_filter", true, obs_sensor), range_filter_config::for_dataset(d), errors),
      "range_filter");
  auto checked = w.placed(bloom_filter_marks(w.feed(ranged, "bloom_filter", true, obs_sensor), bloom), "bloom_filter");
  auto filled = w.placed(interpolate(checked, interpolation_config::for_dataset(d)), "interpolation");
  auto rows = w.placed(w.feed(filled, "join", false, obs_sensor)
                           .flat_map<tagged>(per_instance([fan, layout](const instance_info&) {
                                               return [join = message_join(fan, layout)](
                                                          const observation& x, collector<tagged>& out) mutable {
                                                 join.process(x, out);
                                               };
                                             }),
                                             "join"),
                       "join");
  if (!ann) return rows;
  return w.placed(w.feed(rows, "annotate", true, row_sensor{layout.id})
                      .flat_map<tagged>(per_instance([config = *ann, errors](const instance_info&) {
                                          return [task = annotate(config), errors](
                                                     const tagged& row, collector<tagged>& out) mutable {
                                            auto r = task.process(row.text);
                                            if (!r) return errors.report(r.error());
                                            out(tagged{row.msg_id, std::move(*r)});
                                          };
                                        }),
                                        "annotate"),
                  "annotate");
}

app_job build_etl(const app_options& o) {
  app_job a{job{"riot-etl"}, nullptr};
  a.metrics = new_metrics(o, replay_schedule(o.replay).size());
  app_wiring w(a.job, app::etl, o.parallelism);
  auto rows = etl_rows(replay(a.job, o, a.metrics), o, a.metrics->errors(), w);
  auto layout = layout_of(o);
  io::insert_into_table(measured(rows, a.metrics, "table"), store_opener_of(o), archive_table(layout),
                        "table_insert");
  auto senml = w.feed(rows, "csv_to_senml", true, row_sensor{layout.id}).flat_map<tagged>(
      per_instance([config = csv_to_senml_config::for_dataset(o.replay.dataset, o.replay.data_dir),
                    errors = a.metrics->errors()](const instance_info&) {
        return [task = senml_writer(config), errors](const tagged& row,
                                                     collector<tagged>& out) mutable {
          auto r = task.process(row.text);
          if (!r) return errors.report(r.error());
          out(tagged{row.msg_id, std::move(*r)});
        };
      }),
      "csv_to_senml");
  w.placed(senml, "csv_to_senml");
  io::publish_to_mqtt(measured(senml, a.metrics, primary_output_of(app::etl)),
                      io::mqtt_publish_config{broker_of(o.broker), etl_topic(o.replay.dataset)},
                      "mqtt_publish");
  return a;
}

}  // namespace tidemark::riot::apps::detail
