// The other RIoTBench parse tasks: CSV row -> SenML JSON (C2S), XML message parsing (XML) and
// annotation of a CSV row with metadata looked up by id (ANN).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tidemark/core/error.hpp"
#include "tidemark/riot/dataset.hpp"
#include "tidemark/riot/rejecting_task.hpp"

namespace tidemark::riot {

struct csv_to_senml_config {
  /// Column names, units and kinds ("v" numeric, "sv" string), as in the annotated schema files.
  std::vector<std::string> names;
  std::vector<std::string> units;
  std::vector<std::string> kinds;

  /// Reads PARSE.CSV_SCHEMA_WITH_ANNOTATEDFIELDS_FILEPATH of the dataset (GRID has no schema in
  /// the sample data: its fields are built in).
  static csv_to_senml_config for_dataset(dataset d, const std::string& data_dir = default_data_dir());
};

/// CSV row -> SenML JSON: "bt" is the row's "timestamp" column (an integer, epoch ms); every other
/// column becomes an entry {"n", "u", "v"|"sv"}, "v" written as a JSON number.
class csv_to_senml : public rejecting_task {
 public:
  explicit csv_to_senml(csv_to_senml_config config);

  /// The JSON, or an error naming the column (wrong column count, non-integer timestamp,
  /// non-numeric value in a "v" column).
  expected<std::string> process(std::string_view csv_row);

 private:
  csv_to_senml_config config_;
  std::ptrdiff_t timestamp_column_ = -1;
  std::vector<std::string_view> cells_;
};

/// What xml_parse found in one document.
struct xml_summary {
  std::uint64_t elements = 0;
  std::uint64_t attributes = 0;
  /// Bytes of character data (text and CDATA), as the original SAX handler summed them.
  std::uint64_t text_bytes = 0;
};

/// Parses each message as an XML document (pugixml, DOM). The original ignored its input and
/// re-parsed a fixed file per call; here the message is the document.
class xml_parse : public rejecting_task {
 public:
  xml_parse();
  ~xml_parse();
  xml_parse(xml_parse&&) noexcept;
  xml_parse& operator=(xml_parse&&) noexcept;

  /// The summary, or an error with the parser's description and byte offset.
  expected<xml_summary> process(std::string_view xml);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

struct annotate_config {
  /// A "key:annotation" file (ANNOTATE.ANNOTATE_FILE_PATH).
  std::string metadata_path;
  /// The CSV column holding the key (ANNOTATE.ANNOTATE_MSG_USE_FIELD, 0-based).
  std::size_t key_column = 0;

  /// CITY: city-metadata.txt, column 1 (source); TAXI: taxi-metadata-fulldataset.txt, column 0;
  /// FIT: mhealth_annotation_mapping.csv, column 0. GRID's file is not in the sample data, so
  /// GRID throws std::invalid_argument.
  static annotate_config for_dataset(dataset d, const std::string& data_dir = default_data_dir());
};

/// The (key, annotation) entries of a "key:annotation" metadata file, in file order; throws
/// std::runtime_error naming the file and line of a malformed entry.
std::vector<std::pair<std::string, std::string>> read_metadata(const std::string& path);

/// Appends ",<annotation>" to a CSV row, looked up by the row's key column.
class annotate : public rejecting_task {
 public:
  /// Loads the metadata file; throws std::runtime_error naming file and line when it is malformed.
  explicit annotate(annotate_config config);

  /// The annotated row, or an error when the row lacks the key column or the key is unknown (the
  /// original silently re-emitted the previous row instead).
  expected<std::string> process(std::string_view csv_row);

  std::size_t size() const noexcept { return table_.size(); }

 private:
  annotate_config config_;
  std::unordered_map<std::string, std::string> table_;
  std::string key_;  // scratch
};

}  // namespace tidemark::riot
