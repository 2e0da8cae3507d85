// STATS: SenML parse -> {block average | Kalman -> sliding linear regression | distinct count} ->
// accumulate per sensor and statistic -> multi-line plot (one chart per window) -> zip -> blob store.
#include <algorithm>
#include <map>

#include "common.hpp"
#include "tidemark/core/state.hpp"
#include "tidemark/riot/io/plot_task.hpp"
#include "tidemark/riot/io/streams.hpp"

namespace tidemark::riot::apps::detail {

namespace {

/// One completed accumulator window and the message that completed it.
struct window_of_values {
  std::int64_t msg_id = 0;
  std::shared_ptr<const accumulated> values;
  TIDEMARK_FIELDS(msg_id, values)
};

/// One chart to archive, for the message whose window produced it.
struct chart {
  std::int64_t msg_id = 0;
  io::zip_entry entry;
  TIDEMARK_FIELDS(msg_id, entry)
};

/// Archives charts (zip_batch) and emits each archive's path; the last, shorter archive is
/// written when the input ends. A checkpoint saves the charts of the archive being gathered; an
/// archive written again after a restore replaces the one of the same number.
class zip_stage final : public operator_logic {
 public:
  explicit zip_stage(io::zip_batch_config config) : zip_(std::move(config)) {}

  void process(std::size_t, batch_ptr in, emitter& out) override {
    auto b = std::make_unique<batch<tagged>>();
    for (auto& c : static_cast<batch<chart>&>(*in).values) {
      last_ = c.msg_id;
      if (auto path = zip_.process(std::move(c.entry))) b->values.push_back({c.msg_id, *path});
    }
    if (!b->values.empty()) out.emit(std::move(b));
  }
  void finish(emitter& out) override {
    if (auto path = zip_.finish()) {
      auto b = std::make_unique<batch<tagged>>();
      b->values.push_back({last_, *path});
      out.emit(std::move(b));
    }
  }
  void snapshot(state_writer& out) override {
    out.write(zip_.gathered());
    out.write(zip_.archives_written());
    out.write(last_);
  }
  void restore(state_reader& in) override {
    auto gathered = in.read<std::vector<io::zip_entry>>();
    const auto archives = in.read<std::uint64_t>();
    in.read(last_);
    zip_.resume(std::move(gathered), archives);
  }
  void add_metrics(std::map<std::string, double>& out) const override {
    out["archives"] = static_cast<double>(zip_.archives_written());
    out["task_errors"] = static_cast<double>(zip_.errors().count());
  }

 private:
  io::zip_batch zip_;
  std::int64_t last_ = 0;
};

}  // namespace

}  // namespace tidemark::riot::apps::detail

namespace tidemark::riot::apps {

stream<observation> stats_statistics(job& j, const app_options& o, const std::shared_ptr<run_metrics>& metrics) {
  using namespace detail;
  auto d = o.replay.dataset;
  auto fan = senml_fanout_config::for_dataset(d, o.replay.data_dir);
  app_wiring w(j, app::stats, o.parallelism);
  auto lines = replay(j, o, metrics);
  // The per-sensor statistics keep state per sensor and field: the lines are partitioned by
  // sensor before the parser, so each key's observations reach its instance in order.
  auto line_sensor = [id_field = fan.id_field](const numbered_line& l) {
    return senml_sensor_of(l.line, id_field);
  };
  auto obs = w.placed(parse_senml(w.feed(lines, "senml_parse", false, line_sensor), fan, metrics->errors()),
                      "senml_parse");

  auto averages = w.placed(block_average_of(obs, block_average_config::for_dataset(d)), "block_average");
  auto smoothed = w.placed(kalman(obs, kalman_config::for_dataset(d)), "kalman");
  auto trends = w.placed(sliding_regression_of(smoothed, sliding_regression_config::for_dataset(d)),
                         "sliding_regression");
  // DAC over sensor ids, one estimate per message. Its running estimate depends on the order of
  // the messages, so it reads the replayed lines (one instance, the source's order) and parses
  // them itself instead of taking the parser's interleaved output.
  auto distinct = lines.flat_map<observation>(
      per_instance([fan, config = distinct_count_config::for_dataset(d)](const instance_info&) {
        return [id_field = fan.id_field, first = fan.observables.front(), parse = senml_parse(),
                dac = distinct_count(config), sensor_id = shared_text{"all-sensors"},
                meta = shared_text{"distinct_sensors"}](const numbered_line& l,
                                                        collector<observation>& out) mutable {
          auto rec = parse.process(senml_payload(l.line));
          if (!rec) return;  // senml_parse reports it
          const auto* id = rec->find(id_field);
          if (!id || !rec->find(first)) return;  // as when it counted the parser's first observable
          observation e;
          e.msg_id = l.msg_id;
          e.timestamp = rec->base_time;
          e.sensor_id = sensor_id;
          e.meta = meta;
          e.obs_type = "DAC";
          set_value(e, dac.process(id->text));
          out(std::move(e));
        };
      }),
      "distinct_count");
  return averages.merge(trends, distinct);
}

}  // namespace tidemark::riot::apps

