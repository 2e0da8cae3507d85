// Statistics tasks (see statistics.hpp).
#include "tidemark/riot/statistics.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "text.hpp"

namespace tidemark::riot {

namespace {

bool contains(const std::vector<std::string>& xs, const std::string& x) {
  return std::find(xs.begin(), xs.end(), x) != xs.end();
}

}  // namespace

std::vector<std::string> statistics_fields(dataset d) {
  switch (d) {
    case dataset::city: return {"temperature", "humidity", "light", "dust", "airquality_raw"};
    case dataset::taxi:
      return {"trip_time_in_secs", "trip_distance", "fare_amount", "surcharge",
              "mta_tax",           "tip_amount",    "tolls_amount", "total_amount"};
    case dataset::fit:
      return {"acc_chest_x", "acc_chest_y", "acc_chest_z", "ecg_lead_1", "ecg_lead_2", "acc_ankle_x",
              "acc_ankle_y", "acc_ankle_z", "acc_arm_x",   "acc_arm_y",  "acc_arm_z"};
    case dataset::grid: return {"energyconsumed"};
  }
  return {};
}

// ---- block average ---------------------------------------------------------------------------

block_average_config block_average_config::for_dataset(dataset d) {
  return {d == dataset::city ? std::size_t{5} : std::size_t{10}, statistics_fields(d)};
}

block_average::block_average(block_average_config config) : config_(std::move(config)) {
  if (config_.window_size == 0) throw std::invalid_argument("block_average: window_size must be > 0");
}

std::optional<double> block_average::step(state& s, double x) const {
  s.sum += x;
  if (++s.count < config_.window_size) return std::nullopt;
  auto mean = s.sum / static_cast<double>(s.count);
  s = state{};
  return mean;
}

bool block_average::accepts(const observation& o) const {
  return o.numeric && !o.missing && contains(config_.fields, o.obs_type);
}

std::optional<observation> block_average::process(const observation& o) {
  if (!accepts(o)) return std::nullopt;
  return process(states_.get(o, [] { return state{}; }), o);
}

std::optional<observation> block_average::process(state& s, observation o) const {
  if (!accepts(o)) return std::nullopt;
  auto mean = step(s, o.value);
  if (!mean) return std::nullopt;
  detail::append_field(o.meta, o.obs_type);
  o.obs_type = "AVG";
  set_value(o, *mean);
  return std::optional<observation>{std::move(o)};
}

// ---- accumulator -----------------------------------------------------------------------------

accumulator_config accumulator_config::for_dataset(dataset d) {
  switch (d) {
    case dataset::city: return {20, {"SLR"}};
    case dataset::taxi: return {10, {"SLR"}};
    case dataset::fit: return {20, {"SLR"}};
    case dataset::grid: return {8000, {"SLR"}};
  }
  return {};
}

accumulator::accumulator(accumulator_config config) : config_(std::move(config)) {
  if (config_.window_size == 0) throw std::invalid_argument("accumulator: window_size must be > 0");
}

expected<std::optional<accumulated>> accumulator::process(const observation& o) {
  std::optional<tidemark::error> rejected;
  std::string_view meta = o.meta.view();
  auto comma = meta.rfind(',');
  auto field = comma == std::string_view::npos ? meta : meta.substr(comma + 1);
  key_.assign(o.sensor_id.str()) += o.obs_type;
  auto outer = current_.find(key_);
  if (outer == current_.end()) outer = current_.emplace(key_, accumulated::mapped_type{}).first;
  auto inner = outer->second.find(field);
  if (inner == outer->second.end()) inner = outer->second.emplace(std::string(field), std::vector<timed_value>{}).first;
  auto& values = inner->second;
  if (contains(config_.multivalue_types, o.obs_type)) {
    split_fields(o.text, '#', parts_);
    if (values.empty()) values.reserve(parts_.size());  // a later list grows it geometrically
    const auto before = values.size();  // a list with a bad element adds none of its values
    for (auto p : parts_) {
      auto x = detail::parse_double(p);
      if (!x) {
        rejected = fail("accumulator", "message " + std::to_string(o.msg_id) + ", " + o.obs_type +
                                        ": list element \"" + std::string(p) + "\" is not a number");
        values.resize(before);
        break;
      }
      values.push_back({o.timestamp, *x});
    }
  } else if (o.numeric && !o.missing) {
    values.push_back({o.timestamp, o.value});
  } else {
    rejected = fail("accumulator", "message " + std::to_string(o.msg_id) + ", " + o.obs_type +
                                    ": value \"" + o.text + "\" is not a number");
  }
  if (++count_ < config_.window_size) {
    if (rejected) return *rejected;
    return std::optional<accumulated>{};
  }
  const auto earlier = [](const timed_value& a, const timed_value& b) { return a.time < b.time; };
  for (auto& [key, fields] : current_)
    for (auto& [name, series] : fields)
      if (!std::is_sorted(series.begin(), series.end(), earlier))  // usual: no sort, no buffer
        std::stable_sort(series.begin(), series.end(), earlier);
  accumulated done;
  done.swap(current_);
  count_ = 0;
  if (rejected) return *rejected;  // the window is complete but this input's value was bad
  return std::optional<accumulated>{std::move(done)};
}

// ---- distinct approximate count ---------------------------------------------------------------

distinct_count_config distinct_count_config::for_dataset(dataset) { return {10}; }

distinct_count::distinct_count(distinct_count_config config)
    : bits_(config.bucket_bits), empty_(std::size_t{1} << config.bucket_bits) {
  if (bits_ < 4 || bits_ > 20) throw std::invalid_argument("distinct_count: bucket_bits must be in 4..20");
  ranks_.assign(std::size_t{1} << bits_, 0);
  // Durand & Flajolet's alpha_m, asymptotic form (exact to < 0.1 % for m >= 16).
  constexpr double pi = 3.14159265358979323846;
  auto m = static_cast<double>(ranks_.size());
  alpha_ = 0.39701 - (2 * pi * pi + std::log(2.0) * std::log(2.0)) / (48 * m);
}

double distinct_count::process(std::string_view item) {
  auto h = XXH3_64bits(item.data(), item.size());
  auto bucket = h & ((std::uint64_t{1} << bits_) - 1);
  auto rest = h >> bits_;
  auto rank = static_cast<std::uint8_t>(rest == 0 ? 64 - bits_ + 1 : __builtin_ctzll(rest) + 1);
  auto& r = ranks_[bucket];
  if (rank > r) {
    if (r == 0) --empty_;
    rank_sum_ += rank - r;
    r = rank;
  }
  return estimate();
}

double distinct_count::estimate() const {
  auto m = static_cast<double>(ranks_.size());
  if (empty_ > 0) {
    // Linear counting is the better estimator while it says fewer than 3 m items.
    auto linear = m * std::log(m / static_cast<double>(empty_));
    if (linear <= 3 * m) return linear;
  }
  return alpha_ * m * std::exp2(static_cast<double>(rank_sum_) / m);
}

double distinct_count::standard_error() const {
  return 1.30 / std::sqrt(static_cast<double>(ranks_.size()));
}

// ---- Kalman filter -----------------------------------------------------------------------------

kalman_config kalman_config::for_dataset(dataset d) {
  kalman_config c;
  c.fields = statistics_fields(d);
  return c;
}

kalman_filter::kalman_filter(kalman_config config) : config_(std::move(config)) {
  if (config_.sensor_noise <= 0 || config_.process_noise < 0 || config_.initial_error < 0)
    throw std::invalid_argument("kalman_filter: need r > 0, q >= 0 and p0 >= 0");
}

double kalman_filter::step(state& s, double z) const {
  auto p = s.error + config_.process_noise;
  auto gain = p / (p + config_.sensor_noise);
  s.estimate += gain * (z - s.estimate);
  s.error = (1 - gain) * p;
  return s.estimate;
}

bool kalman_filter::accepts(const observation& o) const {
  return o.numeric && !o.missing && contains(config_.fields, o.obs_type);
}

bool kalman_filter::process(observation& o) {
  if (!accepts(o)) return false;
  set_value(o, step(states_.get(o, [this] { return initial(); }), o.value));
  return true;
}

std::optional<observation> kalman_filter::process(state& s, observation o) const {
  if (!accepts(o)) return std::nullopt;
  set_value(o, step(s, o.value));
  return std::optional<observation>{std::move(o)};
}

// ---- second-order moment -----------------------------------------------------------------------

second_order_moment_config second_order_moment_config::for_dataset(dataset) { return {}; }

second_order_moment::second_order_moment(second_order_moment_config config)
    : estimators_(config.estimators), rng_(config.seed) {
  if (config.estimators == 0) throw std::invalid_argument("second_order_moment: estimators must be > 0");
}

double second_order_moment::process(std::string_view value) {
  ++n_;
  double sum = 0;
  for (auto& e : estimators_) {
    if (rng_() % n_ == 0) {  // reservoir sampling: position n replaces with probability 1/n
      e.value.assign(value);
      e.count = 1;
    } else if (e.value == value) {
      ++e.count;
    }
    sum += static_cast<double>(n_) * static_cast<double>(2 * e.count - 1);
  }
  return sum / static_cast<double>(estimators_.size());
}

// ---- interpolation -----------------------------------------------------------------------------

interpolation_config interpolation_config::for_dataset(dataset d) {
  switch (d) {
    case dataset::city: return {statistics_fields(d), 5};
    case dataset::taxi: return {{"trip_time_in_secs", "trip_distance"}, 5};
    case dataset::fit: return {statistics_fields(d), 5};
    case dataset::grid: return {{"energyconsumed"}, 5};
  }
  return {};
}

interpolation::interpolation(interpolation_config config) : config_(std::move(config)) {}

bool interpolation::accepts(const observation& o) const {
  return config_.window_size > 0 && contains(config_.fields, o.obs_type);
}

bool interpolation::step(state& s, observation& o) const {
  if (o.missing || !o.numeric) {
    if (s.window.empty()) return false;
    // summed oldest first (the ring's oldest sits at `next`), so the mean is what summing the
    // values in arrival order gives, to the last bit
    const auto n = s.window.size();
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) sum += s.window[(s.next + i) % n];
    set_value(o, sum / static_cast<double>(n));
    return true;
  }
  if (s.window.size() < config_.window_size) {
    s.window.push_back(o.value);
  } else {
    s.window[s.next] = o.value;
    s.next = static_cast<std::uint32_t>((s.next + 1) % config_.window_size);
  }
  return true;
}

bool interpolation::process(observation& o) {
  if (!accepts(o)) return !o.missing;
  return step(states_.get(o, [] { return state{}; }), o);
}

}  // namespace tidemark::riot
