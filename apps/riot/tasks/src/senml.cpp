// SenML parsing with simdjson's on-demand API, and the per-field fan-out of the ETL/STATS apps.
#include "tidemark/riot/senml.hpp"

#include <simdjson.h>

#include <algorithm>
#include <stdexcept>

#include "text.hpp"

namespace tidemark::riot {

namespace sj = simdjson::ondemand;

const senml_field* senml_record::find(std::string_view name) const noexcept {
  for (auto& f : fields)
    if (f.name == name) return &f;
  return nullptr;
}

struct senml_parse::impl {
  sj::parser parser;
  std::string buffer;  // the message plus simdjson's padding
};

senml_parse::senml_parse() : impl_(std::make_unique<impl>()) {}
senml_parse::~senml_parse() = default;
senml_parse::senml_parse(senml_parse&&) noexcept = default;
senml_parse& senml_parse::operator=(senml_parse&&) noexcept = default;

namespace {

const char* task = "senml_parse";

// Reads a value that RIoTBench writes either as a JSON number or as a numeric string. Returns the
// text as written and sets `number` when it is numeric.
simdjson::error_code read_numeric(sj::value v, std::string& text, std::optional<double>& number) {
  sj::json_type type;
  if (auto e = v.type().get(type)) return e;
  if (type == sj::json_type::string) {
    std::string_view s;
    if (auto e = v.get_string().get(s)) return e;
    text.assign(s);
    number = detail::parse_double(s);
    return simdjson::SUCCESS;
  }
  if (type == sj::json_type::number) {
    text.assign(detail::trim(v.raw_json_token()));
    number = detail::parse_double(text);
    return simdjson::SUCCESS;
  }
  return simdjson::INCORRECT_TYPE;
}

}  // namespace

result<senml_record> senml_parse::process(std::string_view json) {
  auto& buf = impl_->buffer;
  buf.reserve(json.size() + simdjson::SIMDJSON_PADDING);
  buf.assign(json);
  sj::document doc;
  if (auto e = impl_->parser.iterate(buf.data(), buf.size(), buf.capacity()).get(doc))
    return fail(task, std::string("not JSON: ") + simdjson::error_message(e));
  sj::object root;
  if (doc.get_object().get(root)) return fail(task, "the message is not a JSON object");

  senml_record rec;
  std::string base_name, base_unit;
  struct pending {
    senml_field field;
    std::optional<double> number;
    std::optional<std::int64_t> t;
    bool has_value = false;
  };
  std::vector<pending> entries;
  bool has_entries = false;
  std::string text;
  std::optional<double> number;

  for (auto member : root) {
    std::string_view key;
    if (member.unescaped_key().get(key)) return fail(task, "malformed JSON in a member name");
    sj::value v;
    if (member.value().get(v)) return fail(task, "malformed JSON in member '" + std::string(key) + "'");
    if (key == "bt") {
      if (read_numeric(v, text, number))
        return fail(task, "'bt' must be a number or a numeric string");
      auto bt = detail::parse_int(text);
      if (!bt) {
        if (!number) return fail(task, "'bt' is not a number: \"" + text + "\"");
        bt = static_cast<std::int64_t>(*number);
      }
      rec.base_time = *bt;
    } else if (key == "bn" || key == "bu") {
      std::string_view s;
      if (v.get_string().get(s)) return fail(task, "'" + std::string(key) + "' must be a string");
      (key == "bn" ? base_name : base_unit).assign(s);
    } else if (key == "e") {
      sj::array arr;
      if (v.get_array().get(arr)) return fail(task, "'e' must be an array of entries");
      has_entries = true;
      std::size_t index = 0;
      for (auto element : arr) {
        auto where = "entry " + std::to_string(index);
        ++index;
        sj::object entry;
        if (element.get_object().get(entry)) return fail(task, where + " is not a JSON object");
        auto& p = entries.emplace_back();
        bool has_name = false;
        for (auto em : entry) {
          std::string_view ek;
          if (em.unescaped_key().get(ek)) return fail(task, where + ": malformed JSON");
          sj::value ev;
          if (em.value().get(ev)) return fail(task, where + ": malformed value of '" + std::string(ek) + "'");
          std::string_view s;
          if (ek == "n") {
            if (ev.get_string().get(s)) return fail(task, where + ": 'n' must be a string");
            p.field.name.assign(s);
            has_name = true;
          } else if (ek == "u") {
            if (ev.get_string().get(s)) return fail(task, where + ": 'u' must be a string");
            p.field.unit.assign(s);
          } else if (ek == "v") {
            if (read_numeric(ev, p.field.text, p.number) || !p.number)
              return fail(task, where + ": 'v' is not a number" +
                                    (p.field.text.empty() ? "" : ": \"" + p.field.text + "\""));
            p.has_value = true;
          } else if (ek == "sv" || ek == "vs") {
            if (ev.get_string().get(s)) return fail(task, where + ": '" + std::string(ek) + "' must be a string");
            p.field.text.assign(s);
            p.has_value = true;
          } else if (ek == "bv" || ek == "vb") {
            bool b = false;
            if (ev.get_bool().get(b)) return fail(task, where + ": '" + std::string(ek) + "' must be true or false");
            p.field.text = b ? "true" : "false";
            p.has_value = true;
          } else if (ek == "t") {
            if (read_numeric(ev, text, number) || !number)
              return fail(task, where + ": 't' is not a number");
            p.t = static_cast<std::int64_t>(*number);
          }
          // Other SenML members (ut, s, ver, ...) carry nothing the tasks use.
        }
        if (!has_name && base_name.empty()) return fail(task, where + " has no name ('n')");
        if (!p.has_value) return fail(task, where + " ('" + p.field.name + "') has no value (v, sv or bv)");
      }
    }
  }
  if (!has_entries) return fail(task, "no entry array 'e'");

  // bn/bu/bt may come after "e" in the object, so they are applied once the whole message is read.
  rec.fields.reserve(entries.size());
  for (auto& p : entries) {
    auto& f = rec.fields.emplace_back(std::move(p.field));
    if (!base_name.empty()) f.name.insert(0, base_name);
    if (f.unit.empty()) f.unit = base_unit;
    f.numeric = p.number.has_value();
    f.value = p.number.value_or(0);
    f.time = rec.base_time + p.t.value_or(0);
  }
  return rec;
}

std::string_view senml_payload(std::string_view line) noexcept {
  auto comma = line.find(',');
  if (comma == std::string_view::npos || comma == 0) return line;
  if (!detail::parse_int(line.substr(0, comma))) return line;
  return line.substr(comma + 1);
}

senml_fanout_config senml_fanout_config::for_dataset(dataset d, const std::string& data_dir) {
  senml_fanout_config c;
  std::vector<std::string> schema;
  switch (d) {
    case dataset::city:
      c.id_field = "source";
      c.meta_fields = {"timestamp", "source", "longitude", "latitude"};
      schema = detail::read_schema(data_dir + "/sys-schema_without_annotationfields.txt").names;
      break;
    case dataset::taxi:
      c.id_field = "taxi_identifier";
      c.meta_fields = {"pickup_datetime",  "timestamp",         "pickup_longitude", "pickup_latitude",
                       "dropoff_longitude", "dropoff_latitude", "payment_type"};
      schema = detail::read_schema(data_dir + "/taxi-schema-without-annotation.csv").names;
      break;
    case dataset::fit:
      c.id_field = "subjectId";
      c.meta_fields = {"subjectId",          "timestamp",          "gyro_ankle_x",       "gyro_ankle_y",
                       "gyro_ankle_z",       "magnetometer_ankle_x", "magnetometer_ankle_y",
                       "magnetometer_ankle_z", "gyro_arm_x",       "gyro_arm_y",         "gyro_arm_z",
                       "magnetometer_arm_x", "magnetometer_arm_y", "magnetometer_arm_z", "label"};
      schema = detail::read_schema(data_dir + "/mhealth_schema.csv").names;
      break;
    case dataset::grid:
      // The sample data has no GRID schema file; RIoTBench's GRID fields are these three.
      c.id_field = "meterid";
      c.meta_fields = {"timestamp", "meterid"};
      schema = {"timestamp", "meterid", "energyconsumed"};
      break;
  }
  for (auto& name : schema)
    if (std::find(c.meta_fields.begin(), c.meta_fields.end(), name) == c.meta_fields.end())
      c.observables.push_back(name);
  return c;
}

senml_fanout::senml_fanout(senml_fanout_config config) : config_(std::move(config)) {
  if (config_.observables.empty())
    throw std::invalid_argument("senml_fanout: the configuration has no observable fields");
}

result<std::size_t> senml_fanout::process(const senml_record& record, std::int64_t msg_id,
                                          std::vector<observation>& out) {
  const char* task = "senml_fanout";
  auto slot_of = [](const std::vector<std::string>& names, std::string_view n) -> std::ptrdiff_t {
    auto it = std::find(names.begin(), names.end(), n);
    return it == names.end() ? -1 : it - names.begin();
  };
  meta_.assign(config_.meta_fields.size(), nullptr);
  obs_.assign(config_.observables.size(), nullptr);
  const senml_field* id = nullptr;
  for (auto& f : record.fields) {
    auto m = slot_of(config_.meta_fields, f.name);
    auto o = slot_of(config_.observables, f.name);
    if (m < 0 && o < 0 && f.name != config_.id_field)
      return fail(task, "message " + std::to_string(msg_id) + ": field '" + f.name +
                            "' is not in the dataset's schema");
    if (m >= 0) meta_[m] = &f;
    if (o >= 0) obs_[o] = &f;
    if (f.name == config_.id_field) id = &f;
  }
  if (!id)
    return fail(task, "message " + std::to_string(msg_id) + ": id field '" + config_.id_field +
                          "' is missing");
  std::string meta;
  for (std::size_t i = 0; i < meta_.size(); ++i) {
    if (i) meta.push_back(',');
    if (meta_[i]) {
      meta += meta_[i]->text;
    } else if (config_.meta_fields[i] == "timestamp") {
      meta += std::to_string(record.base_time);
    } else {
      return fail(task, "message " + std::to_string(msg_id) + ": meta field '" +
                            config_.meta_fields[i] + "' is missing");
    }
  }
  for (std::size_t i = 0; i < obs_.size(); ++i)
    if (!obs_[i])
      return fail(task, "message " + std::to_string(msg_id) + ": observable '" +
                            config_.observables[i] + "' is missing");
  for (auto* f : obs_) {
    auto& o = out.emplace_back();
    o.msg_id = msg_id;
    o.timestamp = record.base_time;
    o.sensor_id = id->text;
    o.meta = meta;
    o.obs_type = f->name;
    o.text = f->text;
    o.value = f->value;
    o.numeric = f->numeric;
  }
  return obs_.size();
}

}  // namespace tidemark::riot
