// Aion's Q4 and predictive cleanup, reproduced: figure 9 (a) maximum staleness against executions
// for the staleness-bounded trigger, every-Δt and every-Δevents on a lognormal late-arrival
// distribution; (b) the fewest executions reaching bounds 0.10/0.05/0.01 on four distributions;
// and a cleanup experiment on the average workload's delay model (fixed vs predictive lateness).
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "support/bench_support.hpp"
#include "tidemark/core/detail/flat_hash_map.hpp"
#include "tidemark/core/staleness.hpp"
#include "tidemark/core/window_operators.hpp"

using namespace tidemark;

namespace {

double normal_cdf(double x, double mean, double sd) {
  return 0.5 * std::erfc(-(x - mean) / (sd * std::sqrt(2.0)));
}

// Late arrivals over a lateness period of `period` window lengths: the paper's four shapes.
std::vector<std::pair<std::string, arrival_curve>> distributions(double period, std::size_t steps) {
  const double p = period;
  return {
      {"lnorm", arrival_curve([](double x) { return x <= 0 ? 0.0 : normal_cdf(std::log(x), 0, 1); },
                              p, steps)},
      {"unif", arrival_curve([p](double x) { return x / p; }, p, steps)},
      {"norm", arrival_curve([p](double x) { return normal_cdf(x, p / 2, p / 6); }, p, steps)},
      {"bursts", arrival_curve(
                     [p](double x) {
                       return 0.4 * normal_cdf(x, 0.15 * p, 0.03 * p) +
                              0.35 * normal_cdf(x, 0.45 * p, 0.03 * p) +
                              0.25 * normal_cdf(x, 0.8 * p, 0.03 * p);
                     },
                     p, steps)},
  };
}

constexpr std::size_t max_executions = 30;

// The fewest executions (at most 30) with which `make` reaches `bound`; null beyond.
template <class Make>
nlohmann::json fewest(const arrival_curve& c, double bound, Make make) {
  for (std::size_t n = 1; n <= max_executions; ++n)
    if (max_staleness(c, make(c, n)) <= bound) return n;
  return nullptr;
}

nlohmann::json figure9(double period, std::size_t steps) {
  const auto curves = distributions(period, steps);
  const auto& lnorm = curves.front().second;
  nlohmann::json a = nlohmann::json::array();
  for (std::size_t n = 1; n <= max_executions; ++n)
    a.push_back({{"executions", n},
                 {"aion", max_staleness(lnorm, balanced_schedule(lnorm, n))},
                 {"deltat", max_staleness(lnorm, every_dt_schedule(lnorm, n))},
                 {"deltaev", max_staleness(lnorm, every_devents_schedule(lnorm, n))}});
  nlohmann::json b = nlohmann::json::array();
  for (const auto& [name, c] : curves)
    for (double bound : {0.10, 0.05, 0.01}) {
      const auto ours = executions(fewest_executions(c, bound));
      b.push_back({{"distribution", name},
                   {"bound", bound},
                   {"aion", ours},
                   {"deltat", fewest(c, bound, every_dt_schedule)},
                   {"deltaev", fewest(c, bound, every_devents_schedule)}});
      std::printf("  %-6s bound %.2f: aion %zu, every-dt %s, every-devents %s\n", name.c_str(),
                  bound, ours, b.back()["deltat"].dump().c_str(),
                  b.back()["deltaev"].dump().c_str());
    }
  return {{"period_windows", period}, {"steps", steps}, {"a", a}, {"b", b}};
}

// ---- cleanup experiment ----------------------------------------------------------------------

struct reading {
  int key = 0;
  double value = 0;
  char payload[48] = {};  // the workload's payload: what window state is made of
};
struct key_of {
  int operator()(const reading& r) const { return r.key; }
};
struct average {
  double operator()(const int&, const window_id&, window_events<reading>& events) const {
    double sum = 0;
    std::size_t n = 0;
    for (const auto& r : events) sum += r.value, ++n;
    return n ? sum / static_cast<double>(n) : 0.0;
  }
};
using fn_type = ops::process_function<reading, int, average>;
using result = window_result<int, double>;

struct cleanup_options {
  event_time window_ms = 20'000;
  double rate = 1000;  // events per second of event time
  double seconds = 1800;
  event_time conservative_windows = 20;
  std::uint64_t seed = 1;
  int keys = 4;
};

struct cleanup_run {
  nlohmann::json series = nlohmann::json::array();
  std::map<std::pair<event_time, int>, double> finals;
  std::map<std::string, double> metrics;
};

// The average workload's event-time model (Aion §6): at clock `now` an event is stamped
// now − k·window, k = max(0, round(X) − 1), X ~ LogNormal(0, 1); the watermark follows the clock
// every 100 ms. The same seed gives both configurations the same stream.
cleanup_run run_cleanup(const cleanup_options& o, window_config cfg) {
  cleanup_run r;
  auto logic = ops::make_window_logic<reading, int>(
      tumbling{o.window_ms}, key_of{},
      fn_type{average{}, std::make_unique<memory_window_store<int, reading>>()}, std::move(cfg),
      "average");
  struct sink final : emitter {
    cleanup_run* r;
    void emit_on(std::uint32_t port, batch_ptr b) override {
      if (port != 0) return;  // late events
      for (const auto& res : static_cast<batch<result>&>(*b).values)
        if (res.final) r->finals[{res.window.start, res.key}] = res.value;
    }
    void emit_watermark(event_time) override {}
    void emit_idle(bool) override {}
  } out;
  out.r = &r;
  std::mt19937_64 rng{o.seed};
  std::lognormal_distribution<double> x{0, 1};
  std::uniform_real_distribution<double> value{0, 1000};
  const auto total = static_cast<std::uint64_t>(o.rate * o.seconds);
  const double per_ms = o.rate / 1000;
  std::uint64_t sent = 0;
  for (event_time now = 0; sent < total; now += 100) {
    auto b = std::make_unique<batch<reading>>();
    const auto due = std::min<std::uint64_t>(
        total, static_cast<std::uint64_t>(per_ms * static_cast<double>(now + 100)));
    for (; sent < due; ++sent) {
      const auto k = std::max<event_time>(0, std::llround(x(rng)) - 1);
      const event_time t = std::max<event_time>(0, now - k * o.window_ms);
      const int key = static_cast<int>(sent % static_cast<std::uint64_t>(o.keys));
      b->values.push_back(reading{key, value(rng), {}});
      b->times.push_back(t);
      b->hashes.push_back(detail::mix_hash(static_cast<std::uint64_t>(key)));
    }
    logic->on_timer(now, out);  // processing time follows event time, as in the paper's generator
    logic->process(0, std::move(b), out);
    logic->on_watermark(now + 100, out);
    if ((now + 100) % 10'000 == 0) {
      std::map<std::string, double> m;
      logic->add_metrics(m);
      r.series.push_back({{"t_s", static_cast<double>(now + 100) / 1000},
                          {"state_bytes", m["window_state_bytes"]},
                          {"store_events", m["window_store_events"]},
                          {"allowed_lateness_ms", m["allowed_lateness"]},
                          {"late_accepted", m["late_events_accepted"]},
                          {"late_dropped", m["late_events_dropped"]},
                          {"results", m["window_results"]}});
    }
  }
  logic->add_metrics(r.metrics);
  logic->finish(out);
  return r;
}

nlohmann::json cleanup(const cleanup_options& o) {
  window_config fixed;
  fixed.allowed_lateness = o.conservative_windows * o.window_ms;
  fixed.late = late_trigger::staleness(0.05, 1000);
  window_config predictive = fixed;
  predictive.predictive_lateness =
      lateness::predictive{0.99, 0.95, fixed.allowed_lateness, 0, fixed.allowed_lateness};
  std::printf("cleanup: fixed lateness %lld windows...\n",
              static_cast<long long>(o.conservative_windows));
  const auto a = run_cleanup(o, fixed);
  std::printf("cleanup: predictive 99 %% / 95 %%...\n");
  const auto b = run_cleanup(o, predictive);
  std::size_t changed = 0;
  double max_rel = 0;
  for (const auto& [w, v] : a.finals) {
    auto it = b.finals.find(w);
    const double u = it == b.finals.end() ? 0.0 : it->second;
    if (u != v) ++changed, max_rel = std::max(max_rel, std::abs(u - v) / std::abs(v));
  }
  // Steady state: the second half of the run, after the predictive bound left its initial value.
  auto summary = [&o](const cleanup_run& r) {
    double peak = 0, steady = 0;
    std::size_t n = 0;
    for (const auto& p : r.series) {
      peak = std::max(peak, p["state_bytes"].get<double>());
      if (p["t_s"].get<double>() > o.seconds / 2) steady += p["state_bytes"].get<double>(), ++n;
    }
    const double acc = r.metrics.at("late_events_accepted"),
                 drop = r.metrics.at("late_events_dropped");
    return nlohmann::json{{"peak_state_bytes", peak},
                          {"steady_state_bytes", n ? steady / static_cast<double>(n) : 0.0},
                          {"late_accepted", acc},
                          {"late_dropped", drop},
                          {"late_accepted_fraction", acc + drop > 0 ? acc / (acc + drop) : 1.0},
                          {"final_allowed_lateness_ms", r.metrics.at("allowed_lateness")},
                          {"results", r.metrics.at("window_results")},
                          {"series", r.series}};
  };
  nlohmann::json doc{{"window_ms", o.window_ms},       {"rate", o.rate},
                     {"seconds", o.seconds},           {"keys", o.keys},
                     {"event_bytes", sizeof(reading)}, {"fixed", summary(a)},
                     {"predictive", summary(b)},       {"windows", a.finals.size()},
                     {"windows_changed", changed},     {"max_relative_change", max_rel}};
  std::printf(
      "  steady state %.1f MB fixed vs %.1f MB predictive; late accepted %.4f vs %.4f; "
      "%zu of %zu results changed (max %.3g relative); predictive bound %.0f ms\n",
      doc["fixed"]["steady_state_bytes"].get<double>() / 1e6,
      doc["predictive"]["steady_state_bytes"].get<double>() / 1e6,
      doc["fixed"]["late_accepted_fraction"].get<double>(),
      doc["predictive"]["late_accepted_fraction"].get<double>(), changed, a.finals.size(), max_rel,
      doc["predictive"]["final_allowed_lateness_ms"].get<double>());
  return doc;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"staleness-bounded trigger (Aion figure 9) and predictive cleanup"};
  std::string out = tidemark::bench::out_dir() + "/staleness.json";
  double period = 10;
  std::size_t steps = 4000;
  cleanup_options o;
  app.add_option("--out", out, "JSON report");
  app.add_option("--period", period,
                 "lateness period of figure 9 in window lengths (lognormal X in windows)");
  app.add_option("--steps", steps, "time grid of the schedules");
  app.add_option("--rate", o.rate, "cleanup: events per second");
  app.add_option("--seconds", o.seconds, "cleanup: seconds of event time");
  app.add_option("--conservative-windows", o.conservative_windows,
                 "cleanup: fixed lateness in windows");
  app.add_option("--seed", o.seed, "cleanup: random seed");
  CLI11_PARSE(app, argc, argv);

  std::printf("figure 9 (lateness period %.0f windows, %zu steps)\n", period, steps);
  nlohmann::json doc{
      {"benchmark", "staleness"}, {"figure9", figure9(period, steps)}, {"cleanup", cleanup(o)}};
  std::ofstream(out) << doc.dump(2) << "\n";
  std::printf("wrote %s\n", out.c_str());
}
