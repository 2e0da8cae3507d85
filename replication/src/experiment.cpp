// The paper's simulation: a query generator with six templates and operator reuse, and the
// experiment loop over runs, spare levels, strategies and failure probabilities.
#include "tidemark/replication/experiment.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <tuple>

#include <nlohmann/json.hpp>

#include "random.hpp"
#include "tidemark/replication/availability.hpp"

namespace tidemark::replication {

namespace {

enum class kind { source, projection, filter, aggregation, sequence, join, destination };

// CPU per input event (relative; loads are rescaled to the requested total) and the range of
// selectivities each kind draws from.
struct kind_traits {
  const char* name;
  double cost;
  double min_selectivity;
  double max_selectivity;
};

constexpr kind_traits traits[] = {
  {"source", 0.5, 1.0, 1.0},     {"projection", 0.5, 1.0, 1.0},
  {"filter", 1.0, 0.05, 0.8},    {"aggregation", 2.0, 0.01, 0.1},
  {"sequence", 3.0, 0.05, 0.3},  {"join", 1.5, 0.2, 1.0},
  {"destination", 0.5, 1.0, 1.0},
};

class generator {
 public:
  explicit generator(const workload_options& opts) : opts_(opts), rng_(opts.seed) {}

  replication_model run() {
    for (std::uint32_t s = 0; s < opts_.streams; ++s)
      stream_rate_.push_back(0.2 + 1.6 * rng_.uniform());
    for (std::uint32_t q = 0; q < opts_.queries; ++q) add_query(q);
    replication_model m;
    m.operators = std::move(ops_);
    m.queries = queries_from_sinks(m.operators);
    apply_load_model(m);
    double total = total_load(m);
    for (auto& op : m.operators) op.cost *= opts_.load / total;
    apply_load_model(m);
    for (std::uint32_t h = 0; h < opts_.hosts; ++h)
      m.hosts.push_back({"h" + std::to_string(h), opts_.load / opts_.hosts});
    place_primaries(m);
    return m;
  }

 private:
  std::uint32_t pick(std::uint32_t n) {
    return static_cast<std::uint32_t>(rng_.uniform() * n);
  }

  // The operator of `k` with parameter `param` over `inputs`, reusing an equal one.
  op_index get(kind k, std::uint32_t param, std::vector<op_index> inputs) {
    std::sort(inputs.begin(), inputs.end());
    auto key = std::make_tuple(k, param, inputs);
    if (k != kind::destination)
      if (auto it = known_.find(key); it != known_.end()) return it->second;
    const auto& t = traits[static_cast<int>(k)];
    operator_info op;
    op.name = std::string{t.name} + std::to_string(ops_.size());
    for (auto i : inputs) op.inputs.push_back({i, 1.0});
    op.cost = t.cost;
    op.selectivity = t.min_selectivity + (t.max_selectivity - t.min_selectivity) * rng_.uniform();
    if (k == kind::source) op.source_rate = stream_rate_[param];
    op.bytes_in = op.bytes_out = 100;
    auto id = static_cast<op_index>(ops_.size());
    ops_.push_back(std::move(op));
    known_.emplace(std::move(key), id);
    return id;
  }

  op_index filtered(std::uint32_t stream) {
    return get(kind::filter, pick(opts_.predicates), {get(kind::source, stream, {})});
  }

  void add_query(std::uint32_t q) {
    auto a = pick(opts_.streams);
    auto b = opts_.streams > 1 ? (a + 1 + pick(opts_.streams - 1)) % opts_.streams : a;
    auto param = [&] { return pick(opts_.predicates); };
    op_index last = 0;
    switch (pick(6)) {
      case 0: last = filtered(a); break;
      case 1: last = get(kind::aggregation, param(), {filtered(a)}); break;
      case 2:
        last = get(kind::filter, param(),
                   {get(kind::projection, param(), {get(kind::source, a, {})})});
        break;
      case 3: last = get(kind::sequence, param(), {filtered(a)}); break;
      case 4: last = get(kind::join, param(), {filtered(a), filtered(b)}); break;
      default:
        last = get(kind::aggregation, param(),
                   {get(kind::join, param(),
                        {get(kind::source, a, {}), get(kind::source, b, {})})});
        break;
    }
    get(kind::destination, q, {last});
  }