namespace tidemark::riot::apps::detail {

app_job build_stats(const app_options& o) {
  app_job a{job{"riot-stats"}, nullptr};
  a.metrics = new_metrics(o, replay_schedule(o.replay).size());
  app_wiring w(a.job, app::stats, o.parallelism);
  auto acc_config = accumulator_config::for_dataset(o.replay.dataset);
  if (o.stats_window) acc_config.window_size = o.stats_window;
  auto windows =
      stats_statistics(a.job, o, a.metrics)
          .flat_map<window_of_values>(
              per_instance([acc_config, errors = a.metrics->errors()](const instance_info&) {
                return [task = accumulator(acc_config), errors](
                           const observation& x, collector<window_of_values>& out) mutable {
                  auto r = task.process(x);
                  if (!r) return errors.report(r.error());
                  if (*r) out({x.msg_id, std::make_shared<const accumulated>(std::move(**r))});
                };
              }),
              "accumulate");
  // One chart per window, a line per statistic and field (e.g. "AVG temperature") over all the
  // window's sensors in time order. The original drew a chart per sensor; at the paper's rates
  // that is thousands of charts per second, far beyond a plotting library's ~800 per core.
  auto charts = windows.flat_map<chart>(
      per_instance([](const instance_info&) {
        return [plt = io::multi_line_plot(io::plot_config{})](const window_of_values& w,
                                                              collector<chart>& out) mutable {
          std::map<std::string, std::vector<timed_value>, std::less<>> lines;
          std::string line_name;  // "<statistic> <field>", built in place
          std::int64_t t0 = INT64_MAX;
          for (const auto& [key, fields] : *w.values) {
            std::string_view statistic = "value";  // the accumulator's key is sensor id + obs type
            for (const char* type : {"AVG", "SLR", "DAC"})
              if (key.size() >= 3 && key.compare(key.size() - 3, 3, type) == 0) statistic = type;
            for (const auto& [field, values] : fields) {
              line_name.assign(statistic).append(1, ' ').append(field);
              auto line = lines.find(line_name);
              if (line == lines.end())
                line = lines.emplace(line_name, std::vector<timed_value>{}).first;
              line->second.insert(line->second.end(), values.begin(), values.end());
              for (const auto& v : values) t0 = std::min(t0, v.time);
            }
          }
          std::vector<io::plot_series> series;
          for (auto& [name, values] : lines) {
            std::stable_sort(values.begin(), values.end(),
                             [](auto& a, auto& b) { return a.time < b.time; });
            io::plot_series s{name, {}, {}};
            for (const auto& v : values) {
              s.x.push_back(static_cast<double>(v.time - t0));
              s.y.push_back(v.value);
            }
            series.push_back(std::move(s));
          }
          if (auto svg = plt.process("window of message " + std::to_string(w.msg_id), series))
            out({w.msg_id, {"window-" + std::to_string(w.msg_id) + ".svg", std::move(*svg)}});
        };
      }),
      "plot");
  w.placed(charts, "plot");
  io::zip_batch_config zip{o.out_dir + "/charts", "stats", 10, {}, 1};
  auto archives = charts.transform<tagged>(
      "zip",
      [zip](const instance_info& info) {
        auto mine = zip;
        mine.archive_prefix += "-" + std::to_string(info.index);
        return std::make_unique<zip_stage>(mine);
      },
      "zip");
  io::upload_blobs(measured(archives, a.metrics, primary_output_of(app::stats)),
                   io::blob_upload_config{io::directory_blobs{blob_dir(o), false}, "stats-"},
                   "blob_upload");
  return a;
}

}  // namespace tidemark::riot::apps::detail
