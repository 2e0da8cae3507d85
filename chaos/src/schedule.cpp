// Reading and expanding fault schedules. Random faults use their own draws on a 64-bit Mersenne
// Twister (not std::uniform_int_distribution, whose results differ between standard libraries),
// so a seed gives the same faults everywhere.
#include "tidemark/chaos/schedule.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>

namespace tidemark::chaos {

namespace {

constexpr std::pair<fault_kind, std::string_view> kind_names[] = {
    {fault_kind::kill, "kill"},           {fault_kind::pause, "pause"},
    {fault_kind::restart, "restart"},     {fault_kind::partition, "partition"},
    {fault_kind::drop, "drop"},           {fault_kind::delay, "delay"},
    {fault_kind::duplicate, "duplicate"}, {fault_kind::reorder, "reorder"},
    {fault_kind::slow_disk, "slow-disk"}, {fault_kind::disk_errors, "disk-errors"},
    {fault_kind::netem, "netem"},
};

std::string kind_list() {
  std::string out;
  for (const auto& [k, name] : kind_names) out += (out.empty() ? "" : ", ") + std::string{name};
  return out;
}

bool uses_probability(fault_kind k) {
  return k == fault_kind::drop || k == fault_kind::duplicate || k == fault_kind::reorder ||
         k == fault_kind::disk_errors;
}

bool uses_delay(fault_kind k) {
  return k == fault_kind::delay || k == fault_kind::slow_disk || k == fault_kind::netem;
}

bool uses_jitter(fault_kind k) {
  return k == fault_kind::delay || k == fault_kind::netem;
}

bool is_link_fault(fault_kind k) {
  return k == fault_kind::drop || k == fault_kind::delay || k == fault_kind::duplicate ||
         k == fault_kind::reorder;
}

// Errors name the source, the entry and the field.
struct where {
  const std::string& source;
  std::string entry;
  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw std::runtime_error("schedule '" + source + "': " + entry +
                             (field.empty() ? "" : "." + field) + ": " + what);
  }
};

std::string scalar(const YAML::Node& n, const where& w, const std::string& field) {
  if (!n.IsScalar()) w.fail(field, "must be a single value");
  return n.Scalar();
}

std::chrono::milliseconds duration_field(const YAML::Node& n, const where& w,
                                         const std::string& field) {
  try {
    return parse_duration(scalar(n, w, field));
  } catch (const std::invalid_argument& e) {
    w.fail(field, e.what());
  }
}

std::pair<std::chrono::milliseconds, std::chrono::milliseconds> range_field(
    const YAML::Node& n, const where& w, const std::string& field) {
  auto text = scalar(n, w, field);
  auto dots = text.find("..");
  try {
    if (dots == std::string::npos) {
      auto d = parse_duration(text);
      return {d, d};
    }
    auto lo = parse_duration(text.substr(0, dots));
    auto hi = parse_duration(text.substr(dots + 2));
    if (hi < lo) w.fail(field, "'" + text + "': the upper bound is below the lower one");
    return {lo, hi};
  } catch (const std::invalid_argument& e) {
    w.fail(field, e.what());
  }
}

double probability_field(const YAML::Node& n, const where& w,
                         const std::string& field = "probability") {
  double p = 0;
  try {
    p = n.as<double>();
  } catch (const YAML::Exception&) {
    w.fail(field, "'" + scalar(n, w, field) + "' is not a number");
  }
  if (!(p >= 0 && p <= 1)) w.fail(field, "must be within [0, 1]");
  return p;
}

std::vector<std::string> names_field(const YAML::Node& n, const where& w,
                                     const std::string& field) {
  if (!n.IsSequence()) w.fail(field, "must be a list of node ids, e.g. [n1, n2]");
  std::vector<std::string> out;
  for (const auto& x : n) out.push_back(scalar(x, w, field));
  return out;
}

fault_kind kind_field(const YAML::Node& n, const where& w, const std::string& field) {
  auto name = scalar(n, w, field);
  auto k = parse_fault_kind(name);
  if (!k) w.fail(field, "unknown fault '" + name + "' (known: " + kind_list() + ")");
  return *k;
}

void check_keys(const YAML::Node& n, const where& w, std::initializer_list<const char*> known) {
  for (const auto& kv : n) {
    auto key = kv.first.as<std::string>();
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return key == k; })) {
      std::string list;
      for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string{k};
      w.fail(key, "unknown field (known: " + list + ")");
    }
  }
}

