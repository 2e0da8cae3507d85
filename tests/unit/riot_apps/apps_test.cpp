// ETL, STATS, TRAIN and PRED end to end on the CITY and TAXI samples, run as the registered jobs
// through a real mosquitto broker: record counts at each stage, specific outputs (annotated fields
// of known sensors, model notices, predictions after a model swap) and the MQTT traffic a
// subscriber sees.
#define BOOST_TEST_MODULE riot_apps
#include <boost/test/unit_test.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "../../support/mosquitto_broker.hpp"
#include "tidemark/runtime/job_registry.hpp"
#include "tidemark/riot/apps/jobs.hpp"
#include "tidemark/riot/io/blob_tasks.hpp"
#include "tidemark/riot/io/mqtt_tasks.hpp"
#include "tidemark/riot/io/table_tasks.hpp"
#include "tidemark/riot/model_codec.hpp"
#include "tidemark/riot/prediction.hpp"

using namespace std::chrono_literals;
using namespace tidemark;
using namespace tidemark::riot;

namespace {

struct fixture {
  test::mosquitto_broker broker;
  test::temp_dir dir{"riot-apps"};
  job_registry registry;
  fixture() { apps::register_jobs(registry); }

  io::mqtt_broker at() const {
    io::mqtt_broker b;
    b.port = broker.port();
    return b;
  }

  /// Runs a registered job with `args` plus this broker and an output directory of its own.
  job_result run(const std::string& name, std::vector<std::string> args) {
    const auto& spec = registry.find(name);
    args.insert(args.end(), {"--broker", broker.address(), "--out", out(name)});
    run_options ro;
    ro.linger = 1ms;
    return run_registered(spec, parse_job_arguments(spec, args), ro);
  }
  std::string out(const std::string& name) const { return dir / name; }
};

std::map<std::string, operator_metrics> by_name(const job_result& r) {
  std::map<std::string, operator_metrics> m;
  for (auto& o : r.per_operator()) m[o.name] = o;
  return m;
}

/// Every message waiting on the subscription, waiting until `n` arrived (or 10 s passed).
std::vector<std::string> receive(io::mqtt_subscribe& sub, std::size_t n) {
  std::vector<std::string> got;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (got.size() < n && std::chrono::steady_clock::now() < deadline)
    if (auto m = sub.poll(50ms)) got.push_back(m->payload);
  while (auto m = sub.poll(200ms)) got.push_back(m->payload);  // and nothing more
  return got;
}

std::size_t table_rows(const std::string& out) {
  auto conn = persistence::wt_connection::open(out + "/store", "log=(enabled=true)");
  io::table_range_scan scan(conn, {"archive"});
  auto rows = scan.process(std::string_view{}, std::string_view{"\x7f"});
  return rows.empty() ? 0 : static_cast<std::size_t>(std::count(rows.begin(), rows.end(), '\n')) + 1;
}

const std::string all_at_once = "1e9";  // --speed: the recorded timing compressed to nothing

}  // namespace

BOOST_FIXTURE_TEST_CASE(etl_on_city_annotates_archives_and_publishes_every_message, fixture) {
  io::mqtt_subscribe sub({at(), "citydata", 0, 100000});
  auto r = run("riot-etl", {"--dataset", "city", "--speed", all_at_once});
  auto ops = by_name(r);
  BOOST_TEST(ops["replay"].events_out == 1000u);
  BOOST_TEST(ops["senml_parse"].events_out == 5000u);  // 5 observables per message
  BOOST_TEST(ops["range_filter"].events_out == 5000u);
  BOOST_TEST(ops["interpolation"].events_out == 5000u);
  BOOST_TEST(ops["join"].events_out == 1000u);
  BOOST_TEST(ops["annotate"].events_out == 1000u);
  BOOST_TEST(ops["csv_to_senml"].events_out == 1000u);
  BOOST_TEST(ops["mqtt_publish"].events_in == 1000u);
  BOOST_TEST(ops["mqtt_publish"].extra["task_errors"] == 0.0);
  BOOST_TEST(table_rows(out("riot-etl")) == 1000u);

  auto got = receive(sub, 1000);
  BOOST_REQUIRE_EQUAL(got.size(), 1000u);
  // message 1: sensor ci4lr75sl000802ypo4qrcjda23 is "building1,solar" in city-metadata.txt; its
  // light reading 0 is out of range (1345..26282) with no earlier value to interpolate from, so
  // the published record leaves light out
  const auto& first = got.front();
  BOOST_TEST(first.find(R"("sv":"ci4lr75sl000802ypo4qrcjda23")") != std::string::npos);
  BOOST_TEST(first.find(R"({"n":"location","u":"string","sv":"building1"})") != std::string::npos, first);
  BOOST_TEST(first.find(R"({"n":"type","u":"string","sv":"solar"})") != std::string::npos, first);
  BOOST_TEST(first.find(R"("n":"light")") == std::string::npos);
  BOOST_TEST(first.find(R"({"n":"temperature","u":"far","v":8})") != std::string::npos, first);
  BOOST_TEST(first.find(R"("bt":1422748800000)") != std::string::npos);
  // every published record is annotated
  for (const auto& p : got) BOOST_TEST(p.find(R"("n":"location")") != std::string::npos);

  auto report = out("riot-etl") + "/report.json";
  BOOST_TEST(std::filesystem::exists(report));
}

