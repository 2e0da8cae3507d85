// Benchmark `riot-io`: the peak rate of each RIoTBench I/O and plot task on one thread, called
// directly in a loop on CITY sample messages (the task's own cost, no framework around it), next
// to the rates the RIoTBench paper reports for Apache Storm where it states them.
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "support/bench_support.hpp"
#include "../../tests/support/mosquitto_broker.hpp"
#include "tidemark/riot/dataset.hpp"
#include "tidemark/riot/io/blob_tasks.hpp"
#include "tidemark/riot/io/mqtt_tasks.hpp"
#include "tidemark/riot/io/plot_task.hpp"
#include "tidemark/riot/io/table_tasks.hpp"
#include "tidemark/riot/io/zip_tasks.hpp"

using namespace tidemark::riot::io;
using tidemark::persistence::durability;
using tidemark::persistence::wt_connection;

namespace {

struct result {
  std::string task;    ///< paper code
  std::string label;   ///< a short name for the chart, e.g. "ATI power_loss"
  std::string detail;  ///< what exactly ran
  std::uint64_t messages;
  double seconds;
  std::uint64_t errors;
  double paper_rate;  ///< msg/s on Storm, one core; NaN when the paper gives only a bar
};

std::vector<std::string> city_lines() {
  std::ifstream in(tidemark::riot::default_data_dir() + "/SYS_sample_data_senml.csv");
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  if (lines.empty()) throw std::runtime_error("no CITY sample in " + tidemark::riot::default_data_dir());
  return lines;
}

// Times `body(i)` for i in [0, n).
double timed(std::uint64_t n, const std::function<void(std::uint64_t)>& body) {
  auto start = std::chrono::steady_clock::now();
  for (std::uint64_t i = 0; i < n; ++i) body(i);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A unique CSV row per i: "<ts>,<sensor>,<payload tail>" from the CITY lines, ts shifted per lap.
std::string city_row(const std::vector<std::string>& lines, std::uint64_t i) {
  const auto& l = lines[i % lines.size()];
  auto ts = std::stoll(l.substr(0, l.find(','))) + static_cast<long long>(i / lines.size()) * 1000000;
  return std::to_string(ts) + ",s" + std::to_string(i % lines.size()) + "," + l.substr(l.size() - 60);
}

/// One pass over every task in a fresh folder under `dir`, with `scale` x the message counts.
std::vector<result> one_pass(const std::vector<std::string>& lines, std::uint64_t scale,
                             const std::filesystem::path& dir) {
  const double none = std::nan("");
  std::vector<result> results;
  std::filesystem::create_directories(dir);
  auto conn = wt_connection::open(dir / "wt", "log=(enabled=true),cache_size=512MB");
  const std::vector<key_part> key{{0, key_encoding::integer}, {1, key_encoding::text}};
  for (auto level : {durability::checkpoint, durability::process_crash, durability::power_loss}) {
    const std::uint64_t n = (level == durability::power_loss ? 20000 : 200000) * scale;
    std::string table = std::string{"city_"} + to_string(level);
    table_insert insert{conn, {table, key, 100, level}};
    double s = timed(n, [&](std::uint64_t i) { insert.process(city_row(lines, i)); });
    s += timed(1, [&](std::uint64_t) { insert.flush(); });
    results.push_back({"ATI", std::string{"ATI "} + to_string(level), std::string{"table insert, batch 100, "} + to_string(level), n, s,
                       insert.errors().count(), none});
  }
  {
    const std::uint64_t n = 200000 * scale;
    table_lookup lookup{conn, {"city_process_crash", key}};
    double s = timed(n, [&](std::uint64_t i) { lookup.process(city_row(lines, (i * 7919) % n)); });
    results.push_back({"ATL", "ATL", "table lookup of a random stored row", n, s, lookup.misses(), none});
    table_range_scan scan{conn, {"city_process_crash"}};
    const std::uint64_t q = 5000 * scale;
    double s2 = timed(q, [&](std::uint64_t i) {
      // Three seconds of the CITY sample (about 50 rows) inside its first minute.
      auto start = 1422748800000LL + static_cast<long long>(i % 55) * 1000;
      scan.process(start, start + 3000);
    });
    results.push_back({"ATR", "ATR", "table range query of 3 s of CITY events, " +
                                  std::to_string(scan.rows_returned() / q) + " rows each on average",
                       q, s2, 0, 1.0 / 60});
  }

  const std::string model = tidemark::riot::default_data_dir() + "/DecisionTreeClassify-SYS.arff";
  struct blob_case {
    std::string where;
    std::string tag;
    blob_target target;
  };
  const std::vector<blob_case> targets{
      {"WiredTiger blob store", "WiredTiger", wiredtiger_blobs{conn, "models"}},
      {"directory with fsync", "directory", directory_blobs{dir / "blobs", true}}};
  for (const auto& [where, tag, target] : targets) {
    const std::uint64_t n = (std::holds_alternative<directory_blobs>(target) ? 100 : 500) * scale;
    blob_upload upload{{target, ""}};
    double s = timed(n, [&](std::uint64_t) { upload.process(model); });
    results.push_back({"ABU", "ABU " + tag, "blob upload of a 44 KB model file, " + where, n, s, upload.errors().count(), none});
    blob_download download{{target}};
    double s2 = timed(n * 4, [&](std::uint64_t) { download.process("DecisionTreeClassify-SYS.arff"); });
    results.push_back({"ABD", "ABD " + tag, "blob download of a 44 KB model file, " + where, n * 4, s2,
                       download.errors().count(), none});
  }

  {
    tidemark::test::mosquitto_broker broker;
    mqtt_broker b;
    b.port = broker.port();
    mqtt_subscribe subscriber{{b, "citydata", 0, 1000000}};
    mqtt_publish publisher{{b, "citydata"}};
    const std::uint64_t n = 100000 * scale;
    std::uint64_t received = 0;
    auto start = std::chrono::steady_clock::now();
    double pub_s = timed(n, [&](std::uint64_t i) { publisher.process(lines[i % lines.size()]); });
    while (received < n && subscriber.poll(std::chrono::seconds{2})) ++received;
    double sub_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    results.push_back({"MQP", "MQP", "MQTT publish QoS 0 of a CITY SenML line to mosquitto on loopback", n, pub_s,
                       publisher.errors().count(), none});
    results.push_back({"MQS", "MQS", "MQTT subscribe: all published lines received (end to end)", received, sub_s,
                       n - received + subscriber.dropped(), none});
  }

  multi_line_plot svg{{plot_format::svg}};
  std::vector<plot_series> series(3);
  const char* names[] = {"temperature", "humidity", "dust"};
  for (int k = 0; k < 3; ++k) {
    series[k].name = names[k];
    for (int i = 0; i < 20; ++i) {  // an accumulator window of 20 tuples, as FIT/CITY STATS
      series[k].x.push_back(i * 1000.0);
      series[k].y.push_back(20 + 10 * k + std::sin(i + k));
    }
  }
  std::string chart;
  {
    const std::uint64_t n = 300 * scale;
    double s = timed(n, [&](std::uint64_t) { chart = svg.process("CITY sensor", series).value_or(""); });
    results.push_back({"PLT", "PLT svg", "multi-line SVG chart, 3 series x 20 points, 800x600", n, s, svg.errors().count(), 25});
    multi_line_plot png{{plot_format::png}};
    const std::uint64_t m = 100 * scale;
    double s2 = timed(m, [&](std::uint64_t) { png.process("CITY sensor", series); });
    results.push_back({"PLT", "PLT png", "multi-line PNG chart, 3 series x 20 points, 800x600", m, s2, png.errors().count(), 25});
  }
  for (bool remote : {false, true}) {
    for (bool charts : {true, false}) {  // 26 KB SVG charts (STATS) or CITY SenML lines (~380 B)
      const std::uint64_t n = (charts ? 500 : 5000) * scale;
      zip_batch_config config{dir / (remote ? "mnt" : "zips"), charts ? "charts" : "senml", 10};
      if (remote) config.staging_directory = dir / "staging";
      zip_batch zip{config};
      double s = timed(n, [&](std::uint64_t i) {
        zip.process({"e" + std::to_string(i), charts ? chart : lines[i % lines.size()]});
      });
      std::string what = charts ? "SVG charts (" + std::to_string(chart.size() / 1024) + " KB)" : "CITY SenML lines";
      results.push_back({remote ? "RZP" : "LZP", std::string{remote ? "RZP " : "LZP "} + (charts ? "charts" : "senml"),
                         "zip of " + what + ", 10 per archive, deflate level 1" +
                             (remote ? ", staged then moved with fsync" : ""),
                         n, s, zip.errors().count(), remote ? 300.0 : 3000.0});
    }
  }

  return results;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"RIoTBench I/O task benchmark"};
  std::string out = tidemark::bench::out_dir() + "/riot-io.json";
  std::uint64_t scale = 1;
  int repeats = 3;
  app.add_option("--out", out, "JSON report path");
  app.add_option("--scale", scale, "multiplies every message count");
  app.add_option("--repeats", repeats, "passes over every task (the median and range are reported)")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  const auto lines = city_lines();
  tidemark::test::temp_dir dir{"bench-riot-io"};
  std::vector<std::vector<result>> passes;
  for (int r = 0; r < repeats; ++r) {
    std::printf("pass %d of %d...\n", r + 1, repeats);
    std::fflush(stdout);
    passes.push_back(one_pass(lines, scale, dir / std::to_string(r)));
  }
  nlohmann::json tasks = nlohmann::json::array();
  std::printf("%-4s %12s %10s  %s\n", "task", "msg/s", "paper", "what");
  for (std::size_t k = 0; k < passes.front().size(); ++k) {
    const auto& r = passes.front()[k];
    std::vector<double> rates;
    std::uint64_t errors = 0;
    for (const auto& pass : passes) {
      rates.push_back(static_cast<double>(pass[k].messages) / pass[k].seconds);
      errors += pass[k].errors;
    }
    const auto spread = tidemark::bench::spread(rates);
    const double rate = spread["median"];
    nlohmann::json t{{"task", r.task},         {"label", r.label}, {"detail", r.detail},
                     {"messages", r.messages}, {"rate", rate},     {"rate_spread", spread},
                     {"errors", errors}};
    t["paper_storm_rate"] = std::isnan(r.paper_rate) ? nlohmann::json(nullptr) : nlohmann::json(r.paper_rate);
    tasks.push_back(t);
    std::printf("%-4s %12.0f %10s  %s%s\n", r.task.c_str(), rate,
                std::isnan(r.paper_rate) ? "-" : std::to_string(r.paper_rate).substr(0, 6).c_str(),
                r.detail.c_str(),
                errors ? (" [" + std::to_string(errors) + " errors]").c_str() : "");
  }
  nlohmann::json doc{
      {"benchmark", "riot-io"}, {"threads", 1}, {"repeats", repeats}, {"tasks", tasks}};
  std::ofstream(out) << doc.dump(2) << "\n";
  return 0;
}