fault read_fault(const YAML::Node& n, const where& w) {
  if (!n.IsMap())
    w.fail("", "must be a map like {at: 5s, fault: kill, targets: [n2], duration: 2s}");
  check_keys(n, w,
             {"at", "fault", "targets", "sides", "to", "duration", "probability", "delay", "jitter",
              "loss"});
  fault f;
  f.origin = w.entry;
  if (!n["at"]) w.fail("at", "missing (when the fault starts, e.g. 5s)");
  if (!n["fault"]) w.fail("fault", "missing (one of " + kind_list() + ")");
  f.at = duration_field(n["at"], w, "at");
  f.kind = kind_field(n["fault"], w, "fault");
  if (n["duration"]) f.duration = duration_field(n["duration"], w, "duration");
  if (n["targets"]) f.targets = names_field(n["targets"], w, "targets");
  if (n["sides"]) {
    if (f.kind != fault_kind::partition) w.fail("sides", "only a partition has sides");
    if (!n["sides"].IsSequence() || n["sides"].size() < 2)
      w.fail("sides", "must list at least two groups, e.g. [[n1], [n2, n3]]");
    for (const auto& side : n["sides"]) f.sides.push_back(names_field(side, w, "sides"));
  }
  if (n["to"]) {
    if (!is_link_fault(f.kind)) w.fail("to", "only drop, delay, duplicate and reorder have peers");
    f.peers = names_field(n["to"], w, "to");
  }
  if (n["probability"]) {
    if (!uses_probability(f.kind))
      w.fail("probability", "only drop, duplicate, reorder and disk-errors have a probability");
    f.probability = probability_field(n["probability"], w);
  }
  if (n["delay"]) {
    if (!uses_delay(f.kind)) w.fail("delay", "only delay, slow-disk and netem have a delay");
    f.delay = duration_field(n["delay"], w, "delay");
  }
  if (n["jitter"]) {
    if (!uses_jitter(f.kind)) w.fail("jitter", "only delay and netem have a jitter");
    f.jitter = duration_field(n["jitter"], w, "jitter");
  }
  if (n["loss"]) {
    if (f.kind != fault_kind::netem)
      w.fail("loss", "only netem has a loss (drop has a probability)");
    f.probability = probability_field(n["loss"], w, "loss");
  }
  if (f.targets.empty() && f.sides.empty())
    w.fail("targets", f.kind == fault_kind::partition
                          ? "missing: a partition needs targets (cut off) or sides"
                          : "missing (the node ids the fault happens to, e.g. [n2])");
  if (f.duration.count() <= 0 && f.kind != fault_kind::kill)
    w.fail("duration", "missing or 0: every fault but kill is healed after a duration");
  if (uses_probability(f.kind) && f.probability <= 0) w.fail("probability", "missing or 0");
  if (f.kind == fault_kind::netem) {
    if (f.delay.count() <= 0 && f.jitter.count() <= 0 && f.probability <= 0)
      w.fail("delay", "netem needs a delay, a jitter or a loss");
  } else if (uses_delay(f.kind) && f.delay.count() <= 0 && f.jitter.count() <= 0) {
    w.fail("delay", "missing or 0");
  }
  return f;
}

