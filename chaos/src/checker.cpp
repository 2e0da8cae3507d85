// The checker: violations from comparing multisets of (id, revision) with their values and from
// scanning the run in commit order; per-fault rates from commit times. JSON through nlohmann.
#include "tidemark/chaos/checker.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

namespace tidemark::chaos {

namespace {

constexpr std::int64_t context_ms = 5000;  // before and after a fault

using result_key = std::pair<std::string, std::uint32_t>;

std::map<result_key, std::vector<std::string>> copies(const std::vector<history_entry>& h) {
  std::map<result_key, std::vector<std::string>> out;
  for (const auto& e : h) out[{e.id, e.revision}].push_back(e.value);
  return out;
}

struct tally {
  report& r;
  std::size_t max_listed;
  std::map<violation_kind, std::size_t> listed;

  void add(violation_kind k, std::size_t& counter, std::size_t n, const std::string& id,
           std::uint32_t revision, std::string detail) {
    counter += n;
    if (listed[k]++ < max_listed) r.violations.push_back({k, id, revision, std::move(detail)});
  }
};

// Results committed within [from, to) per second.
double rate(const std::vector<std::int64_t>& commits, std::int64_t from, std::int64_t to) {
  if (to <= from) return 0;
  auto n = std::lower_bound(commits.begin(), commits.end(), to) -
           std::lower_bound(commits.begin(), commits.end(), from);
  return static_cast<double>(n) * 1000.0 / static_cast<double>(to - from);
}

double percentile(std::vector<double> xs, double q) {
  if (xs.empty()) return 0;
  std::sort(xs.begin(), xs.end());
  auto i = static_cast<std::size_t>(std::ceil(q * static_cast<double>(xs.size())));
  return xs[std::min(xs.size() - 1, i == 0 ? 0 : i - 1)];
}

// The run's commit times in order, with the emission-to-commit latency of each result.
struct commit_times {
  std::vector<std::int64_t> at_ms;
  std::vector<double> latency_s;

  explicit commit_times(const std::vector<history_entry>& run) {
    std::vector<std::pair<std::int64_t, double>> xs;
    xs.reserve(run.size());
    // both times come from the clock of the process that committed, so only a clock step can
    // make the difference negative
    for (const auto& e : run)
      xs.emplace_back(
          e.commit_ms,
          static_cast<double>(std::max<std::int64_t>(0, e.commit_ms - e.received_ms)) / 1000.0);
    std::sort(xs.begin(), xs.end());
    for (const auto& [at, latency] : xs) {
      at_ms.push_back(at);
      latency_s.push_back(latency);
    }
  }

  std::size_t first_at_or_after(std::int64_t t) const {
    return static_cast<std::size_t>(std::lower_bound(at_ms.begin(), at_ms.end(), t) -
                                    at_ms.begin());
  }

  // The latency of the results committed within [from, to).
  latency_summary latency(std::int64_t from, std::int64_t to) const {
    latency_summary out;
    if (to <= from) return out;
    const auto a = first_at_or_after(from), b = first_at_or_after(to);
    std::vector<double> xs(latency_s.begin() + static_cast<std::ptrdiff_t>(a),
                           latency_s.begin() + static_cast<std::ptrdiff_t>(b));
    out.results = xs.size();
    out.p50_s = percentile(xs, 0.5);
    out.p99_s = percentile(std::move(xs), 0.99);
    return out;
  }

