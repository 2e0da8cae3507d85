// The RIoTBench applications give the same results at any parallelism, up to order: each app runs
// at parallelism 1, 2 and a per-task setting and the sorted outputs must be equal, and values
// computed here from the input files pin what they must be (the table's last row per key, block
// averages, model names, residual errors). A wrongly keyed test-only graph shows that the
// comparison fails when per-key state is split.
#define BOOST_TEST_MODULE riot_parallelism
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "../../support/mosquitto_broker.hpp"
#include "tidemark/riot/apps/apps.hpp"
#include "tidemark/riot/apps/jobs.hpp"
#include "tidemark/riot/io/mqtt_tasks.hpp"
#include "tidemark/riot/io/table_tasks.hpp"
#include "tidemark/riot/streams.hpp"
#include "tidemark/core/plan.hpp"
#include "tidemark/runtime/job_registry.hpp"
#include "tidemark/runtime/runtime.hpp"

using namespace std::chrono_literals;
using namespace tidemark;
using namespace tidemark::riot;

namespace {

const std::string all_at_once = "1e9";  // --speed: the recorded timing compressed to nothing

/// Parallelism settings every app is compared under: one instance, two of every data-parallel
/// task, and a per-task mix (named per app).
std::vector<std::vector<std::string>> settings_of(const std::string& per_task) {
  return {{"--parallelism", "1"}, {"--parallelism", "2"}, {"--parallelism", "1", "--task-parallelism", per_task}};
}

/// Small batches, so that a stream is spread over many batches and instances interleave (with the
/// default batch size a whole pass over a sample file fits in one batch, which one instance takes).
run_options small_batches() {
  run_options ro;
  ro.linger = 1ms;
  ro.batch_size = 32;
  return ro;
}

struct fixture {
  test::mosquitto_broker broker;
  test::temp_dir dir{"riot-parallelism"};
  job_registry registry;
  fixture() { apps::register_jobs(registry); }

  io::mqtt_broker at() const { return test::broker_at(broker.port()); }

