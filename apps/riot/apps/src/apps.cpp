// Dispatch, topics, the metrics of the last build per output directory, the report file and
// TRAIN's archive (see apps.hpp).
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common.hpp"
#include "tidemark/riot/io/streams.hpp"
#include "tidemark/runtime/runtime.hpp"

namespace tidemark::riot::apps {

namespace {

std::mutex registry_mutex;
std::map<std::string, std::shared_ptr<run_metrics>>& metrics_registry() {
  static std::map<std::string, std::shared_ptr<run_metrics>> m;
  return m;
}

std::string lower(riot::dataset d) {
  std::string s{riot::to_string(d)};
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string_view to_string(app a) noexcept {
  switch (a) {
    case app::etl: return "etl";
    case app::stats: return "stats";
    case app::train: return "train";
    case app::pred: return "pred";
  }
  return "?";
}

std::string etl_topic(riot::dataset d) { return lower(d) + "data"; }
std::string model_topic(riot::dataset d) { return "models/" + std::string{riot::to_string(d)}; }
std::string pred_topic(riot::dataset d) { return lower(d) + "pred"; }

std::shared_ptr<run_metrics> detail::new_metrics(const app_options& options, std::uint64_t expected) {
  auto m = std::make_shared<run_metrics>(expected, options.progress);
  m->measure_cache([options] { return detail::store_cache_mb(options); });
  std::lock_guard<std::mutex> lock(registry_mutex);
  metrics_registry()[options.out_dir] = m;
  return m;
}

std::shared_ptr<run_metrics> detail::metrics_of(const std::string& out_dir) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto it = metrics_registry().find(out_dir);
  return it == metrics_registry().end() ? nullptr : it->second;
}

std::shared_ptr<run_metrics> take_metrics(const std::string& out_dir) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto it = metrics_registry().find(out_dir);
  if (it == metrics_registry().end()) return nullptr;
  auto m = std::move(it->second);
  metrics_registry().erase(it);
  return m;
}

std::string primary_output_of(app a) { return a == app::stats ? "blob" : "mqtt"; }

app_job build_app(app a, const app_options& options) {
  if (options.out_dir.empty()) throw std::invalid_argument("riot app: app_options::out_dir is empty");
  switch (a) {
    case app::etl: return detail::build_etl(options);
    case app::stats: return detail::build_stats(options);
    case app::train: return detail::build_train(options);
    case app::pred: return detail::build_pred(options);
  }
  throw std::invalid_argument("unknown application");
}

std::uint64_t archive_rows(const app_options& options) {
  auto fast = options;
  fast.replay.rate = 0;
  fast.replay.speed = 1e12;  // every message due at once
  job j{"riot-archive"};
  auto metrics = std::make_shared<run_metrics>(0);
  auto rows = detail::etl_rows(detail::replay(j, fast, metrics), fast, metrics->errors(),
                               detail::app_wiring(j, app::etl, task_parallelism{}));
  auto n = rows.map([](const detail::tagged& r) { return r.text; }, "row_text");
  io::insert_into_table(n, detail::store_of(options),
                        detail::archive_table(detail::layout_of(options)), "table_insert");
  auto count = rows.count("rows");
  tidemark::run(j);
  metrics->stop();
  return count.value();
}

std::string write_report(app a, const app_options& o, const run_metrics& metrics, const std::string& primary,
                         const std::string& runtime_json) {
  std::filesystem::create_directories(o.out_dir);
  auto j = nlohmann::json::parse(metrics.to_json(primary, o.warmup_seconds));
  j["app"] = std::string{to_string(a)};
  j["dataset"] = std::string{riot::to_string(o.replay.dataset)};
  j["options"] = {{"scale", o.replay.scale},
                  {"speed", o.replay.speed},
                  {"rate", o.replay.rate},
                  {"profile", o.replay.profile == rate_profile::paper ? "paper" : "constant"},
                  {"messages", o.replay.messages},
                  {"warmup_seconds", o.warmup_seconds},
                  {"broker", o.broker},
                  {"parallelism", o.parallelism.all},
                  {"task_parallelism", o.parallelism.tasks}};
  if (!runtime_json.empty()) j["runtime"] = nlohmann::json::parse(runtime_json);
  auto path = o.out_dir + "/report.json";
  std::ofstream(path) << j.dump(1) << '\n';
  return path;
}

}  // namespace tidemark::riot::apps