  // Seconds from `t` to the first commit at or after it.
  std::optional<double> first_after(std::int64_t t) const {
    const auto i = first_at_or_after(t);
    if (i == at_ms.size()) return std::nullopt;
    return static_cast<double>(at_ms[i] - t) / 1000.0;
  }
};

fault_effect effect_of(const applied_fault& f, const commit_times& times, const run_facts& facts) {
  const auto& commits = times.at_ms;
  fault_effect e;
  e.fault = f;
  const auto start = f.started_ms;
  const auto healed = f.healed_ms > 0 ? f.healed_ms : start;
  const auto end_of_run = std::max(facts.ended_ms, commits.empty() ? start : commits.back());
  e.rate_before = rate(commits, std::max(facts.started_ms, start - context_ms), start);
  e.rate_during = rate(commits, start, std::max(healed, start + 1));
  e.rate_after = rate(commits, healed, std::min(end_of_run, healed + context_ms));
  // the longest wait between two commits that overlaps [start, healed + context]
  std::int64_t previous = facts.started_ms;
  std::int64_t gap = 0;
  const auto window_end = healed + context_ms;
  for (auto c : commits) {
    if (c > previous && c >= start && previous <= window_end) gap = std::max(gap, c - previous);
    previous = c;
    if (previous > window_end) break;
  }
  if (previous < window_end && previous < end_of_run && end_of_run >= start)
    gap = std::max(gap, std::min(end_of_run, window_end) - std::max(previous, start));
  e.longest_commit_gap_s = static_cast<double>(gap) / 1000.0;
  if (e.rate_before > 0) {
    for (auto t = healed; t + 1000 <= end_of_run; t += 100)
      if (rate(commits, t, t + 1000) >= e.rate_before / 2) {
        e.recovery_s = static_cast<double>(t - healed) / 1000.0;
        break;
      }
  }
  e.latency_during = times.latency(start, healed);
  e.latency_after = times.latency(healed, healed + context_ms);
  e.first_result_after_start_s = times.first_after(start);
  e.first_result_after_heal_s = times.first_after(healed);
  return e;
}

std::vector<timeline_point> timeline_of(const commit_times& times, const run_facts& facts) {
  const auto& commits = times.at_ms;
  std::vector<timeline_point> out;
  if (facts.started_ms == 0) return out;
  const auto end = std::max(facts.ended_ms, commits.empty() ? facts.started_ms : commits.back());
  std::size_t next = 0;
  std::int64_t previous = facts.started_ms;
  for (auto t = facts.started_ms; t < end; t += 1000) {
    timeline_point p;
    p.t_s = static_cast<double>(t - facts.started_ms) / 1000.0;
    std::int64_t gap = 0;
    for (; next < commits.size() && commits[next] < t + 1000; ++next) {
      p.results += 1;
      gap = std::max(gap, commits[next] - previous);
      previous = commits[next];
    }
    gap = std::max(gap, std::min(end, t + 1000) - previous);  // still waiting at the second's end
    p.commit_gap_s = static_cast<double>(gap) / 1000.0;
    const auto latency = times.latency(t, t + 1000);
    p.latency_p50_s = latency.p50_s;
    p.latency_p99_s = latency.p99_s;
    out.push_back(p);
  }
  return out;
}

// "0.63 s", or "none" without results
std::string latency_text(const latency_summary& l) {
  if (l.results == 0) return "none";
  std::ostringstream out;
  out << l.p99_s << " s";
  return out.str();
}

nlohmann::json optional_json(const std::optional<double>& x) {
  return x ? nlohmann::json(*x) : nlohmann::json();
}

nlohmann::json latency_json(const latency_summary& l) {
  return {{"results", l.results}, {"p50_s", l.p50_s}, {"p99_s", l.p99_s}};
}

nlohmann::json fault_json(const fault& f) {
  nlohmann::json j{{"kind", std::string{to_string(f.kind)}},
                   {"at_ms", f.at.count()},
                   {"duration_ms", f.duration.count()},
                   {"targets", f.targets},
                   {"sides", f.sides},
                   {"peers", f.peers},
                   {"probability", f.probability},
                   {"delay_ms", f.delay.count()},
                   {"jitter_ms", f.jitter.count()},
                   {"origin", f.origin},
                   {"description", describe(f)}};
  return j;
}

fault fault_from_json(const nlohmann::json& j) {
  fault f;
  auto kind = parse_fault_kind(j.at("kind").get<std::string>());
  if (!kind)
    throw std::runtime_error("unknown fault kind '" + j.at("kind").get<std::string>() + "'");
  f.kind = *kind;
  f.at = std::chrono::milliseconds{j.at("at_ms").get<std::int64_t>()};
  f.duration = std::chrono::milliseconds{j.at("duration_ms").get<std::int64_t>()};
  f.targets = j.at("targets").get<std::vector<std::string>>();
  f.sides = j.at("sides").get<std::vector<std::vector<std::string>>>();
  f.peers = j.at("peers").get<std::vector<std::string>>();
  f.probability = j.at("probability").get<double>();
  f.delay = std::chrono::milliseconds{j.at("delay_ms").get<std::int64_t>()};
  f.jitter = std::chrono::milliseconds{j.at("jitter_ms").get<std::int64_t>()};
  f.origin = j.at("origin").get<std::string>();
  return f;
}

}  // namespace

const char* to_string(violation_kind k) noexcept {
  switch (k) {
    case violation_kind::lost:
      return "lost";
    case violation_kind::repeated:
      return "repeated";
    case violation_kind::wrong:
      return "wrong";
    case violation_kind::out_of_order:
      return "out_of_order";
    case violation_kind::watermark_back:
      return "watermark_back";
  }
  return "?";
}

report check(const std::vector<history_entry>& reference, const std::vector<history_entry>& run,
             const std::vector<applied_fault>& faults, const run_facts& facts,
             std::size_t max_listed) {
  report r;
  r.run = facts;
  r.reference_results = reference.size();
  r.run_results = run.size();
  tally t{r, max_listed, {}};
  const auto expected = copies(reference);
  const auto got = copies(run);
  for (const auto& [key, values] : expected) {
    auto it = got.find(key);
    const auto have = it == got.end() ? 0 : it->second.size();
    if (have < values.size())
      t.add(violation_kind::lost, r.lost, values.size() - have, key.first, key.second,
            std::to_string(values.size() - have) + " of " + std::to_string(values.size()) +
                " copies missing; expected value " + values.front());
    if (have > values.size())
      t.add(violation_kind::repeated, r.repeated, have - values.size(), key.first, key.second,
            std::to_string(have) + " copies, the reference has " + std::to_string(values.size()));
    if (it != got.end())
      for (const auto& v : it->second)
        if (std::find(values.begin(), values.end(), v) == values.end()) {
          t.add(violation_kind::wrong, r.wrong, 1, key.first, key.second,
                "value " + v + ", expected " + values.front());
          break;
        }
  }
  for (const auto& [key, values] : got)
    if (!expected.count(key))
      t.add(violation_kind::wrong, r.wrong, 1, key.first, key.second,
            "value " + values.front() + ": the reference has no such result");

  std::map<std::string, std::uint32_t> highest_revision;
  struct writer_state {
    std::tuple<std::int64_t, std::uint64_t> commit{-1, 0};
    std::int64_t highest = INT64_MIN;
  };
  std::map<std::string, writer_state> writers;
  for (const auto& e : run) {
    auto [it, fresh] = highest_revision.emplace(e.id, e.revision);
    if (!fresh) {
      if (e.revision < it->second)
        t.add(violation_kind::out_of_order, r.out_of_order, 1, e.id, e.revision,
              "committed after revision " + std::to_string(it->second));
      it->second = std::max(it->second, e.revision);
    }
    auto& w = writers[e.writer];
    const auto commit = std::make_tuple(e.commit_ms, e.checkpoint);
    if (commit != w.commit) {  // one check per commit of a sink instance
      w.commit = commit;
      if (e.watermark < w.highest)
        t.add(violation_kind::watermark_back, r.watermark_back, 1, e.id, e.revision,
              e.writer + " committed watermark " + std::to_string(e.watermark) + " after " +
                  std::to_string(w.highest));
      w.highest = std::max(w.highest, e.watermark);
    }
  }

  const commit_times times{run};
  for (const auto& f : faults) r.faults.push_back(effect_of(f, times, facts));
  r.timeline = timeline_of(times, facts);
  r.latency = times.latency(INT64_MIN, INT64_MAX);
  return r;
}

std::string report::summary(std::size_t first) const {
  std::ostringstream out;
  out << (passed() ? "PASSED" : "FAILED") << ": " << run_results << " results committed, "
      << reference_results << " in the reference; " << violation_count() << " violations (lost "
      << lost << ", repeated " << repeated << ", wrong " << wrong << ", revisions out of order "
      << out_of_order << ", watermarks back " << watermark_back << "); " << faults.size()
      << " faults, " << run.recoveries << " recoveries; latency p50 " << latency.p50_s << " s, p99 "
      << latency.p99_s << " s\n";
  if (run.error) out << "the run failed: " << *run.error << "\n";
  std::size_t shown = 0;
  for (const auto& v : violations) {
    if (shown++ == first) break;
    out << "  " << to_string(v.kind) << ": " << v.id << " revision " << v.revision << ": "
        << v.detail << "\n";
  }
  for (const auto& f : faults) {
    out << "  " << describe(f.fault.planned) << ": results/s " << std::lround(f.rate_before)
        << " before, " << std::lround(f.rate_during) << " during, " << std::lround(f.rate_after)
        << " after; longest commit gap " << f.longest_commit_gap_s << " s; recovered "
        << (f.recovery_s ? std::to_string(*f.recovery_s).substr(0, 5) + " s after"
                         : std::string{"never"})
        << "; latency p99 " << latency_text(f.latency_during) << " during, "
        << latency_text(f.latency_after) << " after";
    if (!f.fault.note.empty()) out << " (" << f.fault.note << ")";
    out << "\n";
  }
  return out.str();
}

std::string report::to_json() const {
  nlohmann::json j;
  j["passed"] = passed();
  j["violations"] = violation_count();
  j["lost"] = lost;
  j["repeated"] = repeated;
  j["wrong"] = wrong;
  j["out_of_order"] = out_of_order;
  j["watermark_back"] = watermark_back;
  j["reference_results"] = reference_results;
  j["run_results"] = run_results;
  j["run"] = {{"started_ms", run.started_ms},
              {"ended_ms", run.ended_ms},
              {"seconds", static_cast<double>(run.ended_ms - run.started_ms) / 1000.0},
              {"recoveries", run.recoveries},
              {"error", run.error ? nlohmann::json(*run.error) : nlohmann::json()}};
  auto& listed = j["first_violations"] = nlohmann::json::array();
  for (const auto& v : violations)
    listed.push_back({{"kind", to_string(v.kind)},
                      {"id", v.id},
                      {"revision", v.revision},
                      {"detail", v.detail}});
  auto& fs = j["faults"] = nlohmann::json::array();
  std::map<std::string, int> by_kind;
  std::vector<double> recoveries;
  for (const auto& f : faults) {
    auto x = fault_json(f.fault.planned);
    x["started_s"] = static_cast<double>(f.fault.started_ms - run.started_ms) / 1000.0;
    x["healed_s"] =
        f.fault.healed_ms > 0
            ? nlohmann::json(static_cast<double>(f.fault.healed_ms - run.started_ms) / 1000.0)
            : nlohmann::json();
    x["note"] = f.fault.note;
    x["rate_before"] = f.rate_before;
    x["rate_during"] = f.rate_during;
    x["rate_after"] = f.rate_after;
    x["longest_commit_gap_s"] = f.longest_commit_gap_s;
    x["recovery_s"] = optional_json(f.recovery_s);
    x["latency_during"] = latency_json(f.latency_during);
    x["latency_after"] = latency_json(f.latency_after);
    x["first_result_after_start_s"] = optional_json(f.first_result_after_start_s);
    x["first_result_after_heal_s"] = optional_json(f.first_result_after_heal_s);
    fs.push_back(std::move(x));
    ++by_kind[std::string{to_string(f.fault.planned.kind)}];
    if (f.recovery_s) recoveries.push_back(*f.recovery_s);
  }
  j["faults_injected"] = by_kind;
  j["recovery_p50_s"] = percentile(recoveries, 0.5);
  j["recovery_max_s"] =
      recoveries.empty() ? 0.0 : *std::max_element(recoveries.begin(), recoveries.end());
  // what the latencies measure: the history has no ingestion times (events carry none)
  j["latency_measure"] = "emission to commit: from the sink receiving a result to its commit";
  j["latency"] = latency_json(latency);
  auto& tl = j["timeline"] = nlohmann::json::array();
  for (const auto& p : timeline)
    tl.push_back({{"t_s", p.t_s},
                  {"results", p.results},
                  {"commit_gap_s", p.commit_gap_s},
                  {"latency_p50_s", p.latency_p50_s},
                  {"latency_p99_s", p.latency_p99_s}});
  return j.dump(2);
}

std::string faults_to_json(const std::vector<applied_fault>& faults, const run_facts& facts) {
  nlohmann::json j;
  j["run"] = {{"started_ms", facts.started_ms},
              {"ended_ms", facts.ended_ms},
              {"recoveries", facts.recoveries},
              {"error", facts.error ? nlohmann::json(*facts.error) : nlohmann::json()}};
  auto& fs = j["faults"] = nlohmann::json::array();
  for (const auto& f : faults) {
    auto x = fault_json(f.planned);
    x["started_ms"] = f.started_ms;
    x["healed_ms"] = f.healed_ms;
    x["note"] = f.note;
    fs.push_back(std::move(x));
  }
  return j.dump(2);
}

std::pair<std::vector<applied_fault>, run_facts> faults_from_json(const std::string& text) {
  try {
    auto j = nlohmann::json::parse(text);
    run_facts facts;
    const auto& run = j.at("run");
    facts.started_ms = run.at("started_ms").get<std::int64_t>();
    facts.ended_ms = run.at("ended_ms").get<std::int64_t>();
    facts.recoveries = run.at("recoveries").get<std::uint32_t>();
    if (!run.at("error").is_null()) facts.error = run.at("error").get<std::string>();
    std::vector<applied_fault> faults;
    for (const auto& x : j.at("faults")) {
      applied_fault f;
      f.planned = fault_from_json(x);
      f.started_ms = x.at("started_ms").get<std::int64_t>();
      f.healed_ms = x.at("healed_ms").get<std::int64_t>();
      f.note = x.at("note").get<std::string>();
      faults.push_back(std::move(f));
    }
    return {std::move(faults), std::move(facts)};
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string{"fault timeline: "} + e.what());
  }
}

}  // namespace tidemark::chaos