  /// Runs a registered job with `args`, this broker and the output directory `out(label)`.
  job_result run(const std::string& name, std::vector<std::string> args, const std::string& label) {
    const auto& spec = registry.find(name);
    args.insert(args.end(), {"--broker", broker.address(), "--out", out(label)});
    return run_registered(spec, parse_job_arguments(spec, args), small_batches());
  }
  std::string out(const std::string& label) const { return dir / label; }
};

/// Every message on the subscription, waiting until `n` arrived (or 10 s passed), sorted.
std::vector<std::string> receive_sorted(io::mqtt_subscribe& sub, std::size_t n) {
  std::vector<std::string> got;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (got.size() < n && std::chrono::steady_clock::now() < deadline)
    if (auto m = sub.poll(50ms)) got.push_back(m->payload);
  while (auto m = sub.poll(200ms)) got.push_back(m->payload);  // and nothing more
  std::sort(got.begin(), got.end());
  return got;
}

/// Every row of the run's archive table, sorted.
std::vector<std::string> table_sorted(const std::string& out) {
  auto conn = persistence::wt_connection::open(out + "/store", "log=(enabled=true)");
  io::table_range_scan scan(conn, {"archive"});
  auto rows = scan.process(std::string_view{}, std::string_view{"\x7f"});
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < rows.size()) {
    auto nl = rows.find('\n', start);
    if (nl == std::string::npos) nl = rows.size();
    lines.push_back(rows.substr(start, nl - start));
    start = nl + 1;
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

/// "" when equal, else where two sorted outputs first differ.
std::string first_difference(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  if (a.size() != b.size()) return "sizes " + std::to_string(a.size()) + " and " + std::to_string(b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return "line " + std::to_string(i) + ": '" + a[i] + "' vs '" + b[i] + "'";
  return "";
}

/// The value of SenML entry `name` in `line` (a "v" or "sv" string), or "".
std::string senml_value(const std::string& line, const std::string& name) {
  auto at = line.find("\"n\":\"" + name + "\"");
  if (at == std::string::npos) return "";
  auto open = line.rfind('{', at), close = line.find('}', at);
  auto entry = line.substr(open, close - open);
  for (std::string key : {"\"sv\":\"", "\"v\":\""})
    if (auto v = entry.find(key); v != std::string::npos) {
      auto begin = v + key.size();
      return entry.substr(begin, entry.find('"', begin) - begin);
    }
  return "";
}

std::vector<std::string> lines_of(const std::string& file) {
  std::ifstream in(default_data_dir() + "/" + file);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

/// An observation as one comparable line: message, sensor, statistic, field and value.
std::string line_of(const observation& o) {
  return std::to_string(o.msg_id) + "," + o.sensor_id.str() + "," + o.obs_type + "," +
         o.meta.str() + "," + o.text;
}

std::vector<std::string> sorted_statistics(const std::vector<std::string>& parallelism_args) {
  job_registry registry;
  apps::register_jobs(registry);
  const auto& spec = registry.find("riot-stats");
  std::vector<std::string> args{"--dataset", "city", "--speed", all_at_once, "--messages", "3000", "--out",
                                (std::filesystem::temp_directory_path() / "riot-parallelism-stats").string()};
  args.insert(args.end(), parallelism_args.begin(), parallelism_args.end());
  auto options = apps::options_of(apps::app::stats, parse_job_arguments(spec, args));
  job j{"stats-statistics"};
  auto statistics = apps::stats_statistics(j, options, std::make_shared<apps::run_metrics>(0));
  auto got = statistics.map([](const observation& o) { return line_of(o); }).collect();
  tidemark::run(j, small_batches());
  auto lines = got.values();
  std::sort(lines.begin(), lines.end());
  return lines;
}

}  // namespace

BOOST_FIXTURE_TEST_CASE(etl_gives_the_same_rows_and_publications_at_any_parallelism, fixture) {
  // TAXI at scale 2: 2,000 messages, a medallion with many trips per minute (the table keeps the
  // last row per (minute, medallion), so each sensor's order must survive every task)
  const std::string per_task = "senml_parse=2,range_filter=1,bloom_filter=2,interpolation=3,join=2,annotate=1,"
                               "csv_to_senml=2";
  // the last trip of every (minute, medallion) in the file: its pickup time is what the table keeps
  std::map<std::pair<std::string, std::string>, std::string> last_pickup;
  for (const auto& l : lines_of("TAXI_sample_data_senml.csv"))
    last_pickup[{l.substr(0, l.find(',')), senml_value(l, "taxi_identifier")}] = senml_value(l, "pickup_datetime");
  BOOST_REQUIRE_EQUAL(last_pickup.size(), 947u);

  std::vector<std::string> published_1, table_1;
  int run_no = 0;
  for (const auto& setting : settings_of(per_task)) {
    const auto label = "etl-" + std::to_string(run_no++);
    io::mqtt_subscribe sub({at(), "taxidata", 0, 100000});
    auto args = setting;
    args.insert(args.end(), {"--dataset", "taxi", "--scale", "2", "--speed", all_at_once});
    run("riot-etl", args, label);
    auto published = receive_sorted(sub, 2000);
    auto table = table_sorted(out(label));
    BOOST_TEST_CONTEXT(label) {
      BOOST_TEST(published.size() == 2000u);
      BOOST_TEST(table.size() == 2 * last_pickup.size());
      // the copy-0 row of every key holds the key's last trip
      std::size_t checked = 0;
      for (const auto& row : table)
        for (const auto& [key, pickup] : {*last_pickup.begin(), *std::prev(last_pickup.end())})
          if (row.rfind(key.second + ",", 0) == 0 && row.find("," + key.first + ",") != std::string::npos) {
            ++checked;
            BOOST_TEST(row.find("," + pickup + ",") != std::string::npos, row << " should hold pickup " << pickup);
          }
      BOOST_TEST(checked == 2u);
      if (published_1.empty()) {
        published_1 = published;
        table_1 = table;
      } else {
        BOOST_TEST(first_difference(published_1, published) == "");
        BOOST_TEST(first_difference(table_1, table) == "");
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(stats_gives_the_same_statistics_at_any_parallelism) {
  // CITY, 3 passes: per-sensor block averages, Kalman + regressions and distinct counts
  const auto settings = settings_of("senml_parse=2,block_average=3,kalman=2,sliding_regression=1,plot=2");
  auto one = sorted_statistics(settings[0]);

  // block averages from the file: CITY averages blocks of 5 temperatures per sensor; the first
  // block of the first sensor ends with its 5th message (the passes repeat the file)
  auto lines = lines_of("SYS_sample_data_senml.csv");
  const auto sensor = senml_value(lines.front(), "source");
  std::vector<std::pair<std::int64_t, double>> temperatures;  // message id, value
  for (std::size_t pass = 0; pass < 3 && temperatures.size() < 5; ++pass)
    for (std::size_t i = 0; i < lines.size() && temperatures.size() < 5; ++i)
      if (senml_value(lines[i], "source") == sensor)
        temperatures.push_back({static_cast<std::int64_t>(pass * lines.size() + i + 1),
                                std::stod(senml_value(lines[i], "temperature"))});
  BOOST_REQUIRE_EQUAL(temperatures.size(), 5u);
  double mean = 0;
  for (auto& t : temperatures) mean += t.second / 5;
  const auto prefix = std::to_string(temperatures.back().first) + "," + sensor + ",AVG,";
  std::size_t found = 0;
  for (const auto& l : one)
    if (l.rfind(prefix, 0) == 0 && l.find(",temperature,") != std::string::npos) {
      ++found;
      BOOST_TEST(std::abs(std::stod(l.substr(l.rfind(',') + 1)) - mean) < 1e-9, l << " vs mean " << mean);
    }
  BOOST_TEST(found == 1u);
  // one distinct count per message
  BOOST_TEST(std::count_if(one.begin(), one.end(), [](const std::string& l) {
               return l.find(",all-sensors,DAC,") != std::string::npos;
             }) == 3000);

  for (std::size_t i = 1; i < settings.size(); ++i)
    BOOST_TEST_CONTEXT("setting " << i) { BOOST_TEST(first_difference(one, sorted_statistics(settings[i])) == ""); }
}

BOOST_AUTO_TEST_CASE(the_comparison_fails_when_a_stateful_task_is_keyed_wrongly) {
  // A test-only graph: Kalman smoothing keyed per field only (all sensors share one filter), at
  // two instances, against the app's own sensor + field keying. The outputs must differ.
  auto config = kalman_config::for_dataset(dataset::city);
  auto fan = senml_fanout_config::for_dataset(dataset::city, default_data_dir());
  auto smoothed = [&](bool keyed_right) {
    job j{"kalman"};
    auto lines = lines_of("SYS_sample_data_senml.csv");
    std::vector<numbered_line> numbered;
    for (std::size_t i = 0; i < lines.size(); ++i) numbered.push_back({static_cast<std::int64_t>(i + 1), lines[i]});
    auto obs = parse_senml(j.from_container(numbered).parallelism(1), fan, error_sink{});
    auto task = std::make_shared<const kalman_filter>(config);
    auto out = keyed_right ? kalman(obs, config)
                           : obs.key_by([](const observation& o) { return o.obs_type; })
                                 .process<observation>([task] { return task->initial(); },
                                                       [task](kalman_filter::state& s, const observation& o,
                                                              collector<observation>& c) {
                                                         if (auto r = task->process(s, o)) c(std::move(*r));
                                                       },
                                                       "kalman_by_field");
    out.parallelism(2);
    auto got = out.map([](const observation& o) { return line_of(o); }).collect();
    tidemark::run(j, small_batches());
    auto v = got.values();
    std::sort(v.begin(), v.end());
    return v;
  };
  auto right = smoothed(true), wrong = smoothed(false);
  BOOST_TEST(right.size() == wrong.size());
  BOOST_TEST(first_difference(right, wrong) != "");
}

BOOST_FIXTURE_TEST_CASE(train_gives_the_same_models_at_any_parallelism, fixture) {
  // the tick ranges from the file: 4 equal slices of CITY's event times
  auto lines = lines_of("SYS_sample_data_senml.csv");
  std::int64_t first = INT64_MAX, last = INT64_MIN;
  for (const auto& l : lines) {
    std::int64_t t = std::stoll(l.substr(0, l.find(',')));
    first = std::min(first, t);
    last = std::max(last, t);
  }
  std::set<std::string> expected;
  for (int i = 0; i < 4; ++i)
    for (std::string type : {"MLR", "DTC"})
      expected.insert("CITY-" + type + "-" + std::to_string(first + (last + 1 - first) * (i + 1) / 4) + ".model");

  std::map<std::string, std::string> models_1;
  int run_no = 0;
  for (const auto& setting :
       settings_of("range_scan=2,linear_regression_train=2,decision_tree_train=1,blob_upload=2")) {
    const auto label = "train-" + std::to_string(run_no++);
    auto args = setting;
    args.insert(args.end(), {"--dataset", "city", "--speed", all_at_once, "--runs", "4", "--interval-ms", "50"});
    run("riot-train", args, label);
    std::map<std::string, std::string> models;  // name -> bytes
    for (auto& e : std::filesystem::directory_iterator(out(label) + "/models")) {
      std::ifstream in(e.path(), std::ios::binary);
      models[e.path().filename().string()] = std::string(std::istreambuf_iterator<char>(in), {});
    }
    BOOST_TEST_CONTEXT(label) {
      std::set<std::string> names;
      for (auto& [name, bytes] : models) names.insert(name);
      BOOST_TEST(names == expected, boost::test_tools::per_element());
      if (models_1.empty())
        models_1 = models;
      else
        BOOST_TEST((models == models_1));
    }
  }
}

BOOST_FIXTURE_TEST_CASE(pred_gives_the_same_predictions_at_any_parallelism, fixture) {
  // residual errors against the block average (10 fares) over the file in message order
  auto lines = lines_of("TAXI_sample_data_senml.csv");
  std::map<std::int64_t, double> scale;  // message id -> what its error is relative to
  double sum = 0, mean = 0;
  bool have_mean = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    double fare = std::stod(senml_value(lines[i], "fare_amount"));
    sum += fare;
    if ((i + 1) % 10 == 0) {
      mean = sum / 10;
      sum = 0;
      have_mean = true;
    }
    scale[static_cast<std::int64_t>(i + 1)] = have_mean && mean != 0 ? mean : (fare != 0 ? fare : 1.0);
  }

  std::vector<std::string> published_1;
  int run_no = 0;
  for (const auto& setting : settings_of("decision_tree_classify=2,linear_regression_predict=1")) {
    const auto label = "pred-" + std::to_string(run_no++);
    io::mqtt_subscribe sub({at(), "taxipred", 0, 100000});
    auto args = setting;
    args.insert(args.end(), {"--dataset", "taxi", "--speed", all_at_once});
    run("riot-pred", args, label);
    auto published = receive_sorted(sub, 2000);
    BOOST_TEST_CONTEXT(label) {
      BOOST_TEST(published.size() == 2000u);
      std::size_t checked = 0;
      for (const auto& p : published) {
        if (p.find(",MLR,") == std::string::npos) continue;
        // "<msg>,<sensor>,MLR,obsVal:<time>,<distance>,<fare>,PRED:<p>,ERROR:<e>"
        auto msg = std::stoll(p.substr(0, p.find(',')));
        auto obs = p.substr(p.find("obsVal:") + 7);
        double fare = std::stod(obs.substr(obs.rfind(',', obs.find(",PRED:") - 1) + 1));
        double predicted = std::stod(p.substr(p.find(",PRED:") + 6));
        double error = std::stod(p.substr(p.find(",ERROR:") + 7));
        BOOST_TEST(std::abs(error - (fare - predicted) / scale.at(msg)) < 1e-4 * (1 + std::abs(error)), p);
        ++checked;
      }
      BOOST_TEST(checked == 1000u);
      if (published_1.empty())
        published_1 = published;
      else
        BOOST_TEST(first_difference(published_1, published) == "");
    }
  }
}

BOOST_FIXTURE_TEST_CASE(parallelism_options_are_checked_and_part_of_the_fingerprint, fixture) {
  const auto& spec = registry.find("riot-etl");
  auto options = [&](std::vector<std::string> args) { return parse_job_arguments(spec, args); };
  auto error_of = [&](std::vector<std::string> args) {
    try {
      apps::options_of(apps::app::etl, options(args));
    } catch (const std::exception& e) {
      return std::string{e.what()};
    }
    return std::string{};
  };
  BOOST_TEST(error_of({"--task-parallelism", "parse=2"}).find("no task 'parse'") != std::string::npos);
  BOOST_TEST(error_of({"--task-parallelism", "join=0"}).find("join=0") != std::string::npos);
  BOOST_TEST(error_of({"--task-parallelism", "mqtt_publish=2"}).find("'mqtt_publish' runs one instance") !=
             std::string::npos);
  BOOST_TEST(error_of({"--parallelism", "0"}).find("--parallelism") != std::string::npos);
  auto ok = apps::options_of(apps::app::etl, options({"--parallelism", "2", "--task-parallelism", "join=3"}));
  BOOST_TEST(ok.parallelism.of("join") == 3u);
  BOOST_TEST(ok.parallelism.of("annotate") == 2u);
  // a checkpoint's fingerprint is the plan's text and the options' text (checkpointing.cpp), so a
  // resume at another parallelism finds no checkpoint of its job: both differ
  auto one = options({"--out", out("plan")}), two = options({"--out", out("plan"), "--parallelism", "2"}),
       mix = options({"--out", out("plan"), "--task-parallelism", "join=2"});
  BOOST_TEST(two.text() != one.text());
  BOOST_TEST(mix.text() != one.text());
  auto plan_of = [&](const job_options& o) {
    auto j = spec.build(o);
    return to_text(j.graph(), compile(j.graph()));
  };
  BOOST_TEST(plan_of(two) != plan_of(one));
  BOOST_TEST(plan_of(mix) != plan_of(one));
  BOOST_TEST(plan_of(one) == plan_of(options({"--out", out("plan")})));
}
