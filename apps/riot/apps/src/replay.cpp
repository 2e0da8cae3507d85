// Replay schedule, rate profiles and the FIT/GRID generators (see replay.hpp).
#include "tidemark/riot/apps/replay.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <tuple>

#include "tidemark/riot/lines.hpp"
#include "tidemark/riot/senml.hpp"

namespace tidemark::riot::apps {

rate_profile parse_rate_profile(std::string_view name) {
  if (name == "constant") return rate_profile::constant;
  if (name == "paper") return rate_profile::paper;
  throw std::invalid_argument("unknown rate profile '" + std::string{name} + "'; use constant or paper");
}

namespace {

std::string format_value(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.5g", v);
  return buf;
}

}  // namespace

std::vector<std::string> synthetic_fit(const std::string& data_dir, std::uint64_t seed, double seconds) {
  // Channel names and units from the schema, base values from the three sample records.
  auto schema = text_file(data_dir + "/mhealth_schema.csv").lines();
  if (schema.size() < 2) throw std::runtime_error(data_dir + "/mhealth_schema.csv: expected names and units lines");
  std::vector<std::string_view> names, units;
  split_fields(schema[0], ',', names);
  split_fields(schema[1], ',', units);
  std::map<std::string, double> base;
  senml_parse parse;
  auto samples = text_file(data_dir + "/FIT_sample_data_senml.csv").lines();
  for (const auto& line : samples) {
    auto rec = parse.process(senml_payload(line));
    if (!rec) throw std::runtime_error("FIT sample: " + rec.error().message);
    for (const auto& f : rec->fields)
      if (f.numeric) base[f.name] += f.value / static_cast<double>(samples.size());
  }
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, 1);
  constexpr int subjects = 10;
  constexpr std::int64_t start = 1417890600000;  // the sample's first time
  std::vector<double> phase(subjects), motion(subjects);
  for (int s = 0; s < subjects; ++s) {
    phase[s] = std::uniform_real_distribution<double>(0, 6.283185307179586)(rng);
    motion[s] = std::uniform_real_distribution<double>(0.5, 2.0)(rng);  // steps per second
  }
  auto ticks = static_cast<std::int64_t>(seconds * 50);
  std::vector<std::string> lines;
  lines.reserve(static_cast<std::size_t>(ticks) * subjects);
  for (std::int64_t t = 0; t < ticks; ++t) {
    auto time = start + t * 20;  // 50 Hz
    for (int s = 0; s < subjects; ++s) {
      std::string json = R"({"e":[{"u":"string","n":"subjectId","sv":"subject)" + std::to_string(s + 1) + "\"}";
      auto label = 1 + (s + t / 500) % 12;  // activity changes every 10 s
      for (std::size_t c = 0; c < names.size(); ++c) {
        const std::string n(names[c]);
        if (n == "subjectId" || n == "timestamp") continue;
        double v;
        if (n == "label") {
          v = static_cast<double>(label);
        } else {
          double b = base.count(n) ? base[n] : 0.0;
          double scale = 0.1 + 0.15 * std::abs(b);
          v = b + scale * std::sin(phase[s] + 6.283185307179586 * motion[s] * static_cast<double>(t) / 50) +
              0.05 * scale * noise(rng);
        }
        json += R"(,{"v":")" + format_value(v) + R"(","u":")" + (c < units.size() ? std::string(units[c]) : "") + R"(","n":")" + n + "\"}";
      }
      json += R"(],"bt":")" + std::to_string(time) + "\"}";
      lines.push_back(std::to_string(time) + "," + json);
    }
  }
  return lines;
}

