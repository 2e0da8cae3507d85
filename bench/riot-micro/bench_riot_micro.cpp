// Benchmark `riot-micro`: RIoTBench's micro-benchmark per task on one thread. Each task's process()
// runs in a loop over inputs built from the real sample data for a fixed time (peak throughput;
// --repeats such runs, their median and range reported), then once more with every call timed
// (latency percentiles); compared with the paper's Apache Storm peak rates (one thread on a 2.2 GHz
// core). With --runtime it also runs the paper's harness, source -> task -> sink, through
// tidemark::run on one scheduler thread for the tasks that have stream adapters.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>
#include <numeric>
#include <set>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "support/bench_support.hpp"
#include "tidemark/riot/filter.hpp"
#include "tidemark/riot/model_codec.hpp"
#include "tidemark/riot/parse.hpp"
#include "tidemark/riot/prediction.hpp"
#include "tidemark/riot/senml.hpp"
#include "tidemark/riot/statistics.hpp"
#include "tidemark/riot/streams.hpp"
#include "tidemark/runtime/runtime.hpp"

using namespace tidemark::riot;
using clock_type = std::chrono::steady_clock;

namespace {

/// The paper's Storm figure for a task: a measured peak rate, or only a floor ("most tasks can
/// support 3,000 msg/sec or higher"), against which a multiple is an upper bound.
struct storm_figure {
  double msg_s;
  std::string note;  // how the paper states it
  bool floor;
};

struct task_case {
  std::string code;          // the paper's task code
  std::string task;          // our class
  std::string input;         // what one message is
  storm_figure storm;
  std::size_t messages;      // distinct inputs (the loop cycles over them)
  std::function<std::uint64_t(std::size_t)> run;  // processes input i, returns something to keep
  std::function<std::uint64_t()> errors;
};

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(l);
  return out;
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

long rss_kib() {
  std::ifstream in("/proc/self/statm");
  long pages = 0, resident = 0;
  in >> pages >> resident;
  return resident * 4;
}

// The shared inputs, built once from the sample files.
struct inputs {
  std::vector<std::string> city_json;       // SenML payloads
  std::vector<observation> city_obs;        // fanned out
  std::vector<std::string> city_csv;        // joined rows: timestamp,source,lon,lat,5 observables
  std::vector<std::string> city_csv_ann;    // the same, annotated (location,type)
  std::vector<std::string> taxi_rows;       // trip_time,distance,fare (filename.txt)
  std::vector<std::string> taxi_batches;    // 300 rows each (MODEL_UPDATE_FREQUENCY for TAXI)
  std::string xml;
};

inputs load(const std::string& dir) {
  inputs in;
  senml_parse parse;
  senml_fanout fanout(senml_fanout_config::for_dataset(dataset::city, dir));
  annotate ann(annotate_config::for_dataset(dataset::city, dir));
  std::int64_t id = 0;
  for (auto& l : read_lines(dir + "/SYS_sample_data_senml.csv")) {
    auto payload = std::string(senml_payload(l));
    auto rec = parse.process(payload);
    if (!rec) throw std::runtime_error(rec.error().message);
    std::vector<observation> obs;
    if (!fanout.process(*rec, ++id, obs)) throw std::runtime_error("fan-out failed");
    std::string row = obs.front().meta.str();
    for (auto& o : obs) row += "," + o.text;
    in.city_json.push_back(payload);
    in.city_obs.insert(in.city_obs.end(), obs.begin(), obs.end());
    auto annotated = ann.process(row);
    if (!annotated) throw std::runtime_error(annotated.error().message);
    in.city_csv.push_back(row);
    in.city_csv_ann.push_back(*annotated);
  }
  in.taxi_rows = read_lines(dir + "/filename.txt");
  for (std::size_t i = 0; i + 300 <= in.taxi_rows.size(); i += 300) {
    std::string batch;
    for (std::size_t k = i; k < i + 300; ++k) batch += in.taxi_rows[k] + "\n";
    in.taxi_batches.push_back(std::move(batch));
  }
  for (auto& l : read_lines(dir + "/tempSAX.xml")) in.xml += l + "\n";
  return in;
}

template <class R>
std::uint64_t ok(const R& r) {
  return r.has_value() ? 1 : 0;
}

std::vector<task_case> make_cases(const inputs& in, const std::string& dir) {
  std::vector<task_case> cases;
  auto none = [] { return std::uint64_t{0}; };
  const storm_figure most{3000, "a floor: most tasks >= 3,000 msg/s", true};
  auto stated = [](double msg_s, const char* note) { return storm_figure{msg_s, note, false}; };
  const auto about_68k = stated(68000, "about 68,000 msg/s");

  auto sml = std::make_shared<senml_parse>();
  cases.push_back({"SML", "senml_parse", "CITY SenML message", most, in.city_json.size(),
                   [sml, &in](std::size_t i) { return ok(sml->process(in.city_json[i])); },
                   [sml] { return sml->errors().count(); }});
  auto c2s = std::make_shared<csv_to_senml>(csv_to_senml_config::for_dataset(dataset::city, dir));
  cases.push_back({"C2S", "csv_to_senml", "annotated CITY CSV row", most, in.city_csv_ann.size(),
                   [c2s, &in](std::size_t i) { return c2s->process(in.city_csv_ann[i])->size(); },
                   [c2s] { return c2s->errors().count(); }});
  auto xml = std::make_shared<xml_parse>();
  cases.push_back({"XML", "xml_parse", "tempSAX.xml document (6.4 kB)", stated(310, "310 msg/s"), 1,
                   [xml, &in](std::size_t) { return xml->process(in.xml)->elements; },
                   [xml] { return xml->errors().count(); }});
  auto ann = std::make_shared<annotate>(annotate_config::for_dataset(dataset::city, dir));
  cases.push_back({"ANN", "annotate", "CITY CSV row", about_68k, in.city_csv.size(),
                   [ann, &in](std::size_t i) { return ann->process(in.city_csv[i])->size(); },
                   [ann] { return ann->errors().count(); }});

  std::vector<std::string> ids;
  for (auto& o : in.city_obs) ids.push_back(o.sensor_id.str());
  auto blf = std::make_shared<bloom_filter_check>(
      bloom_filter_check::from_ids(bloom_filter_config::for_dataset(dataset::city), ids));
  auto obs = std::make_shared<std::vector<observation>>(in.city_obs);
  cases.push_back({"BLF", "bloom_filter_check", "CITY observation (20 M ids, 1 % fpp filter)",
                   about_68k, obs->size(),
                   [blf, obs](std::size_t i) { return std::uint64_t{blf->process((*obs)[i])}; },
                   none});
  auto rgf = std::make_shared<range_filter>(range_filter_config::for_dataset(dataset::city));
  cases.push_back({"RGF", "range_filter", "CITY observation", about_68k, obs->size(),
                   [rgf, obs](std::size_t i) { return std::uint64_t{*rgf->process((*obs)[i])}; },
                   [rgf] { return rgf->errors().count(); }});

  auto acc = std::make_shared<accumulator>(accumulator_config::for_dataset(dataset::city));
  cases.push_back({"ACC", "accumulator", "CITY observation (window 20)", about_68k,
                   in.city_obs.size(),
                   [acc, &in](std::size_t i) {
                     auto r = acc->process(in.city_obs[i]);
                     return std::uint64_t{r.has_value() && r->has_value()};
                   },
                   [acc] { return acc->errors().count(); }});
  auto avg = std::make_shared<block_average>(block_average_config::for_dataset(dataset::city));
  cases.push_back({"AVG", "block_average", "CITY observation (per sensor+field, window 5)", most,
                   in.city_obs.size(),
                   [avg, &in](std::size_t i) {
                     return std::uint64_t{avg->process(in.city_obs[i]).has_value()};
                   },
                   none});
  auto dac = std::make_shared<distinct_count>(distinct_count_config::for_dataset(dataset::city));
  cases.push_back(
      {"DAC", "distinct_count", "CITY sensor id (1024 buckets)", about_68k, in.city_obs.size(),
       [dac, &in](std::size_t i) {
         return static_cast<std::uint64_t>(dac->process(in.city_obs[i].sensor_id.view()));
       },
       none});
  auto kal = std::make_shared<kalman_filter>(kalman_config::for_dataset(dataset::city));
  cases.push_back(
      {"KAL", "kalman_filter", "CITY observation (per sensor+field)", about_68k, obs->size(),
       [kal, obs](std::size_t i) { return std::uint64_t{kal->process((*obs)[i])}; }, none});
  auto som = std::make_shared<second_order_moment>(second_order_moment_config::for_dataset(dataset::city));
  cases.push_back({"SOM", "second_order_moment", "CITY observation value (10 estimators)", most,
                   in.city_obs.size(),
                   [som, &in](std::size_t i) {
                     return static_cast<std::uint64_t>(som->process(in.city_obs[i].text));
                   },
                   none});
  auto inp = std::make_shared<interpolation>(interpolation_config::for_dataset(dataset::city));
  cases.push_back({"INP", "interpolation", "CITY observation, every 7th missing (window 5)", most,
                   obs->size(),
                   [inp, obs](std::size_t i) {
                     auto& o = (*obs)[i];
                     o.missing = i % 7 == 0;
                     return std::uint64_t{inp->process(o)};
                   },
                   none});
  auto slr = std::make_shared<sliding_regression>(sliding_regression_config::for_dataset(dataset::city));
  cases.push_back({"SLR", "sliding_regression", "CITY observation (train 10, predict 10)", most,
                   in.city_obs.size(),
                   [slr, &in](std::size_t i) {
                     return std::uint64_t{slr->process(in.city_obs[i]).has_value()};
                   },
                   none});

  std::string all_rows;
  for (auto& r : in.taxi_rows) all_rows += r + "\n";
  auto taxi_dt = decision_tree_config::for_dataset(dataset::taxi);
  auto tree = model_codec::decode_decision_tree(*decision_tree_train(taxi_dt).process(all_rows));
  auto dtc = std::make_shared<decision_tree_classify>(taxi_dt, *tree);
  cases.push_back({"DTC", "decision_tree_classify", "TAXI CSV row", most, in.taxi_rows.size(),
                   [dtc, &in](std::size_t i) { return dtc->process(in.taxi_rows[i])->size(); },
                   [dtc] { return dtc->errors().count(); }});
  auto dtt = std::make_shared<decision_tree_train>(taxi_dt);
  cases.push_back({"DTT", "decision_tree_train", "TAXI batch of 300 rows -> model bytes",
                   stated(50, "50 msg/s"), in.taxi_batches.size(),
                   [dtt, &in](std::size_t i) { return dtt->process(in.taxi_batches[i])->size(); },
                   [dtt] { return dtt->errors().count(); }});
  auto taxi_lr = linear_regression_config::for_dataset(dataset::taxi);
  auto lr = model_codec::decode_linear_regression(*linear_regression_train(taxi_lr).process(all_rows));
  auto mlr = std::make_shared<linear_regression_predict>(taxi_lr, *lr);
  cases.push_back({"MLR", "linear_regression_predict", "TAXI CSV row", most, in.taxi_rows.size(),
                   [mlr, &in](std::size_t i) {
                     return static_cast<std::uint64_t>(*mlr->process(in.taxi_rows[i]));
                   },
                   [mlr] { return mlr->errors().count(); }});
  auto mlt = std::make_shared<linear_regression_train>(taxi_lr);
  cases.push_back({"MLT", "linear_regression_train", "TAXI batch of 300 rows -> model bytes",
                   stated(70, "70 msg/s"), in.taxi_batches.size(),
                   [mlt, &in](std::size_t i) { return mlt->process(in.taxi_batches[i])->size(); },
                   [mlt] { return mlt->errors().count(); }});
  return cases;
}

double percentile_of(const std::vector<double>& sorted, double p) {
  auto idx = static_cast<std::size_t>(std::ceil(p / 100 * static_cast<double>(sorted.size()))) ;
  return sorted[std::min(sorted.size() - 1, idx == 0 ? 0 : idx - 1)];
}

struct throughput_run {
  std::uint64_t messages;
  double wall_seconds;
  double cpu_seconds;  // of the task's thread
};

/// Peak throughput: untimed calls of the task for `seconds`, in chunks, the clock read once per
/// chunk; `i` is the next input and wraps around the task's inputs.
throughput_run run_for(const task_case& c, double seconds, std::size_t& i, std::uint64_t& sink) {
  std::uint64_t done = 0;
  const auto cpu0 = thread_cpu_seconds();
  const auto t0 = clock_type::now();
  const auto deadline = t0 + std::chrono::duration<double>(seconds);
  constexpr std::size_t chunk = 64;
  clock_type::time_point now;
  do {
    for (std::size_t k = 0; k < chunk; ++k) {
      sink += c.run(i);
      if (++i == c.messages) i = 0;
    }
    done += chunk;
    now = clock_type::now();
  } while (now < deadline);
  return {done, std::chrono::duration<double>(now - t0).count(), thread_cpu_seconds() - cpu0};
}

nlohmann::json measure(const task_case& c, double seconds, int repeats, std::uint64_t& sink) {
  // Warm-up: one pass over the inputs (fills keyed state, caches, allocator).
  for (std::size_t i = 0; i < c.messages; ++i) sink += c.run(i);
  auto rss_before = rss_kib();

  std::size_t i = 0;
  std::uint64_t done = 0;
  double wall = 0, cpu = 0;
  std::vector<double> per_wall_s, per_cpu_s;
  for (int r = 0; r < repeats; ++r) {
    const auto run = run_for(c, seconds, i, sink);
    done += run.messages;
    wall += run.wall_seconds;
    cpu += run.cpu_seconds;
    per_wall_s.push_back(static_cast<double>(run.messages) / run.wall_seconds);
    // On a shared machine the thread does not get the whole core; messages per CPU-second of
    // the task's thread is the rate one dedicated core would sustain.
    per_cpu_s.push_back(static_cast<double>(run.messages) / run.cpu_seconds);
  }
  const auto throughput = tidemark::bench::spread(per_wall_s);
  const auto per_cpu = tidemark::bench::spread(per_cpu_s);
  const double throughput_median = throughput["median"], per_cpu_median = per_cpu["median"];

  // Latency: every call timed, for a quarter of the time (at most 200 000 calls).
  std::vector<double> lat;
  auto lat_deadline = clock_type::now() + std::chrono::duration<double>(seconds / 4);
  while (lat.size() < 200000) {
    auto a = clock_type::now();
    sink += c.run(i);
    auto b = clock_type::now();
    lat.push_back(std::chrono::duration<double, std::nano>(b - a).count());
    if (++i == c.messages) i = 0;
    if (b > lat_deadline && lat.size() >= 20) break;
  }
  std::sort(lat.begin(), lat.end());
  auto mean = std::accumulate(lat.begin(), lat.end(), 0.0) / static_cast<double>(lat.size());
  double var = 0;
  for (auto x : lat) var += (x - mean) * (x - mean);
  auto stddev = std::sqrt(var / static_cast<double>(lat.size()));

  nlohmann::json j;
  j["code"] = c.code;
  j["task"] = c.task;
  j["message"] = c.input;
  j["distinct_inputs"] = c.messages;
  j["messages"] = done;
  j["seconds"] = wall;
  j["runs"] = repeats;
  j["throughput_msg_s"] = throughput_median;
  j["throughput_msg_s_spread"] = throughput;
  j["cpu_utilization"] = cpu / wall;
  j["throughput_msg_per_cpu_s"] = per_cpu_median;
  j["throughput_msg_per_cpu_s_spread"] = per_cpu;
  j["rss_growth_kib"] = rss_kib() - rss_before;
  j["errors"] = c.errors();
  j["latency_ns"] = {{"samples", lat.size()},         {"mean", mean},
                     {"p50", percentile_of(lat, 50)}, {"p90", percentile_of(lat, 90)},
                     {"p99", percentile_of(lat, 99)}, {"p999", percentile_of(lat, 99.9)},
                     {"max", lat.back()},             {"stddev", stddev}};
  j["storm_msg_s"] = c.storm.msg_s;
  j["storm_note"] = c.storm.note;
  j["storm_is_floor"] = c.storm.floor;
  // against a floor the paper's real rate is higher and the multiple lower than shown
  j["speedup_vs_storm_is"] = c.storm.floor ? "an upper bound" : "against the paper's figure";
  j["speedup_vs_storm"] = throughput_median / c.storm.msg_s;
  j["speedup_per_cpu_vs_storm"] = per_cpu_median / c.storm.msg_s;
  return j;
}

// source (cycling over `inputs`, n elements) -> build(source) -> count sink, on one scheduler
// thread; the source copies each element, as a spout would emit it. `repeats` runs, each a fresh
// job; every run must emit as many outputs as the first.
template <class In, class Build>
nlohmann::json through_runtime(const std::string& code, std::shared_ptr<const std::vector<In>> inputs,
                               std::uint64_t n, int repeats, Build build) {
  std::vector<double> per_wall_s, per_cpu_s;
  std::uint64_t outputs = 0;
  for (int rep = 0; rep < repeats; ++rep) {
    tidemark::job j("riot-micro-" + code);
    auto source = j.from_generator(
        [inputs, n, i = std::uint64_t{0}]() mutable -> std::optional<In> {
          if (i == n) return std::nullopt;
          return (*inputs)[i++ % inputs->size()];
        },
        "source");
    auto out = build(source).count("sink");
    tidemark::run_options opts;
    opts.threads = 1;
    const auto cpu0 = tidemark::bench::process_cpu_seconds();
    const auto r = tidemark::run(j, opts);
    const auto cpu = tidemark::bench::process_cpu_seconds() - cpu0;
    if (rep == 0) outputs = out.value();
    if (out.value() != outputs)
      throw std::runtime_error("runtime harness, " + code + ": run " + std::to_string(rep + 1) + " emitted " +
                               std::to_string(out.value()) + " outputs, the first " + std::to_string(outputs));
    per_wall_s.push_back(static_cast<double>(n) / r.seconds);
    per_cpu_s.push_back(static_cast<double>(n) / cpu);
    std::printf("runtime %-4s %10llu msgs  %12.0f msg/s  %12.0f msg/cpu-s  (%llu out)\n", code.c_str(),
                static_cast<unsigned long long>(n), per_wall_s.back(), per_cpu_s.back(),
                static_cast<unsigned long long>(outputs));
    std::fflush(stdout);
  }
  const auto wall = tidemark::bench::spread(per_wall_s), per_cpu = tidemark::bench::spread(per_cpu_s);
  return {{"code", code},
          {"elements", n},
          {"outputs", outputs},
          {"runs", repeats},
          {"throughput_msg_s", wall["median"]},
          {"throughput_msg_s_spread", wall},
          {"throughput_msg_per_cpu_s", per_cpu["median"]},
          {"throughput_msg_per_cpu_s_spread", per_cpu}};
}

// The tasks with stream adapters, through the runtime; `n` elements each (fewer for XML).
nlohmann::json runtime_cases(const inputs& in, const std::string& dir, const std::string& only, std::uint64_t n,
                             int repeats) {
  nlohmann::json all = nlohmann::json::array();
  auto want = [&](const char* code) { return only.empty() || only == code; };
  auto json = std::make_shared<const std::vector<std::string>>(in.city_json);
  auto obs = std::make_shared<const std::vector<observation>>(in.city_obs);
  auto rows = std::make_shared<const std::vector<std::string>>(in.city_csv);
  auto taxi = std::make_shared<const std::vector<std::string>>(in.taxi_rows);
  tidemark::error_sink errors;
  if (want("SML"))
    all.push_back(through_runtime("SML", json, n, repeats, [&](const auto& s) {
      return parse_senml(s, senml_fanout_config::for_dataset(dataset::city, dir), errors);
    }));
  if (want("ANN"))
    all.push_back(through_runtime("ANN", rows, n, repeats, [&](const auto& s) {
      auto config = annotate_config::for_dataset(dataset::city, dir);
      return apply_task<std::string>(s, [config] { return annotate(config); }, errors, "annotate");
    }));
  if (want("XML")) {
    auto xml = std::make_shared<const std::vector<std::string>>(1, in.xml);
    all.push_back(through_runtime("XML", xml, n / 50, repeats, [&](const auto& s) {
      return apply_task<xml_summary>(s, [] { return xml_parse(); }, errors, "xml_parse");
    }));
  }
  if (want("RGF"))
    all.push_back(through_runtime("RGF", obs, n, repeats, [&](const auto& s) {
      return range_filter_marks(s, range_filter_config::for_dataset(dataset::city), errors);
    }));
  if (want("BLF")) {
    std::vector<std::string> ids;
    for (auto& o : in.city_obs) ids.push_back(o.sensor_id.str());
    auto check = std::make_shared<const bloom_filter_check>(
        bloom_filter_check::from_ids(bloom_filter_config::for_dataset(dataset::city), ids));
    all.push_back(through_runtime("BLF", obs, n, repeats, [&](const auto& s) { return bloom_filter_marks(s, check); }));
  }
  if (want("DAC"))
    all.push_back(through_runtime("DAC", obs, n, repeats, [&](const auto& s) {
      return distinct_sensors(s, distinct_count_config::for_dataset(dataset::city));
    }));
  if (want("KAL"))
    all.push_back(through_runtime("KAL", obs, n, repeats, [&](const auto& s) { return kalman(s, kalman_config::for_dataset(dataset::city)); }));
  if (want("AVG"))
    all.push_back(through_runtime("AVG", obs, n, repeats, [&](const auto& s) {
      return block_average_of(s, block_average_config::for_dataset(dataset::city));
    }));
  if (want("INP"))
    all.push_back(through_runtime("INP", obs, n, repeats, [&](const auto& s) {
      return interpolate(s, interpolation_config::for_dataset(dataset::city));
    }));
  if (want("SLR"))
    all.push_back(through_runtime("SLR", obs, n, repeats, [&](const auto& s) {
      return sliding_regression_of(s, sliding_regression_config::for_dataset(dataset::city));
    }));
  if (want("MLR")) {
    std::string batch;
    for (auto& r : in.taxi_rows) batch += r + "\n";
    auto config = linear_regression_config::for_dataset(dataset::taxi);
    auto model = *model_codec::decode_linear_regression(*linear_regression_train(config).process(batch));
    all.push_back(through_runtime("MLR", taxi, n, repeats, [&](const auto& s) {
      return apply_task<double>(s, [config, model] { return linear_regression_predict(config, model); }, errors,
                                "linear_regression_predict");
    }));
  }
  if (errors.count() != 0) throw std::runtime_error("runtime harness: " + errors.messages().front());
  return all;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string l; std::getline(in, l);)
    if (l.rfind("model name", 0) == 0) return l.substr(l.find(':') + 2);
  return "unknown";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"RIoTBench micro-benchmark: each task's peak throughput and latency on one thread"};
  std::string out = tidemark::bench::out_dir() + "/riot-micro.json", only, dir = default_data_dir();
  double seconds = 1.0;
  int repeats = 3;
  bool runtime = false;
  std::uint64_t runtime_messages = 1'000'000;
  app.add_option("--out", out, "JSON report path");
  app.add_option("--task", only, "run only this task (its code, e.g. KAL, or class name)");
  app.add_option("--seconds", seconds, "each throughput run of a task")->check(CLI::PositiveNumber);
  app.add_option("--repeats", repeats,
                 "throughput runs per task (the median and range are reported)")
      ->check(CLI::PositiveNumber);
  app.add_option("--data", dir, "RIoTBench sample data directory");
  app.add_flag("--runtime", runtime, "also run source -> task -> sink through tidemark::run (one thread)");
  app.add_option("--runtime-messages", runtime_messages, "messages per task through the runtime");
  CLI11_PARSE(app, argc, argv);

  try {
    auto in = load(dir);
    auto cases = make_cases(in, dir);
    nlohmann::json report;
    report["benchmark"] = "riot-micro";
    report["cpu"] = cpu_model();
    report["threads"] = 1;
    report["seconds_per_run"] = seconds;
    report["repeats"] = repeats;
    report["storm_reference"] =
        "RIoTBench paper (Shukla et al., CCPE 2017), Storm on one thread of a 2.2 GHz Azure D1 core";
    report["tasks"] = nlohmann::json::array();
    std::uint64_t sink = 0;
    bool found = false;
    for (auto& c : cases) {
      if (!only.empty() && only != c.code && only != c.task) continue;
      found = true;
      auto r = measure(c, seconds, repeats, sink);
      std::printf("%-4s %-26s %12.0f msg/s  %12.0f msg/cpu-s  %6.0fx Storm  p50 %8.0f ns  p99 %9.0f ns  errors %llu\n",
                  c.code.c_str(), c.task.c_str(), r["throughput_msg_s"].get<double>(),
                  r["throughput_msg_per_cpu_s"].get<double>(), r["speedup_per_cpu_vs_storm"].get<double>(),
                  r["latency_ns"]["p50"].get<double>(),
                  r["latency_ns"]["p99"].get<double>(),
                  static_cast<unsigned long long>(r["errors"].get<std::uint64_t>()));
      std::fflush(stdout);
      report["tasks"].push_back(std::move(r));
    }
    if (runtime) {
      report["runtime"] = runtime_cases(in, dir, only, runtime_messages, repeats);
      found = found || !report["runtime"].empty();
    }
    if (!found) {
      std::cerr << "no task '" << only << "'; use a code such as SML, KAL, DTT or a class name\n";
      return 2;
    }
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    report["peak_rss_kib"] = ru.ru_maxrss;
    report["checksum"] = sink;  // keeps the work observable
    std::ofstream(out) << report.dump(2) << '\n';
    std::cout << "wrote " << out << '\n';
  } catch (const std::exception& e) {
    std::cerr << "riot-micro: " << e.what() << '\n';
    return 1;
  }
}
