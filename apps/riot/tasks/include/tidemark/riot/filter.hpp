// RIoTBench filters: the range filter (RGF) and the Bloom filter (BLF). Both mark an observation
// that fails as missing (as the ETL app does) and say whether it passed, so callers can also drop it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tidemark/core/error.hpp"
#include "tidemark/riot/dataset.hpp"
#include "tidemark/riot/observation.hpp"
#include "tidemark/riot/rejecting_task.hpp"

namespace tidemark::riot {

/// Inclusive valid range of one field.
struct value_range {
  double min = 0;
  double max = 0;
};

struct range_filter_config {
  /// FILTER.RANGE_FILTER.VALID_RANGE: field -> [min, max]. Fields without a range always pass.
  std::unordered_map<std::string, value_range> ranges;

  /// The per-dataset ranges; FIT gets all 11 ranges the file intended (its line break made the
  /// original read only the first 5).
  static range_filter_config for_dataset(dataset d);
  /// Parses "name:min:max,name:min:max,..." (the properties format); throws std::invalid_argument
  /// naming the bad entry.
  static range_filter_config parse(std::string_view spec);
};

class range_filter : public rejecting_task {
 public:
  explicit range_filter(range_filter_config config);

  /// True when `field`'s value is in range or `field` has no range.
  bool check(std::string_view field, double value) const;

  /// Checks one observation; an out-of-range value is marked missing. Returns whether it passed,
  /// or an error (counted) for a non-numeric value of a ranged field, which is marked missing too.
  expected<bool> process(observation& o);

 private:
  range_filter_config config_;
};

/// A Bloom filter over strings, sized for `capacity` insertions at false-positive rate `fpp`:
/// m = ceil(-n ln p / ln² 2) bits, k = round(m/n ln 2) hashes (double hashing of XXH3-128).
class bloom_filter {
 public:
  bloom_filter(std::uint64_t capacity, double fpp);

  void insert(std::string_view key);
  bool might_contain(std::string_view key) const;

  std::uint64_t bit_count() const noexcept { return bits_; }
  std::uint32_t hash_count() const noexcept { return hashes_; }
  std::uint64_t capacity() const noexcept { return capacity_; }
  double fpp() const noexcept { return fpp_; }
  /// The raw bit array (64 bits per word), for the model codec.
  const std::vector<std::uint64_t>& words() const noexcept { return words_; }

  /// Rebuilds a filter from its parameters and bit array; throws std::invalid_argument when the
  /// array does not have the size the parameters imply.
  static bloom_filter from_words(std::uint64_t capacity, double fpp, std::vector<std::uint64_t> words);

 private:
  std::uint64_t capacity_;
  double fpp_;
  std::uint64_t bits_;
  std::uint32_t hashes_;
  std::vector<std::uint64_t> words_;
};

struct bloom_filter_config {
  /// FILTER.BLOOM_FILTER_TRAIN.EXPECTED_INSERTIONS and FALSEPOSITIVE_RATIO (20 M and 1 % in all
  /// datasets; the filter then takes 24 MB).
  std::uint64_t capacity = 20'000'000;
  double fpp = 0.01;

  /// The same for every dataset. The ids checked are the dataset's id field (source,
  /// taxi_identifier, subjectId, meterid), which senml_fanout puts in observation::sensor_id.
  static bloom_filter_config for_dataset(dataset d);
};

/// The BLF task: checks each observation's sensor id against a filter trained on the valid ids.
class bloom_filter_check {
 public:
  bloom_filter_check(bloom_filter_config config, bloom_filter filter);

  /// Builds the filter from a list of valid ids.
  static bloom_filter_check from_ids(bloom_filter_config config, const std::vector<std::string>& ids);
  /// Builds the filter from a file of ids, one per line; throws std::runtime_error when unreadable.
  static bloom_filter_check from_file(bloom_filter_config config, const std::string& path);

  /// True when the observation's sensor id might be a valid id; otherwise the observation is marked
  /// missing.
  bool process(observation& o) const;
  /// The check on a bare value.
  bool check(std::string_view value) const { return filter_.might_contain(value); }

  const bloom_filter& filter() const noexcept { return filter_; }

 private:
  bloom_filter_config config_;
  bloom_filter filter_;
};

}  // namespace tidemark::riot