BOOST_FIXTURE_TEST_CASE(etl_memory_samples_say_what_the_store_cache_and_latency_record_hold,
                        fixture) {
  // 1,000 messages at 1,000 msg/s: about five samples (one per 200 ms) while rows reach the store
  run("riot-etl", {"--dataset", "city", "--rate", "1000"});
  auto report = nlohmann::json::parse(std::ifstream(out("riot-etl") + "/report.json"));
  const auto& samples = report["resources"];
  BOOST_REQUIRE_GE(samples.size(), 3u);
  double cache_max = 0, record_before = 0;
  for (const auto& s : samples) {
    const double cache = s["cache_mb"], record = s["record_mb"], rss = s["rss_mb"];
    cache_max = std::max(cache_max, cache);
    BOOST_TEST(cache <= rss);
    BOOST_TEST(cache <= 256.0);           // the store's configured cache_size
    BOOST_TEST(record >= record_before);  // latencies are only added
    record_before = record;
  }
  BOOST_TEST(cache_max > 0.0);  // the archive's rows are in the store's cache
  // the record holds a latency (8 bytes) per delivery: some by the last sample, at most 1,000 per
  // output (not the vectors' capacities)
  BOOST_TEST(record_before > 0.0);
  BOOST_TEST(record_before <= report["outputs"].size() * 1000 * 8 / 1e6 + 1e-12);
}

BOOST_FIXTURE_TEST_CASE(a_negative_warmup_is_refused_with_the_option_and_value, fixture) {
  BOOST_CHECK_EXCEPTION(
      run("riot-etl", {"--dataset", "city", "--warmup", "-5"}), job_error, [](const job_error& e) {
        return std::string{e.what()} == "riot-etl: --warmup must be 0 to 86400 seconds, not -5";
      });
}

BOOST_FIXTURE_TEST_CASE(etl_on_taxi_leaves_out_values_the_range_filter_rejected, fixture) {
  io::mqtt_subscribe sub({at(), "taxidata", 0, 100000});
  auto r = run("riot-etl", {"--dataset", "taxi", "--speed", all_at_once, "--scale", "2"});
  auto ops = by_name(r);
  BOOST_TEST(ops["replay"].events_out == 2000u);
  BOOST_TEST(ops["senml_parse"].events_out == 20000u);  // 10 observables per message
  BOOST_TEST(ops["join"].events_out == 2000u);
  BOOST_TEST(ops["annotate"].events_out == 2000u);  // the copies' ids are annotated too
  // the archive's key is (time, medallion): a medallion with two trips ending in the same minute
  // keeps the last one; the sample has 947 distinct pairs, once per copy
  std::set<std::string> pairs;
  std::ifstream in(default_data_dir() + "/TAXI_sample_data_senml.csv");
  for (std::string l; std::getline(in, l);) {
    auto at = l.find(R"("n":"taxi_identifier","sv":")") + 28;
    pairs.insert(l.substr(0, l.find(',')) + l.substr(at, l.find('"', at) - at));
  }
  BOOST_TEST(pairs.size() == 947u);
  BOOST_TEST(table_rows(out("riot-etl")) == 2 * pairs.size());
  auto got = receive(sub, 2000);
  BOOST_REQUIRE_EQUAL(got.size(), 2000u);
  // the first trip of medallion 149298F6... ("travel,henry,Indianapolis"): tip 0.00 and tolls
  // 0.00 are below their ranges and TAXI interpolates only trip time and distance
  const auto& first = got.front();
  BOOST_TEST(first.find(R"("sv":"149298F6D390FA640E80B41ED31199C5")") != std::string::npos, first);
  BOOST_TEST(first.find(R"("sv":"travel")") != std::string::npos, first);
  BOOST_TEST(first.find(R"("sv":"henry")") != std::string::npos, first);
  BOOST_TEST(first.find(R"("sv":"Indianapolis")") != std::string::npos, first);
  BOOST_TEST(first.find(R"("n":"tip_amount")") == std::string::npos);
  BOOST_TEST(first.find(R"("n":"tolls_amount")") == std::string::npos);
  BOOST_TEST(first.find(R"({"n":"fare_amount","u":"dollar","v":29})") != std::string::npos, first);
  std::size_t copies = 0;
  for (const auto& p : got) copies += p.find(R"(-1","n")") != std::string::npos || p.find(R"(-1"})") != std::string::npos;
  BOOST_TEST(copies == 1000u);  // the second copy's medallions end in "-1"
}

