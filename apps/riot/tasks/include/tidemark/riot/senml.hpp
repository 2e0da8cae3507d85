// SenML parsing (RIoTBench SML): a SenML JSON message becomes one senml_record with all its fields;
// senml_fanout then splits a record into one observation per observable field, as the ETL and STATS
// apps consume it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tidemark/core/error.hpp"
#include "tidemark/riot/dataset.hpp"
#include "tidemark/riot/observation.hpp"
#include "tidemark/riot/rejecting_task.hpp"

namespace tidemark::riot {

/// One SenML entry, with base name and base unit already applied.
struct senml_field {
  std::string name;
  std::string unit;
  /// The value as text: "sv" as given, "v" as written in the message.
  std::string text;
  /// "v" parsed (it may be a JSON number or a numeric string, as in the RIoTBench samples).
  double value = 0;
  bool numeric = false;
  /// Base time plus the entry's relative time "t" (milliseconds).
  std::int64_t time = 0;
};

struct senml_record {
  /// "bt": milliseconds since the epoch (a JSON number or an integer string).
  std::int64_t base_time = 0;
  std::vector<senml_field> fields;

  /// The field called `name`, or nullptr.
  const senml_field* find(std::string_view name) const noexcept;
};

/// Parses SenML JSON ({"bn"?, "bt"?, "bu"?, "e": [{"n", "u"?, "v"|"sv"|"bv", "t"?}, ...]}).
/// Not thread-safe: one instance per thread (it reuses its parser's buffers).
class senml_parse : public rejecting_task {
 public:
  senml_parse();
  ~senml_parse();
  senml_parse(senml_parse&&) noexcept;
  senml_parse& operator=(senml_parse&&) noexcept;

  /// The record, or an error naming the entry and the problem (malformed JSON, missing "e" or
  /// "n", no value, non-numeric "v", non-integer "bt").
  expected<senml_record> process(std::string_view json);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// Splits a sample-file line "<epoch-ms>,<SenML JSON>" into its JSON part (the replay timestamp is
/// the record's base time too). Returns the whole line when it has no numeric prefix.
std::string_view senml_payload(std::string_view line) noexcept;

/// Which fields of a dataset are meta (copied into every observation) and which are observables.
struct senml_fanout_config {
  /// PARSE.ID_FIELD_SCHEMA: the field whose value becomes observation::sensor_id.
  std::string id_field;
  /// PARSE.META_FIELD_SCHEMA, in order; "timestamp" means the record's base time.
  std::vector<std::string> meta_fields;
  /// The schema's remaining fields, in schema order; each becomes one observation.
  std::vector<std::string> observables;

  /// CITY: 4 meta + 5 observables; TAXI: 7 + 10; FIT: 15 + 11; GRID: 2 + 1. Reads the schema
  /// files from `data_dir` (GRID has none in the sample data; its 3 fields are built in).
  static senml_fanout_config for_dataset(dataset d, const std::string& data_dir = default_data_dir());
};

/// The per-field fan-out of RIoTBench's SenMLParseBolt.
class senml_fanout : public rejecting_task {
 public:
  explicit senml_fanout(senml_fanout_config config);

  /// Appends one observation per configured observable to `out`. A record that lacks a configured
  /// field, or has a field the schema does not know, is rejected whole (nothing is appended).
  expected<std::size_t> process(const senml_record& record, std::int64_t msg_id,
                                std::vector<observation>& out);

  const senml_fanout_config& config() const noexcept { return config_; }

 private:
  senml_fanout_config config_;
  std::vector<const senml_field*> meta_;  // scratch, one per meta field
  std::vector<const senml_field*> obs_;   // scratch, one per observable
};

}  // namespace tidemark::riot