random_faults read_random(const YAML::Node& n, const where& w) {
  if (!n.IsMap())
    w.fail("", "must be a map like {kinds: [kill, pause], every: 4s..8s, duration: 1s..3s}");
  check_keys(
      n, w,
      {"kinds", "every", "duration", "start", "targets", "seed", "probability", "delay", "jitter"});
  random_faults r;
  if (!n["kinds"] || !n["kinds"].IsSequence() || n["kinds"].size() == 0)
    w.fail("kinds", "missing: list the fault kinds to draw from (" + kind_list() + ")");
  for (const auto& k : n["kinds"]) r.kinds.push_back(kind_field(k, w, "kinds"));
  if (n["every"]) std::tie(r.every_min, r.every_max) = range_field(n["every"], w, "every");
  if (r.every_min.count() <= 0) w.fail("every", "must be above 0");
  if (n["duration"])
    std::tie(r.duration_min, r.duration_max) = range_field(n["duration"], w, "duration");
  if (r.duration_min.count() <= 0) w.fail("duration", "must be above 0");
  if (n["start"]) r.start = duration_field(n["start"], w, "start");
  if (n["targets"]) r.targets = names_field(n["targets"], w, "targets");
  if (n["seed"]) {
    try {
      r.seed = n["seed"].as<std::uint64_t>();
    } catch (const YAML::Exception&) {
      w.fail("seed", "'" + scalar(n["seed"], w, "seed") + "' is not a non-negative integer");
    }
  }
  if (n["probability"]) r.probability = probability_field(n["probability"], w);
  if (n["delay"]) r.delay = duration_field(n["delay"], w, "delay");
  if (n["jitter"]) r.jitter = duration_field(n["jitter"], w, "jitter");
  return r;
}

// A uniform draw from [lo, hi]; hi - lo is small, so the modulo bias is negligible.
std::int64_t draw(std::mt19937_64& rng, std::int64_t lo, std::int64_t hi) {
  return lo + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
}

void check_nodes(const fault& f, const std::vector<std::string>& nodes, const std::string& source) {
  auto known = [&](const std::string& id, const char* field, bool coordinator_ok) {
    if (coordinator_ok && id == "coordinator") return;
    if (std::find(nodes.begin(), nodes.end(), id) == nodes.end()) {
      std::string list;
      for (const auto& n : nodes) list += (list.empty() ? "" : ", ") + n;
      throw std::runtime_error("schedule '" + source + "': " + f.origin + "." + field +
                               ": no node '" + id + "' in the cluster (nodes: " + list + ")");
    }
  };
  for (const auto& t : f.targets) known(t, "targets", false);
  for (const auto& side : f.sides)
    for (const auto& t : side) known(t, "sides", true);
  for (const auto& p : f.peers) known(p, "to", false);
}

std::string seconds_text(std::chrono::milliseconds d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%gs", static_cast<double>(d.count()) / 1000.0);
  return buf;
}

}  // namespace

std::string_view to_string(fault_kind k) noexcept {
  for (const auto& [kind, name] : kind_names)
    if (kind == k) return name;
  return "?";
}

std::optional<fault_kind> parse_fault_kind(std::string_view name) noexcept {
  for (const auto& [kind, n] : kind_names)
    if (n == name) return kind;
  return std::nullopt;
}

bool is_process_fault(fault_kind k) noexcept {
  return k == fault_kind::kill || k == fault_kind::pause || k == fault_kind::restart;
}

std::chrono::milliseconds parse_duration(std::string_view text) {
  std::string t{text};
  t.erase(std::remove_if(t.begin(), t.end(), [](unsigned char c) { return std::isspace(c); }),
          t.end());
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(t, &used);
  } catch (const std::exception&) {
    throw std::invalid_argument("'" + std::string{text} +
                                "' is not a duration (e.g. 250ms, 5s, 2m)");
  }
  auto unit = t.substr(used);
  double ms = 0;
  if (unit.empty() || unit == "ms")
    ms = v;
  else if (unit == "s")
    ms = v * 1000;
  else if (unit == "m" || unit == "min")
    ms = v * 60000;
  else if (unit == "h")
    ms = v * 3600000;
  else
    throw std::invalid_argument("'" + std::string{text} + "': unknown unit '" + unit +
                                "' (ms, s, m, h)");
  if (!std::isfinite(ms) || ms < 0)
    throw std::invalid_argument("'" + std::string{text} + "' is not a duration >= 0");
  return std::chrono::milliseconds{static_cast<std::int64_t>(std::llround(ms))};
}