  const workload_options& opts_;
  detail::rng rng_;
  std::vector<double> stream_rate_;
  std::vector<operator_info> ops_;
  std::map<std::tuple<kind, std::uint32_t, std::vector<op_index>>, op_index> known_;
};

// What one run measured: [series][spare][p] fractions plus per series/spare counts.
struct run_result {
  std::vector<double> running;
  std::vector<double> replicated;
  std::vector<double> unplaced;
  double operators = 0;
  double queries = 0;
  double shared = 0;
  double max_load = 0;
};

run_result one_run(const experiment_options& opts, std::uint32_t run) {
  auto w = opts.workload;
  w.seed = detail::mix(opts.workload.seed, run);
  auto m = generate_workload(w);
  detail::rng crash{detail::mix(w.seed, 0x63726173ULL)};
  std::vector<double> threshold(m.hosts.size());
  for (auto& t : threshold) t = crash.uniform();

  run_result r;
  r.operators = static_cast<double>(m.operators.size());
  r.queries = static_cast<double>(m.queries.size());
  auto deg = query_degree(m);
  r.shared = static_cast<double>(std::count_if(deg.begin(), deg.end(),
                                               [](auto d) { return d > 1; })) /
             r.operators;
  for (const auto& op : m.operators) r.max_load = std::max(r.max_load, op.load);

  std::vector<char> failed(m.hosts.size());
  for (const auto& series : opts.series)
    for (double spare : opts.spare_percent) {
      double extra = w.load * spare / 100;
      for (auto& h : m.hosts) h.cpu_capacity = (w.load + extra) / w.hosts;
      auto o = series.options;
      o.spare = extra;
      auto plan = plan_replicas(m, o);
      auto inst = instance_hosts(m, plan);
      for (double p : opts.failure_probabilities) {
        for (std::size_t h = 0; h < failed.size(); ++h) failed[h] = threshold[h] < p;
        r.running.push_back(running_fraction(m, inst, failed));
      }
      std::size_t replicated = 0;
      for (const auto& hosts : plan.replicas) replicated += !hosts.empty();
      r.replicated.push_back(static_cast<double>(replicated) / r.operators);
      r.unplaced.push_back(static_cast<double>(plan.unplaced));
    }
  return r;
}

}  // namespace

replication_model generate_workload(const workload_options& opts) {
  if (opts.hosts == 0 || opts.queries == 0 || opts.streams == 0 || opts.predicates == 0 ||
      !(opts.load > 0))
    throw model_error("workload: hosts, queries, streams, predicates and load must be positive");
  return generator{opts}.run();
}

std::vector<experiment_series> paper_series() {
  auto make = [](std::string name, heuristic h) {
    experiment_series s{std::move(name), {}};
    s.options.importance = h;
    return s;
  };
  std::vector<experiment_series> result{
    make("random", heuristic::random),
    make("low-utilization", heuristic::low_utilization),
    make("out-degree", heuristic::query_out_degree),
    make("product", heuristic::product),
  };
  result.push_back(make("product, query level, knapsack", heuristic::product));
  result.back().options.query_level = true;
  result.back().options.selection = selection_strategy::knapsack;
  result.push_back(make("knapsack on out-degree", heuristic::query_out_degree));
  result.back().options.selection = selection_strategy::knapsack;
  result.push_back(make("product, colour", heuristic::product));
  result.back().options.placement = placement_strategy::colour_constrained;
  return result;
}

experiment_result run_experiment(const experiment_options& opts,
                                 const std::function<void(std::uint32_t)>& progress) {
  if (opts.runs == 0) throw model_error("the experiment needs at least one run");
  std::vector<run_result> runs(opts.runs);
  std::atomic<std::uint32_t> next{0};
  std::uint32_t done = 0;
  std::mutex progress_mutex;
  std::exception_ptr failure;
  auto work = [&] {
    try {
      for (std::uint32_t i = next++; i < opts.runs; i = next++) {
        runs[i] = one_run(opts, i);
        std::lock_guard<std::mutex> guard{progress_mutex};
        ++done;
        if (progress) progress(done);
      }
    } catch (...) {
      std::lock_guard<std::mutex> guard{progress_mutex};
      failure = std::current_exception();
      next = opts.runs;
    }
  };
  std::vector<std::thread> workers;
  for (std::uint32_t t = 1; t < std::max(1u, opts.threads); ++t) workers.emplace_back(work);
  work();
  for (auto& w : workers) w.join();
  if (failure) std::rethrow_exception(failure);

  auto ns = opts.series.size();
  auto nl = opts.spare_percent.size();
  auto np = opts.failure_probabilities.size();
  experiment_result result;
  result.running.assign(ns, std::vector<std::vector<double>>(nl, std::vector<double>(np)));
  result.standard_error = result.running;
  result.replicated_operators.assign(ns, std::vector<double>(nl));
  result.unplaced = result.replicated_operators;
  double n = opts.runs;
  for (const auto& r : runs) {
    for (std::size_t s = 0; s < ns; ++s)
      for (std::size_t l = 0; l < nl; ++l) {
        for (std::size_t k = 0; k < np; ++k) {
          double x = r.running[(s * nl + l) * np + k];
          result.running[s][l][k] += x / n;
          result.standard_error[s][l][k] += x * x;  // sum of squares until the end
        }
        result.replicated_operators[s][l] += r.replicated[s * nl + l] / n;
        result.unplaced[s][l] += r.unplaced[s * nl + l] / n;
      }
    result.operators += r.operators / n;
    result.queries += r.queries / n;
    result.shared_operators += r.shared / n;
    result.max_operator_load = std::max(result.max_operator_load, r.max_load);
  }
  for (std::size_t s = 0; s < ns; ++s)
    for (std::size_t l = 0; l < nl; ++l)
      for (std::size_t k = 0; k < np; ++k) {
        double mean = result.running[s][l][k];
        double var = n > 1 ? std::max(0.0, (result.standard_error[s][l][k] - n * mean * mean) /
                                               (n - 1))
                           : 0.0;
        result.standard_error[s][l][k] = std::sqrt(var / n);
      }
  return result;
}

std::string to_json(const experiment_options& opts, const experiment_result& r) {
  nlohmann::json j;
  j["runs"] = opts.runs;
  j["hosts"] = opts.workload.hosts;
  j["load"] = opts.workload.load;
  j["failure_probabilities"] = opts.failure_probabilities;
  j["spare_percent"] = opts.spare_percent;
  j["workload"] = {{"generated_queries", opts.workload.queries},
                   {"streams", opts.workload.streams},
                   {"predicates", opts.workload.predicates},
                   {"seed", opts.workload.seed},
                   {"queries", r.queries},
                   {"operators", r.operators},
                   {"shared_operators", r.shared_operators},
                   {"max_operator_load", r.max_operator_load}};
  j["series"] = nlohmann::json::array();
  for (std::size_t s = 0; s < opts.series.size(); ++s)
    j["series"].push_back({{"name", opts.series[s].name},
                           {"running", r.running[s]},
                           {"standard_error", r.standard_error[s]},
                           {"replicated_operators", r.replicated_operators[s]},
                           {"rejected_placements", r.unplaced[s]}});
  return j.dump(1);
}

std::string to_text(const experiment_options& opts, const experiment_result& r) {
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof line,
                "%u runs; per run %.0f queries, %.0f operators (%.1f %% shared), %u hosts, "
                "load %.0f\n",
                opts.runs, r.queries, r.operators, 100 * r.shared_operators, opts.workload.hosts,
                opts.workload.load);
  out << line;
  for (double spare : {50.0, 100.0}) {
    auto it = std::find(opts.spare_percent.begin(), opts.spare_percent.end(), spare);
    if (it == opts.spare_percent.end()) continue;
    auto l = static_cast<std::size_t>(it - opts.spare_percent.begin());
    std::snprintf(line, sizeof line, "\nrunning queries (%%), spare %.0f %%\n%-34s", spare,
                  "host failure probability");
    out << line;
    for (double p : opts.failure_probabilities) {
      std::snprintf(line, sizeof line, "%8.2f%%", 100 * p);
      out << line;
    }
    out << "   replicated ops\n";
    for (std::size_t s = 0; s < opts.series.size(); ++s) {
      std::snprintf(line, sizeof line, "%-34s", opts.series[s].name.c_str());
      out << line;
      for (std::size_t k = 0; k < opts.failure_probabilities.size(); ++k) {
        std::snprintf(line, sizeof line, "%9.2f", 100 * r.running[s][l][k]);
        out << line;
      }
      std::snprintf(line, sizeof line, "%10.0f %%\n", 100 * r.replicated_operators[s][l]);
      out << line;
    }
  }
  return out.str();
}

}  // namespace tidemark::replication