BOOST_FIXTURE_TEST_CASE(stats_on_city_plots_zips_and_stores_every_window, fixture) {
  // five passes, so every sensor has whole blocks of 5 values and more than 10 for the regression
  auto r = run("riot-stats", {"--dataset", "city", "--speed", all_at_once, "--messages", "5000"});
  auto ops = by_name(r);
  BOOST_TEST(ops["senml_parse"].events_out == 25000u);
  BOOST_TEST(ops["distinct_count"].events_out == 5000u);  // one estimate per message
  // each sensor's field has 5 c values (c = its messages in the sample): c blocks of 5
  BOOST_TEST(ops["block_average"].events_out == 5000u);
  // the regression emits once more than 10 values arrived: sum over sensors of 5 * max(0, 5c - 10)
  std::map<std::string, int> per_sensor;
  std::ifstream in(default_data_dir() + "/SYS_sample_data_senml.csv");
  for (std::string l; std::getline(in, l);) {
    auto at = l.find(R"("n":"source","sv":")") + 19;
    ++per_sensor[l.substr(at, l.find('"', at) - at)];
  }
  std::uint64_t slr = 0;
  for (auto& [s, c] : per_sensor) slr += 5 * static_cast<std::uint64_t>(std::max(0, 5 * c - 10));
  BOOST_TEST(ops["sliding_regression"].events_out == slr);
  auto accumulated = 5000u + 5000u + slr;
  BOOST_TEST(ops["accumulate"].events_in == accumulated);
  BOOST_TEST(ops["accumulate"].events_out == accumulated / 20);  // CITY's window of 20
  auto charts = ops["plot"].events_out;
  BOOST_TEST(charts == accumulated / 20);  // one chart per window
  auto archives = (charts + 9) / 10;       // 10 charts per archive, the last one shorter
  BOOST_TEST(ops["zip"].events_out == archives);
  std::size_t blobs = 0;
  for (auto& e : std::filesystem::directory_iterator(out("riot-stats") + "/blobs"))
    blobs += e.path().filename().string().rfind("stats-stats-0-", 0) == 0;
  BOOST_TEST(blobs == archives);
}

BOOST_FIXTURE_TEST_CASE(train_on_city_and_taxi_uploads_models_and_announces_them, fixture) {
  for (std::string ds : {"CITY", "TAXI"}) {
    io::mqtt_subscribe sub({at(), "models/" + ds, 0, 1000});
    auto lower = ds == "CITY" ? "city" : "taxi";
    auto r = run("riot-train", {"--dataset", lower, "--speed", all_at_once, "--runs", "4", "--interval-ms", "50"});
    auto ops = by_name(r);
    BOOST_TEST(ops["timer"].events_out == 4u);
    BOOST_TEST(ops["range_scan"].events_out == 4u);
    auto notices = receive(sub, ops["model_notice"].events_in);
    BOOST_TEST(notices.size() == ops["model_notice"].events_in);
    BOOST_TEST(notices.size() >= 2u);
    io::blob_download blobs({io::directory_blobs{out("riot-train") + "/blobs", false}});
    for (const auto& n : notices) {
      BOOST_TEST(n.rfind(ds + "-", 0) == 0u, n);
      auto bytes = blobs.process(n);
      BOOST_REQUIRE(bytes.has_value());
      if (n.find("-MLR-") != std::string::npos)
        BOOST_TEST(model_codec::decode_linear_regression(*bytes).has_value());
      else
        BOOST_TEST(model_codec::decode_decision_tree(*bytes).has_value());
    }
    std::filesystem::remove_all(out("riot-train"));
  }
}