std::vector<std::string> synthetic_grid(std::uint64_t seed, std::uint32_t meters, std::uint32_t half_hours) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> offset_min(0, 3);          // minutes around the half hour
  std::lognormal_distribution<double> kwh(std::log(8.0), 0.6);  // median 8 kWh per half hour
  constexpr std::int64_t start = 1247511001000;                 // the GRID timer file's first range
  std::vector<std::pair<std::int64_t, std::string>> rows;
  for (std::uint32_t h = 0; h < half_hours; ++h)
    for (std::uint32_t m = 0; m < meters; ++m) {
      auto centre = start + static_cast<std::int64_t>(h) * 1'800'000 + 900'000;
      auto time = centre + static_cast<std::int64_t>(std::llround(offset_min(rng) * 60'000));
      auto e = std::clamp(kwh(rng), 1.9, 36.6);
      rows.emplace_back(time, R"({"e":[{"u":"string","n":"meterid","sv":"meter-)" + std::to_string(m) +
                                  R"("},{"v":")" + format_value(e) + R"(","u":"kWh","n":"energyconsumed"}],"bt":)" +
                                  std::to_string(time) + "}");
    }
  std::stable_sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.first < b.first; });
  std::vector<std::string> lines;
  lines.reserve(rows.size());
  for (auto& [t, json] : rows) lines.push_back(std::to_string(t) + "," + json);
  return lines;
}

std::vector<std::string> dataset_lines(const replay_config& config) {
  switch (config.dataset) {
    case dataset::city: return text_file(config.data_dir + "/SYS_sample_data_senml.csv").lines();
    case dataset::taxi: return text_file(config.data_dir + "/TAXI_sample_data_senml.csv").lines();
    case dataset::fit: return synthetic_fit(config.data_dir, config.seed);
    case dataset::grid: return synthetic_grid(config.seed);
  }
  return {};
}

double rate_factor(riot::dataset d, double seconds) {
  double phase = std::fmod(seconds, 10.0) / 10.0;
  constexpr double two_pi = 6.283185307179586;
  switch (d) {
    case dataset::city: return 0.95 + 0.05 * std::sin(two_pi * phase);
    case dataset::fit: return 1.0;
    case dataset::grid: return 0.05 + 0.95 * std::exp(-(phase - 0.5) * (phase - 0.5) / (2 * 0.1 * 0.1));
    case dataset::taxi: return phase < 0.5 ? 0.8 + 0.2 * std::sin(two_pi * phase) : 0.075;
  }
  return 1.0;
}

replay_schedule::replay_schedule(const replay_config& config) : config_(config) {
  if (config_.scale == 0) throw std::invalid_argument("replay: --scale must be at least 1");
  if (config_.rate < 0) throw std::invalid_argument("replay: --rate must be >= 0");
  if (config_.rate == 0 && !(config_.speed > 0)) throw std::invalid_argument("replay: --speed must be > 0");
  auto id_field = senml_fanout_config::for_dataset(config_.dataset, config_.data_dir).id_field;
  senml_parse parse;
  std::set<std::string> ids;
  auto lines = dataset_lines(config_);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    auto json = senml_payload(lines[i]);
    auto rec = parse.process(json);
    if (!rec) throw std::runtime_error("replay: line " + std::to_string(i + 1) + ": " + rec.error().message);
    const auto* id = rec->find(id_field);
    auto bt = json.find("\"bt\":");
    if (!id || bt == std::string_view::npos)
      throw std::runtime_error("replay: line " + std::to_string(i + 1) + " has no '" + id_field + "' or \"bt\"");
    auto id_pos = json.find("\"" + id->text + "\"");
    auto digits = json.find_first_of("-0123456789", bt + 5);
    auto digits_end = json.find_first_not_of("0123456789", digits + 1);
    if (id_pos == std::string_view::npos || id_pos > bt || digits == std::string_view::npos ||
        digits_end == std::string_view::npos)
      throw std::runtime_error("replay: line " + std::to_string(i + 1) + ": cannot locate the id and bt");
    record r;
    r.time = rec->base_time;
    r.head = std::string{json.substr(0, id_pos + 1)};
    r.id = id->text;
    r.middle = std::string{json.substr(id_pos + 1 + id->text.size(), digits - (id_pos + 1 + id->text.size()))};
    r.tail = std::string{json.substr(digits_end)};
    ids.insert(r.id);
    records_.push_back(std::move(r));
  }
  if (records_.empty()) throw std::runtime_error("replay: the dataset has no messages");
  std::stable_sort(records_.begin(), records_.end(), [](auto& a, auto& b) { return a.time < b.time; });
  base_ids_.assign(ids.begin(), ids.end());
  first_ = records_.front().time;
  auto span = records_.back().time - first_;
  period_ = std::max<std::int64_t>(1, span + (records_.size() > 1 ? span / static_cast<std::int64_t>(records_.size() - 1) : 1));
  total_ = config_.messages ? config_.messages : records_.size() * config_.scale;
  for (std::uint32_t k = 0; k < config_.scale; ++k) {
    cursor c{0, k, 0};
    c.time = time_of(c);
    heap_.push_back(c);
  }
  std::make_heap(heap_.begin(), heap_.end(), later);
}

