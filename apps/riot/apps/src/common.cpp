// Shared pieces of the RIoTBench applications (see common.hpp).
#include "common.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <stdexcept>

#include "tidemark/core/state.hpp"
#include "tidemark/riot/parse.hpp"

namespace tidemark::riot::apps {

replay_source::replay_source(const replay_config& config, std::shared_ptr<run_metrics> metrics)
    : schedule_(config), metrics_(std::move(metrics)) {}

void replay_source::open() { metrics_->start(); }

bool replay_source::pull(std::size_t max, emitter& out) {
  auto b = std::make_unique<batch<numbered_line>>();
  auto now = metrics_->now_ns() + paced_from_ns_;  // on the schedule's clock
  while (b->values.size() < max) {
    if (!pending_) pending_ = schedule_.next();
    if (!pending_ || pending_->due_ns > now) break;
    b->values.push_back({pending_->msg_id, std::move(pending_->line)});
    pending_.reset();
  }
  if (!b->values.empty()) {
    metrics_->emitted(b->values.front().msg_id, b->values.size());
    out.emit(std::move(b));
  }
  if (!pending_) pending_ = schedule_.next();
  return pending_.has_value();
}

std::chrono::nanoseconds replay_source::idle_for() const {
  if (!pending_) return std::chrono::nanoseconds::zero();
  const auto now = metrics_->now_ns() + paced_from_ns_;
  return std::chrono::nanoseconds{std::max<std::int64_t>(0, pending_->due_ns - now)};
}

void replay_source::snapshot(state_writer& out) {
  const auto p = schedule_.tell();
  out.write(p.emitted);
  out.write(p.due_ns);
  out.write(p.cursors);
  out.write(pending_.has_value());
  if (pending_) {
    out.write(pending_->msg_id);
    out.write(pending_->due_ns);
    out.write(pending_->time);
    out.write(pending_->line);
  }
}

void replay_source::restore(state_reader& in) {
  replay_schedule::position p;
  in.read(p.emitted);
  in.read(p.due_ns);
  in.read(p.cursors);
  try {
    schedule_.seek(p);
  } catch (const std::invalid_argument& e) {
    throw job_error(std::string{e.what()} + " (restore the checkpoint with the options it was taken with)");
  }
  pending_.reset();
  if (in.read<bool>()) {
    auto& m = pending_.emplace();
    in.read(m.msg_id);
    in.read(m.due_ns);
    in.read(m.time);
    in.read(m.line);
  } else {
    pending_ = schedule_.next();
  }
  // pacing restarts now: the next message is due at once, later ones keep their gaps to it
  if (pending_) paced_from_ns_ = pending_->due_ns - metrics_->now_ns();
}

}  // namespace tidemark::riot::apps

