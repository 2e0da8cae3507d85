// SenML parsing with simdjson's on-demand API, and the per-field fan-out of the ETL/STATS apps.
#include "tidemark/riot/senml.hpp"

#include <simdjson.h>

#include <algorithm>
#include <stdexcept>

#include "text.hpp"

namespace tidemark::riot {

namespace dom = simdjson::dom;

const senml_field* senml_record::find(std::string_view name) const noexcept {
  for (auto& f : fields)
    if (f.name == name) return &f;
  return nullptr;
}

// The DOM parser dispatches at run time to the best kernel for the CPU (the on-demand API would
// be fixed at compile time to the portable fallback kernel); it validates the whole message first.
struct senml_parse::impl {
  dom::parser parser;
  // Scratch of one message, kept between messages for their capacity.
  std::string base_name, base_unit, text;
  std::vector<std::optional<std::int64_t>> times;  // per entry: its "t"
  std::vector<bool> named;                         // per entry: it had an "n"
};

senml_parse::senml_parse() : impl_(std::make_unique<impl>()) {}
senml_parse::~senml_parse() = default;
senml_parse::senml_parse(senml_parse&&) noexcept = default;
senml_parse& senml_parse::operator=(senml_parse&&) noexcept = default;

namespace {

const char* task = "senml_parse";

// Reads a value that RIoTBench writes either as a JSON number or as a numeric string into its
// text and number; false when it is neither.
bool read_numeric(dom::element v, std::string& text, std::optional<double>& number) {
  if (v.is_string()) {
    std::string_view s = v.get_string().value_unsafe();
    text.assign(s);
    number = detail::parse_double(s);
    return true;
  }
  if (v.is_int64()) {
    auto i = v.get_int64().value_unsafe();
    text = std::to_string(i);
    number = static_cast<double>(i);
    return true;
  }
  if (v.is_number()) {
    number = v.get_double().value_unsafe();
    text = detail::format_double(*number);
    return true;
  }
  return false;
}

}  // namespace

expected<senml_record> senml_parse::process(std::string_view json) {
  dom::element doc;
  if (auto e = impl_->parser.parse(json.data(), json.size()).get(doc))
    return fail(task, std::string("not JSON: ") + simdjson::error_message(e));
  dom::object root;
  if (doc.get_object().get(root)) return fail(task, "the message is not a JSON object");

  senml_record rec;
  auto& base_name = impl_->base_name;
  auto& base_unit = impl_->base_unit;
  auto& text = impl_->text;
  auto& times = impl_->times;
  auto& named = impl_->named;
  base_name.clear();
  base_unit.clear();
  times.clear();
  named.clear();
  std::optional<double> number;
  bool has_entries = false;

  for (auto [key, v] : root) {
    if (key == "bt") {
      if (!read_numeric(v, text, number)) return fail(task, "'bt' must be a number or a numeric string");
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
      dom::array arr;
      if (v.get_array().get(arr)) return fail(task, "'e' must be an array of entries");
      has_entries = true;
      rec.fields.reserve(arr.size());
      std::size_t index = 0;
      for (dom::element element : arr) {
        auto where = [&] { return "entry " + std::to_string(index); };
        dom::object entry;
        if (element.get_object().get(entry)) return fail(task, where() + " is not a JSON object");
        auto& f = rec.fields.emplace_back();
        auto& t = times.emplace_back();
        bool has_name = false, has_value = false;
        for (auto [ek, ev] : entry) {
          std::string_view s;
          if (ek == "n") {
            if (ev.get_string().get(s)) return fail(task, where() + ": 'n' must be a string");
            f.name.assign(s);
            has_name = true;
          } else if (ek == "u") {
            if (ev.get_string().get(s)) return fail(task, where() + ": 'u' must be a string");
            f.unit.assign(s);
          } else if (ek == "v") {
            if (!read_numeric(ev, f.text, number) || !number)
              return fail(task, where() + ": 'v' is not a number" + (f.text.empty() ? "" : ": \"" + f.text + "\""));
            f.value = *number;
            f.numeric = true;
            has_value = true;
          } else if (ek == "sv" || ek == "vs") {
            if (ev.get_string().get(s)) return fail(task, where() + ": '" + std::string(ek) + "' must be a string");
            f.text.assign(s);
            has_value = true;
          } else if (ek == "bv" || ek == "vb") {
            bool b = false;
            if (ev.get_bool().get(b)) return fail(task, where() + ": '" + std::string(ek) + "' must be true or false");
            f.text = b ? "true" : "false";
            has_value = true;
          } else if (ek == "t") {
            if (!read_numeric(ev, text, number) || !number) return fail(task, where() + ": 't' is not a number");
            t = static_cast<std::int64_t>(*number);
          }
          // Other SenML members (ut, s, ver, ...) carry nothing the tasks use.
        }
        named.push_back(has_name);
        if (!has_value) return fail(task, where() + " ('" + f.name + "') has no value (v, sv or bv)");
        ++index;
      }
    }
  }
  if (!has_entries) return fail(task, "no entry array 'e'");

  // bn/bu/bt may come after "e" in the object, so they are applied once the whole message is read.
  for (std::size_t i = 0; i < rec.fields.size(); ++i) {
    auto& f = rec.fields[i];
    if (!named[i] && base_name.empty())
      return fail(task, "entry " + std::to_string(i) + " has no name ('n') and there is no base name ('bn')");
    if (!base_name.empty()) f.name.insert(0, base_name);
    if (f.unit.empty()) f.unit = base_unit;
    f.time = rec.base_time + times[i].value_or(0);
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

expected<std::size_t> senml_fanout::process(const senml_record& record, std::int64_t msg_id,
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
  // one sensor id and meta for all the message's observations
  const shared_text sensor_id{id->text}, shared_meta{std::move(meta)};
  for (auto* f : obs_) {
    auto& o = out.emplace_back();
    o.msg_id = msg_id;
    o.timestamp = record.base_time;
    o.sensor_id = sensor_id;
    o.meta = shared_meta;
    o.obs_type = f->name;
    o.text = f->text;
    o.value = f->value;
    o.numeric = f->numeric;
  }
  return obs_.size();
}

}  // namespace tidemark::riot