replay_schedule::position replay_schedule::tell() const {
  position p{emitted_, due_ns_, {}};
  for (const auto& c : heap_) p.cursors.emplace_back(c.copy, c.index);
  return p;
}

void replay_schedule::seek(const position& p) {
  if (p.emitted > total_ || p.cursors.size() > config_.scale)
    throw std::invalid_argument("replay: the position (" + std::to_string(p.emitted) + " messages, " +
                                std::to_string(p.cursors.size()) + " copies) does not fit this replay of " +
                                std::to_string(total_) + " messages in " + std::to_string(config_.scale) + " copies");
  std::vector<cursor> heap;
  for (const auto& [copy, index] : p.cursors) {
    if (copy >= config_.scale || (!config_.messages && index >= records_.size()))
      throw std::invalid_argument("replay: copy " + std::to_string(copy) + " at record " + std::to_string(index) +
                                  " does not fit this replay");
    cursor c{0, copy, index};
    c.time = time_of(c);
    heap.push_back(c);
  }
  std::make_heap(heap.begin(), heap.end(), later);
  heap_ = std::move(heap);
  emitted_ = p.emitted;
  due_ns_ = p.due_ns;
}

// (time, copy) orders the cursors totally: the heap pops them in one order, however it was built
bool replay_schedule::later(const cursor& a, const cursor& b) noexcept {
  return std::tie(a.time, a.copy) > std::tie(b.time, b.copy);
}

std::string replay_schedule::copy_id(std::string_view id, std::uint32_t copy) {
  return copy == 0 ? std::string{id} : std::string{id} + "-" + std::to_string(copy);
}

std::int64_t replay_schedule::time_of(const cursor& c) const {
  auto n = records_.size();
  auto cycle = static_cast<std::int64_t>(c.index / n);
  return records_[c.index % n].time + cycle * period_ +
         static_cast<std::int64_t>(c.copy) * period_ / static_cast<std::int64_t>(config_.scale);
}

std::optional<scheduled_message> replay_schedule::next() {
  if (emitted_ >= total_ || heap_.empty()) return std::nullopt;
  std::pop_heap(heap_.begin(), heap_.end(), later);
  auto c = heap_.back();
  heap_.pop_back();
  const auto& r = records_[c.index % records_.size()];
  scheduled_message m;
  m.msg_id = static_cast<std::int64_t>(++emitted_);
  m.time = c.time;
  m.line = std::to_string(c.time) + "," + r.head + copy_id(r.id, c.copy) + r.middle + std::to_string(c.time) + r.tail;
  if (config_.rate == 0) {
    m.due_ns = static_cast<std::int64_t>(static_cast<double>(c.time - first_) * 1e6 / config_.speed);
  } else {
    m.due_ns = due_ns_;
    double factor = config_.profile == rate_profile::paper ? rate_factor(config_.dataset, static_cast<double>(due_ns_) / 1e9) : 1.0;
    due_ns_ += static_cast<std::int64_t>(1e9 / (config_.rate * factor));
  }
  ++c.index;
  if (config_.messages || c.index < records_.size()) {
    c.time = time_of(c);
    heap_.push_back(c);
    std::push_heap(heap_.begin(), heap_.end(), later);
  }
  return m;
}

}  // namespace tidemark::riot::apps