namespace tidemark::riot::apps::detail {

stream<numbered_line> replay(job& j, const app_options& options, const std::shared_ptr<run_metrics>& metrics) {
  return j
      .from_source<numbered_line>(
          [config = options.replay, metrics](const instance_info&) {
            return std::make_unique<replay_source>(config, metrics);
          },
          "replay")
      .parallelism(1);
}

stream<std::string> measured(const stream<tagged>& in, std::shared_ptr<run_metrics> metrics, std::string output) {
  return in.map(
      [metrics, output](const tagged& t) {
        metrics->delivered(output, t.msg_id);
        return t.text;
      },
      "measure_" + output);
}

namespace {

std::mutex stores_mutex;
std::map<std::string, std::weak_ptr<persistence::wt_connection>> open_stores;  // by home

std::string store_home(const app_options& options) {
  return std::filesystem::absolute(std::filesystem::path(options.out_dir) / "store")
      .lexically_normal()
      .string();
}

}  // namespace

std::shared_ptr<persistence::wt_connection> store_of(const app_options& options) {
  auto home = store_home(options);
  std::lock_guard<std::mutex> lock(stores_mutex);
  if (auto conn = open_stores[home].lock()) return conn;
  std::filesystem::create_directories(home);
  // fast statistics (a few counters) let store_cache_mb read the cache's fill
  auto conn = persistence::wt_connection::open(
      home, "log=(enabled=true),cache_size=256MB,statistics=(fast)");
  open_stores[home] = conn;
  return conn;
}

double store_cache_mb(const app_options& options) {
  std::shared_ptr<persistence::wt_connection> conn;
  {
    std::lock_guard<std::mutex> lock(stores_mutex);
    auto it = open_stores.find(store_home(options));
    if (it != open_stores.end()) conn = it->second.lock();
  }
  return conn ? static_cast<double>(conn->cache_bytes_in_use()) / 1e6 : 0.0;
}

io::store_opener store_opener_of(const app_options& options) {
  return [options] { return store_of(options); };
}

std::string blob_dir(const app_options& options) { return options.out_dir + "/blobs"; }

std::size_t row_layout::index_of(std::string_view name) const {
  auto it = std::find(columns.begin(), columns.end(), name);
  if (it == columns.end()) throw std::invalid_argument("the row has no column '" + std::string{name} + "'");
  return static_cast<std::size_t>(it - columns.begin());
}

row_layout layout_of(const app_options& options) {
  auto d = options.replay.dataset;
  auto fan = senml_fanout_config::for_dataset(d, options.replay.data_dir);
  auto schema = csv_to_senml_config::for_dataset(d, options.replay.data_dir).names;
  row_layout l;
  for (auto& name : schema) {
    bool known = std::find(fan.meta_fields.begin(), fan.meta_fields.end(), name) != fan.meta_fields.end() ||
                 std::find(fan.observables.begin(), fan.observables.end(), name) != fan.observables.end();
    if (known) l.columns.push_back(name);  // the others are annotation fields
  }
  l.timestamp = l.index_of("timestamp");
  l.id = l.index_of(fan.id_field);
  return l;
}

io::table_insert_config archive_table(const row_layout& layout) {
  io::table_insert_config c;
  c.table = "archive";
  c.key = {{layout.timestamp, io::key_encoding::integer}, {layout.id, io::key_encoding::text}};
  return c;
}

std::vector<std::string> prediction_columns(riot::dataset d) {
  auto names = decision_tree_config::for_dataset(d).attribute_names;  // throws for GRID
  switch (d) {
    case dataset::city: names.emplace_back("airquality_raw"); break;
    case dataset::taxi: names.emplace_back("fare_amount"); break;
    case dataset::fit: names.emplace_back("ecg_lead_1"); break;
    case dataset::grid: break;
  }
  return names;
}

void split_csv(std::string_view row, std::vector<std::string_view>& cells, std::size_t at_most) {
  cells.clear();
  while (cells.size() < at_most) {
    auto comma = row.find(',');
    cells.push_back(row.substr(0, comma));
    if (comma == std::string_view::npos) return;
    row.remove_prefix(comma + 1);
  }
}

bool append_projected_line(std::string& lines, std::string_view row,
                           const std::vector<std::size_t>& columns) {
  thread_local std::vector<std::string_view> cells;
  split_csv(row, cells,
            columns.empty() ? 0 : *std::max_element(columns.begin(), columns.end()) + 1);
  for (auto c : columns)
    if (c >= cells.size() || cells[c].empty()) return false;
  if (!lines.empty()) lines.push_back('\n');
  for (std::size_t i = 0; i < columns.size(); ++i) {
    if (i) lines.push_back(',');
    lines.append(cells[columns[i]]);
  }
  return true;
}

io::mqtt_broker broker_of(const std::string& address) {
  auto colon = address.rfind(':');
  io::mqtt_broker b;
  try {
    if (colon == std::string::npos || colon == 0) throw std::invalid_argument("");
    b.host = address.substr(0, colon);
    std::size_t used = 0;
    b.port = std::stoi(address.substr(colon + 1), &used);
    if (used != address.size() - colon - 1 || b.port <= 0 || b.port > 65535) throw std::invalid_argument("");
  } catch (const std::exception&) {
    throw std::invalid_argument("--broker '" + address + "' is not HOST:PORT (e.g. 127.0.0.1:1883)");
  }
  return b;
}

}  // namespace tidemark::riot::apps::detail
