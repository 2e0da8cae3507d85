// Range filter and Bloom filter (see filter.hpp).
#include "tidemark/riot/filter.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cmath>
#include <stdexcept>

#include "text.hpp"

namespace tidemark::riot {

range_filter_config range_filter_config::parse(std::string_view spec) {
  range_filter_config c;
  std::vector<std::string_view> entries, parts;
  split_fields(spec, ',', entries);
  for (auto entry : entries) {
    entry = trim(entry);
    if (entry.empty()) continue;
    split_fields(entry, ':', parts);
    auto lo = parts.size() == 3 ? detail::parse_double(parts[1]) : std::nullopt;
    auto hi = parts.size() == 3 ? detail::parse_double(parts[2]) : std::nullopt;
    if (!lo || !hi || *lo > *hi || trim(parts[0]).empty())
      throw std::invalid_argument("range filter: bad entry '" + std::string(entry) +
                                  "'; expected name:min:max with min <= max");
    c.ranges[std::string(trim(parts[0]))] = {*lo, *hi};
  }
  return c;
}

range_filter_config range_filter_config::for_dataset(dataset d) {
  switch (d) {
    case dataset::city:
      return parse("temperature:-12.5:43.1,humidity:10.7:95.2,light:1345:26282,"
                   "dust:186.61:5188.21,airquality_raw:17:363");
    case dataset::taxi:
      return parse("trip_time_in_secs:140:3155,trip_distance:1.37:29.86,fare_amount:6.00:201.00,"
                   "tip_amount:0.65:38.55,tolls_amount:2.50:18.00");
    case dataset::fit:
      return parse("acc_chest_x:-13.931:4.123,acc_chest_y:-4.6376:5.2361,acc_chest_z:-8.1881:7.8786,"
                   "ecg_lead_1:-4.9314:6.1371,ecg_lead_2:-6.786:6.6604,acc_ankle_x:-5.0006:8.1472,"
                   "acc_ankle_y:-14.303:1.5909,acc_ankle_z:-8.6234:8.6958,acc_arm_x:-9.824:5.5778,"
                   "acc_arm_y:-10.059:8.506,acc_arm_z:-6.6739:9.5725");
    case dataset::grid:
      return parse("energyconsumed:1.828:36.658");
  }
  return {};
}

range_filter::range_filter(range_filter_config config) : config_(std::move(config)) {}

bool range_filter::check(std::string_view field, double value) const {
  auto it = config_.ranges.find(std::string(field));
  return it == config_.ranges.end() || (value >= it->second.min && value <= it->second.max);
}

expected<bool> range_filter::process(observation& o) {
  auto it = config_.ranges.find(o.obs_type);
  if (it == config_.ranges.end()) return true;
  if (!o.numeric) {
    o.missing = true;
    return fail("range_filter", "message " + std::to_string(o.msg_id) + ", field '" + o.obs_type +
                                    "': value \"" + o.text + "\" is not a number");
  }
  bool ok = o.value >= it->second.min && o.value <= it->second.max;
  if (!ok) o.missing = true;
  return ok;
}

namespace {

std::uint64_t bits_for(std::uint64_t capacity, double fpp) {
  if (capacity == 0 || !(fpp > 0 && fpp < 1))
    throw std::invalid_argument("bloom filter: capacity must be > 0 and 0 < fpp < 1");
  auto ln2 = std::log(2.0);
  return static_cast<std::uint64_t>(std::ceil(-static_cast<double>(capacity) * std::log(fpp) / (ln2 * ln2)));
}

std::uint32_t hashes_for(std::uint64_t capacity, std::uint64_t bits) {
  auto k = std::lround(static_cast<double>(bits) / static_cast<double>(capacity) * std::log(2.0));
  return static_cast<std::uint32_t>(std::max(1L, k));
}

}  // namespace

bloom_filter::bloom_filter(std::uint64_t capacity, double fpp)
    : capacity_(capacity), fpp_(fpp), bits_(bits_for(capacity, fpp)),
      hashes_(hashes_for(capacity, bits_)), words_((bits_ + 63) / 64, 0) {}

bloom_filter bloom_filter::from_words(std::uint64_t capacity, double fpp, std::vector<std::uint64_t> words) {
  // Checked before constructing, so corrupt parameters cannot trigger a huge allocation.
  auto expected = (bits_for(capacity, fpp) + 63) / 64;
  if (words.size() != expected)
    throw std::invalid_argument("bloom filter: " + std::to_string(words.size()) + " words given, " +
                                std::to_string(expected) + " expected for capacity " +
                                std::to_string(capacity) + " and fpp " + std::to_string(fpp));
  bloom_filter f(capacity, fpp);
  f.words_ = std::move(words);
  return f;
}

// Kirsch-Mitzenmacher double hashing: bit i = h1 + i*h2 (mod m) from one 128-bit hash.
void bloom_filter::insert(std::string_view key) {
  auto h = XXH3_128bits(key.data(), key.size());
  for (std::uint32_t i = 0; i < hashes_; ++i) {
    auto bit = (h.low64 + i * h.high64) % bits_;
    words_[bit >> 6] |= std::uint64_t{1} << (bit & 63);
  }
}

bool bloom_filter::might_contain(std::string_view key) const {
  auto h = XXH3_128bits(key.data(), key.size());
  for (std::uint32_t i = 0; i < hashes_; ++i) {
    auto bit = (h.low64 + i * h.high64) % bits_;
    if (!(words_[bit >> 6] & (std::uint64_t{1} << (bit & 63)))) return false;
  }
  return true;
}

bloom_filter_config bloom_filter_config::for_dataset(dataset) { return {}; }

bloom_filter_check::bloom_filter_check(bloom_filter_config config, bloom_filter filter)
    : config_(std::move(config)), filter_(std::move(filter)) {}

bloom_filter_check bloom_filter_check::from_ids(bloom_filter_config config,
                                                const std::vector<std::string>& ids) {
  bloom_filter f(config.capacity, config.fpp);
  for (auto& id : ids) f.insert(id);
  return {std::move(config), std::move(f)};
}

bloom_filter_check bloom_filter_check::from_file(bloom_filter_config config, const std::string& path) {
  return from_ids(std::move(config), text_file(path).lines());
}

bool bloom_filter_check::process(observation& o) const {
  bool ok = filter_.might_contain(o.sensor_id.view());
  if (!ok) o.missing = true;
  return ok;
}

}  // namespace tidemark::riot