BOOST_FIXTURE_TEST_CASE(pred_on_city_swaps_in_an_announced_model_while_running, fixture) {
  io::mqtt_subscribe sub({at(), "citypred", 0, 100000});
  // a regression model that predicts 1234.5 whatever the inputs, announced after 1 s of a 3 s run
  linear_regression_model constant;
  constant.attributes = {"temperature", "humidity", "light", "dust"};
  constant.intercept = 1234.5;
  constant.coefficients = {0, 0, 0, 0};
  std::thread announcer([&] {
    std::this_thread::sleep_for(1s);
    io::open_blob_container(io::directory_blobs{out("riot-pred") + "/blobs", false})
        ->put("CITY-MLR-9.model", model_codec::encode(constant));
    io::mqtt_publish({at(), "models/CITY"}).process("CITY-MLR-9.model");
  });
  auto r = run("riot-pred", {"--dataset", "city", "--rate", "1000", "--messages", "3000"});
  announcer.join();
  auto ops = by_name(r);
  BOOST_TEST(ops["pred_parse"].events_out == 3000u);
  BOOST_TEST(ops["decision_tree_classify"].events_out == 3000u);
  BOOST_TEST(ops["linear_regression_predict"].events_out == 3000u);
  BOOST_TEST(ops["linear_regression_predict"].extra["model_swaps"] == 1.0);
  BOOST_TEST(ops["decision_tree_classify"].extra["model_swaps"] == 0.0);
  auto got = receive(sub, 6000);
  BOOST_REQUIRE_EQUAL(got.size(), 6000u);
  // MLR outputs in message order: trained-model predictions, then 1234.5 from the swap on
  std::map<long, bool> swapped;
  std::size_t dtc = 0;
  for (const auto& p : got) {
    if (p.find(",DTC,") != std::string::npos) {
      ++dtc;
      continue;
    }
    swapped[std::stol(p.substr(0, p.find(',')))] = p.find(",PRED:1234.5,") != std::string::npos;
  }
  BOOST_TEST(dtc == 3000u);
  BOOST_REQUIRE_EQUAL(swapped.size(), 3000u);
  auto first = std::find_if(swapped.begin(), swapped.end(), [](auto& kv) { return kv.second; });
  BOOST_REQUIRE(first != swapped.end());
  BOOST_TEST(first->first > 500);  // about 1000 messages went out in the first second
  BOOST_TEST(first->first < 2500);
  BOOST_TEST(std::all_of(first, swapped.end(), [](auto& kv) { return kv.second; }));
}

BOOST_FIXTURE_TEST_CASE(pred_on_taxi_classifies_and_predicts_each_trip, fixture) {
  io::mqtt_subscribe sub({at(), "taxipred", 0, 100000});
  auto r = run("riot-pred", {"--dataset", "taxi", "--speed", all_at_once});
  auto ops = by_name(r);
  BOOST_TEST(ops["pred_parse"].events_out == 1000u);
  auto got = receive(sub, 2000);
  BOOST_REQUIRE_EQUAL(got.size(), 2000u);
  std::size_t labelled = 0;
  const std::set<std::string> labels{"BAD", "GOOD", "VERYGOOD", "EXCELLENT"};
  for (const auto& p : got)
    if (p.find(",DTC,") != std::string::npos) labelled += labels.count(p.substr(p.rfind(",RES:") + 5));
  BOOST_TEST(labelled == 1000u);
  // message 1 is the trip of 1440 s, 9.08 miles, fare 29.00
  BOOST_TEST(std::count_if(got.begin(), got.end(), [](const std::string& p) {
               return p.rfind("1,149298F6D390FA640E80B41ED31199C5,MLR,obsVal:1440,9.08,29.00,PRED:", 0) == 0;
             }) == 1);
}

BOOST_FIXTURE_TEST_CASE(grid_has_nothing_to_predict_and_says_so, fixture) {
  BOOST_CHECK_EXCEPTION(run("riot-train", {"--dataset", "grid"}), std::exception, [](const std::exception& e) {
    return std::string{e.what()}.find("GRID") != std::string::npos;
  });
}