schedule parse_schedule(const std::string& yaml, const std::string& source) {
  YAML::Node doc;
  try {
    doc = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    throw std::runtime_error("schedule '" + source + "': " + e.what());
  }
  schedule s;
  s.source = source;
  where top{source, "schedule"};
  if (!doc.IsMap()) top.fail("", "must be a map with 'faults' (a list) and/or 'random'");
  check_keys(doc, top, {"faults", "random"});
  try {
    if (doc["faults"]) {
      if (!doc["faults"].IsSequence()) where{source, "faults"}.fail("", "must be a list of faults");
      std::size_t i = 0;
      for (const auto& n : doc["faults"])
        s.scripted.push_back(read_fault(n, where{source, "faults[" + std::to_string(i++) + "]"}));
    }
    if (doc["random"]) s.random = read_random(doc["random"], where{source, "random"});
  } catch (const YAML::Exception& e) {
    throw std::runtime_error("schedule '" + source + "': " + e.what());
  }
  if (s.scripted.empty() && !s.random) top.fail("", "has neither 'faults' nor 'random'");
  return s;
}

schedule load_schedule(const std::string& path) {
  std::ifstream in{path};
  if (!in) throw std::runtime_error("schedule '" + path + "': cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  return parse_schedule(text.str(), path);
}

std::vector<fault> expand(const schedule& s, std::uint64_t seed, std::chrono::milliseconds length,
                          const std::vector<std::string>& nodes) {
  std::vector<fault> out;
  for (const auto& f : s.scripted) {
    check_nodes(f, nodes, s.source);
    if (f.at < length) out.push_back(f);
  }
  if (s.random) {
    const auto& r = *s.random;
    auto pool = r.targets.empty() ? nodes : r.targets;
    if (pool.empty())
      throw std::runtime_error("schedule '" + s.source + "': random: no node to choose from");
    std::mt19937_64 rng{r.seed.value_or(seed)};
    auto at = r.start;
    for (int i = 1; at < length; ++i) {
      fault f;
      f.kind = r.kinds[static_cast<std::size_t>(
          draw(rng, 0, static_cast<std::int64_t>(r.kinds.size()) - 1))];
      f.at = at;
      f.duration =
          std::chrono::milliseconds{draw(rng, r.duration_min.count(), r.duration_max.count())};
      f.targets = {
          pool[static_cast<std::size_t>(draw(rng, 0, static_cast<std::int64_t>(pool.size()) - 1))]};
      if (uses_probability(f.kind) || f.kind == fault_kind::netem) f.probability = r.probability;
      if (uses_delay(f.kind)) f.delay = r.delay;
      if (uses_jitter(f.kind)) f.jitter = r.jitter;
      f.origin = "random #" + std::to_string(i);
      check_nodes(f, nodes, s.source);
      out.push_back(std::move(f));
      at += std::chrono::milliseconds{draw(rng, r.every_min.count(), r.every_max.count())};
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const fault& a, const fault& b) { return a.at < b.at; });
  return out;
}

std::string describe(const fault& f) {
  std::string out = seconds_text(f.at) + " " + std::string{to_string(f.kind)};
  auto list = [](const std::vector<std::string>& xs) {
    std::string s;
    for (const auto& x : xs) s += (s.empty() ? "" : ",") + x;
    return s;
  };
  if (!f.sides.empty()) {
    for (const auto& side : f.sides) out += " [" + list(side) + "]";
  } else {
    out += " " + list(f.targets);
  }
  if (!f.peers.empty()) out += " to " + list(f.peers);
  if (f.probability > 0)
    out += (f.kind == fault_kind::netem ? " loss=" : " p=") +
           std::to_string(f.probability).substr(0, 4);
  if (f.delay.count() > 0) out += " delay=" + seconds_text(f.delay);
  if (f.jitter.count() > 0) out += " jitter=" + seconds_text(f.jitter);
  out += f.duration.count() > 0 ? " for " + seconds_text(f.duration) : std::string{" (stays down)"};
  return out + " (" + f.origin + ")";
}

}  // namespace tidemark::chaos
