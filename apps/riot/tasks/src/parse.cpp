// CSV -> SenML, XML parsing (pugixml) and annotation (see parse.hpp).
#include "tidemark/riot/parse.hpp"

#include <pugixml.hpp>

#include <algorithm>
#include <stdexcept>

#include "text.hpp"

namespace tidemark::riot {

csv_to_senml_config csv_to_senml_config::for_dataset(dataset d, const std::string& data_dir) {
  const char* file = nullptr;
  switch (d) {
    case dataset::city: file = "/sys-schema-with-annotationfields.txt"; break;
    case dataset::taxi: file = "/taxi-schema_with_annotation.csv"; break;
    case dataset::fit: file = "/mhealth_schema_with_annoted_fields.csv"; break;
    case dataset::grid:
      return {{"timestamp", "meterid", "energyconsumed"},
              {"timestamp", "string", "kWh"},
              {"v", "sv", "v"}};
  }
  auto s = detail::read_schema(data_dir + file);
  return {std::move(s.names), std::move(s.units), std::move(s.kinds)};
}

csv_to_senml::csv_to_senml(csv_to_senml_config config) : config_(std::move(config)) {
  auto n = config_.names.size();
  if (n == 0 || config_.units.size() != n || config_.kinds.size() != n)
    throw std::invalid_argument("csv_to_senml: names, units and kinds must be non-empty and equally long");
  auto it = std::find(config_.names.begin(), config_.names.end(), "timestamp");
  if (it == config_.names.end())
    throw std::invalid_argument("csv_to_senml: the schema has no 'timestamp' column");
  timestamp_column_ = it - config_.names.begin();
}

expected<std::string> csv_to_senml::process(std::string_view csv_row) {
  const char* task = "csv_to_senml";
  split_fields(trim(csv_row), ',', cells_);
  if (cells_.size() != config_.names.size())
    return fail(task, "expected " + std::to_string(config_.names.size()) + " columns, got " +
                          std::to_string(cells_.size()));
  auto bt = detail::parse_int(cells_[timestamp_column_]);
  if (!bt)
    return fail(task, "column 'timestamp' is not an integer (epoch ms): \"" +
                          std::string(cells_[timestamp_column_]) + "\"");
  std::string json = "{\"bt\":" + std::to_string(*bt) + ",\"e\":[";
  bool first = true;
  for (std::size_t i = 0; i < cells_.size(); ++i) {
    if (static_cast<std::ptrdiff_t>(i) == timestamp_column_) continue;
    if (!first) json.push_back(',');
    first = false;
    json += "{\"n\":";
    detail::append_json_string(json, config_.names[i]);
    json += ",\"u\":";
    detail::append_json_string(json, trim(config_.units[i]));
    auto cell = trim(cells_[i]);
    if (config_.kinds[i] == "v") {
      auto x = detail::parse_double(cell);
      if (!x) return fail(task, "column '" + config_.names[i] + "' is not numeric: \"" + std::string(cell) + "\"");
      json += ",\"v\":";
      json += detail::format_double(*x);  // valid JSON even for inputs like ".5" or "+1"
    } else {
      json += ",\"sv\":";
      detail::append_json_string(json, cell);
    }
    json.push_back('}');
  }
  json += "]}";
  return json;
}

struct xml_parse::impl {
  pugi::xml_document doc;
};

xml_parse::xml_parse() : impl_(std::make_unique<impl>()) {}
xml_parse::~xml_parse() = default;
xml_parse::xml_parse(xml_parse&&) noexcept = default;
xml_parse& xml_parse::operator=(xml_parse&&) noexcept = default;

expected<xml_summary> xml_parse::process(std::string_view xml) {
  auto parsed = impl_->doc.load_buffer(xml.data(), xml.size(), pugi::parse_default | pugi::parse_cdata);
  if (!parsed)
    return fail("xml_parse", std::string(parsed.description()) + " at byte " +
                                 std::to_string(parsed.offset));
  if (!impl_->doc.document_element())
    return fail("xml_parse", "the document has no root element");
  struct walker : pugi::xml_tree_walker {
    xml_summary s;
    bool for_each(pugi::xml_node& node) override {
      switch (node.type()) {
        case pugi::node_element:
          ++s.elements;
          for (auto a = node.first_attribute(); a; a = a.next_attribute()) ++s.attributes;
          break;
        case pugi::node_pcdata:
        case pugi::node_cdata:
          s.text_bytes += std::char_traits<char>::length(node.value());
          break;
        default:
          break;
      }
      return true;
    }
  } w;
  impl_->doc.traverse(w);
  return w.s;
}

std::vector<std::pair<std::string, std::string>> read_metadata(const std::string& path) {
  std::vector<std::pair<std::string, std::string>> entries;
  text_file(path).for_each_line([&](std::size_t, std::string_view line) -> std::optional<std::string> {
    auto colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return "expected key:annotation";
    entries.emplace_back(line.substr(0, colon), line.substr(colon + 1));
    return std::nullopt;
  });
  return entries;
}

annotate_config annotate_config::for_dataset(dataset d, const std::string& data_dir) {
  switch (d) {
    case dataset::city: return {data_dir + "/city-metadata.txt", 1};
    case dataset::taxi: return {data_dir + "/taxi-metadata-fulldataset.txt", 0};
    case dataset::fit: return {data_dir + "/mhealth_annotation_mapping.csv", 0};
    case dataset::grid: break;
  }
  throw std::invalid_argument(
      "annotate: GRID's metadata file (energydata_annotation_mapping_compressed.csv) is not in the "
      "sample data; configure annotate_config::metadata_path explicitly");
}

annotate::annotate(annotate_config config) : config_(std::move(config)) {
  for (auto& [key, annotation] : read_metadata(config_.metadata_path)) table_.insert_or_assign(key, annotation);
}

expected<std::string> annotate::process(std::string_view csv_row) {
  // Find column key_column without splitting the whole row.
  std::size_t start = 0;
  for (std::size_t c = 0; c < config_.key_column; ++c) {
    start = csv_row.find(',', start);
    if (start == std::string_view::npos)
      return fail("annotate", "the row has no column " + std::to_string(config_.key_column));
    ++start;
  }
  auto end = csv_row.find(',', start);
  key_.assign(trim(csv_row.substr(start, end == std::string_view::npos ? end : end - start)));
  auto it = table_.find(key_);
  if (it == table_.end()) return fail("annotate", "no metadata for key '" + key_ + "'");
  std::string out;
  out.reserve(csv_row.size() + 1 + it->second.size());
  out.append(csv_row).push_back(',');
  out += it->second;
  return out;
}

}  // namespace tidemark::riot
