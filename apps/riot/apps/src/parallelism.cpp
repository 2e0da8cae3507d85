// Which tasks of the RIoTBench applications run in parallel, partitioned by what, and which run
// one instance and why; parsing of --task-parallelism (see apps.hpp and docs/riot-apps.md).
#include <algorithm>
#include <stdexcept>

#include "common.hpp"

namespace tidemark::riot::apps {

namespace {

constexpr const char* by_sensor_line =
    "sensor id of the line, read from the SenML text, so each sensor's observations stay in order";
constexpr const char* by_sensor = "sensor id (stateless; keeps each sensor's order for the tasks after it)";
constexpr const char* by_sensor_field = "sensor id + field: its state is kept per sensor and field";
constexpr const char* any = "rebalance: stateless, one element at a time";
constexpr const char* source = "the source: message ids follow the replay schedule";
constexpr const char* sink = "a sink (with the latency measurement just before it)";

std::vector<app_task> etl_tasks() {
  return {{"replay", false, source},
          {"senml_parse", true, by_sensor_line},
          {"range_filter", true, by_sensor},
          {"bloom_filter", true, by_sensor},
          {"interpolation", true, by_sensor_field + std::string{" (window of recent values)"}},
          {"join", true,
           "sensor id: a message's observables all carry its sensor id, so its row is reassembled in "
           "one instance and each sensor's rows leave in order (the table keeps the last row per key)"},
          {"annotate", true, by_sensor},
          {"csv_to_senml", true, by_sensor},
          {"measure_table", false, sink},
          {"table_insert", false, sink},
          {"measure_mqtt", false, sink},
          {"mqtt_publish", false, sink}};
}

std::vector<app_task> stats_tasks() {
  return {{"replay", false, source},
          {"senml_parse", true, by_sensor_line},
          {"block_average", true, by_sensor_field + std::string{" (block sum and count)"}},
          {"kalman", true, by_sensor_field + std::string{" (estimate and error)"}},
          {"sliding_regression", true, by_sensor_field + std::string{" (sliding window)"}},
          {"distinct_count", false,
           "one running estimate over all sensors per message, in the stream's order: it reads the "
           "replayed lines itself, so its order is the source's whatever senml_parse runs at"},
          {"accumulate", false, "windows of N observations over all sensors, in arrival order"},
          {"plot", true, "rebalance: one chart per window, stateless"},
          {"zip", false, "10 charts per archive, in arrival order"},
          {"measure_blob", false, sink},
          {"blob_upload", false, sink}};
}

std::vector<app_task> train_tasks() {
  return {{"timer", false, "the source: one tick per training run"},
          {"range_scan", true, "rebalance: one scan per tick"},
          {"linear_regression_train", true, "rebalance: one model per tick, from that tick's rows only"},
          {"decision_tree_train", true, "rebalance: one model per tick, from that tick's rows only"},
          {"blob_upload", true, "rebalance: one upload per model file"},
          {"measure_mqtt", false, sink},
          {"model_notice", false, sink}};
}

std::vector<app_task> pred_tasks() {
  return {{"replay", false, source},
          {"pred_parse", false,
           "keeps the block average of the observed target over the whole stream in arrival order "
           "(RIoTBench's BlockWindowAverage for the residual error) and hands it on with each row"},
          {"decision_tree_classify", true,
           "rebalance: stateless given the model; each instance swaps in the announced models itself"},
          {"linear_regression_predict", true,
           "rebalance: stateless given the model; the residual's average comes with the row"},
          {"measure_mqtt", false, sink},
          {"mqtt_publish", false, sink}};
}

// The instance count `text` as a whole number from 1 to 1024, or an error naming `what`.
std::uint32_t instances(const std::string& what, const std::string& text) {
  std::size_t used = 0;
  long n = 0;
  try {
    n = std::stol(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || n < 1 || n > 1024)
    throw std::invalid_argument(what + ": the instances must be a number from 1 to 1024");
  return static_cast<std::uint32_t>(n);
}

std::string names_of_parallel(app a) {
  std::string out;
  for (const auto& t : tasks_of(a))
    if (t.parallel) out += (out.empty() ? "" : ", ") + t.name;
  return out;
}

}  // namespace

std::uint32_t task_parallelism::of(const std::string& task) const {
  auto it = tasks.find(task);
  return it == tasks.end() ? all : it->second;
}

const std::vector<app_task>& tasks_of(app a) {
  static const std::vector<app_task> etl = etl_tasks(), stats = stats_tasks(), train = train_tasks(),
                                     pred = pred_tasks();
  switch (a) {
    case app::etl: return etl;
    case app::stats: return stats;
    case app::train: return train;
    case app::pred: return pred;
  }
  throw std::invalid_argument("unknown application");
}

task_parallelism parse_task_parallelism(app a, std::uint32_t all, std::string_view per_task) {
  task_parallelism p;
  p.all = instances("--parallelism", std::to_string(all));
  std::size_t start = 0;
  while (start < per_task.size()) {
    auto end = per_task.find(',', start);
    if (end == std::string_view::npos) end = per_task.size();
    auto item = per_task.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;
    auto eq = item.find('=');
    std::string name{item.substr(0, eq)};
    const auto& tasks = tasks_of(a);
    auto task = std::find_if(tasks.begin(), tasks.end(), [&](const app_task& t) { return t.name == name; });
    if (eq == std::string_view::npos)
      throw std::invalid_argument("--task-parallelism: '" + std::string{item} + "' is not NAME=N");
    if (task == tasks.end())
      throw std::invalid_argument("--task-parallelism: no task '" + name + "' (data-parallel tasks: " +
                                  names_of_parallel(a) + ")");
    if (!task->parallel)
      throw std::invalid_argument("--task-parallelism: '" + name + "' runs one instance: " + task->partitioning +
                                  " (data-parallel tasks: " + names_of_parallel(a) + ")");
    std::string value{item.substr(eq + 1)};
    p.tasks[name] = instances("--task-parallelism: " + name + "=" + value, value);
  }
  return p;
}

}  // namespace tidemark::riot::apps

namespace tidemark::riot::apps::detail {

std::uint32_t app_wiring::of(const std::string& task) const {
  const auto& tasks = tasks_of(app_);
  auto t = std::find_if(tasks.begin(), tasks.end(), [&](const app_task& x) { return x.name == task; });
  if (t == tasks.end()) throw std::logic_error("riot app wiring: no task '" + task + "' in tasks_of");
  return t->parallel ? parallelism_.of(task) : 1;
}

std::string_view senml_sensor_of(std::string_view line, std::string_view id_field) {
  const std::string name = "\"n\":\"" + std::string{id_field} + "\"";
  auto at = line.find(name);
  if (at == std::string_view::npos) return line;
  auto open = line.rfind('{', at);
  auto close = line.find('}', at);
  if (open == std::string_view::npos || close == std::string_view::npos) return line;
  auto entry = line.substr(open, close - open);
  for (std::string_view value : {"\"sv\":\"", "\"v\":\""}) {
    auto v = entry.find(value);
    if (v == std::string_view::npos) continue;
    auto begin = v + value.size();
    auto end = entry.find('"', begin);
    if (end != std::string_view::npos) return entry.substr(begin, end - begin);
  }
  return line;
}

}  // namespace tidemark::riot::apps::detail
