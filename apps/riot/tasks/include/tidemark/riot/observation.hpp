// The per-field tuple that flows between the RIoTBench ETL and STATS tasks: one observed value of one
// sensor, with the message it came from (RIoTBench's MSGID, SENSORID, META, OBSTYPE, OBSVAL).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tidemark/core/codec.hpp"
#include "tidemark/riot/shared_text.hpp"

namespace tidemark::riot {

struct observation {
  std::int64_t msg_id = 0;
  /// Event time of the message (its SenML base time), milliseconds since the epoch.
  std::int64_t timestamp = 0;
  /// Value of the dataset's id field (source, taxi_identifier, subjectId, meterid); the
  /// observations of one message share it.
  shared_text sensor_id;
  /// The message's meta fields, comma-joined in the configured order; shared like sensor_id.
  shared_text meta;
  /// Field name, e.g. "temperature".
  std::string obs_type;
  /// The value as text (as received, or as computed by a task).
  std::string text;
  /// The numeric value when `numeric`.
  double value = 0;
  bool numeric = false;
  /// Set by the filters when the value failed a check; interpolation fills it in. Replaces the
  /// original's in-band "null" string.
  bool missing = false;
  TIDEMARK_FIELDS(msg_id, timestamp, sensor_id, meta, obs_type, text, value, numeric, missing)
};

/// The key of per-sensor, per-field task state (sensor id + field name), composed in `buffer`
/// (valid until its next use): keyed operators look state up by the view without allocating.
inline std::string_view sensor_field_key(const observation& o, std::string& buffer) {
  buffer.assign(o.sensor_id.str()) += '\x1f';
  return buffer += o.obs_type;
}

/// Sets a computed numeric value: value, its shortest round-trip text, numeric, not missing.
void set_value(observation& o, double x);

}  // namespace tidemark::riot
