// RIoTBench parse tasks on the sample data: SenML parse and fan-out, CSV -> SenML, XML, annotate,
// and the counted errors of malformed input.
#define BOOST_TEST_MODULE riot_parse
#include <boost/test/unit_test.hpp>

#include <set>

#include "sample_data.hpp"
#include "tidemark/riot/parse.hpp"
#include "tidemark/riot/senml.hpp"

using namespace tidemark::riot;
using riot_test::data_dir;
using riot_test::lines;

BOOST_AUTO_TEST_CASE(senml_parse_reads_the_first_city_message_exactly) {
  senml_parse parse;
  auto rec = parse.process(senml_payload(lines("SYS_sample_data_senml.csv").front()));
  BOOST_REQUIRE(rec);
  BOOST_TEST(rec->base_time == 1422748800000);
  BOOST_REQUIRE_EQUAL(rec->fields.size(), 8u);
  auto* source = rec->find("source");
  BOOST_REQUIRE(source);
  BOOST_TEST(source->text == "ci4lr75sl000802ypo4qrcjda23");
  BOOST_TEST(!source->numeric);
  auto* temp = rec->find("temperature");
  BOOST_REQUIRE(temp);
  BOOST_TEST(temp->numeric);
  BOOST_TEST(temp->value == 8.0);
  BOOST_TEST(temp->unit == "far");
  BOOST_TEST(rec->find("dust")->value == 411.02);
  BOOST_TEST(rec->find("longitude")->text == "6.1668213");
  BOOST_TEST(rec->find("nope") == nullptr);
}

BOOST_AUTO_TEST_CASE(senml_parse_accepts_every_sample_message_including_fit_string_base_times) {
  senml_parse parse;
  std::size_t n = 0;
  for (auto file : {"SYS_sample_data_senml.csv", "TAXI_sample_data_senml.csv", "FIT_sample_data_senml.csv"})
    for (auto& l : lines(file)) {
      auto rec = parse.process(senml_payload(l));
      BOOST_REQUIRE_MESSAGE(rec, riot_test::why(rec));
      ++n;
    }
  BOOST_TEST(n == 2045u);
  BOOST_TEST(parse.errors().count() == 0u);
  auto fit = parse.process(senml_payload(lines("FIT_sample_data_senml.csv").front()));
  BOOST_TEST(fit->base_time == 1417890600000);  // written as "bt":"1417890600000"
  BOOST_TEST(fit->find("acc_chest_x")->value == -9.2997);
  BOOST_TEST(fit->find("acc_chest_x")->unit == "m/s2");  // "m\/s2" unescaped
}

BOOST_AUTO_TEST_CASE(senml_parse_applies_base_name_unit_and_relative_time) {
  senml_parse parse;
  auto rec = parse.process(R"({"e":[{"n":"temp","v":21.5,"t":5},{"n":"on","vb":true,"u":"x"}],"bn":"dev1/","bt":1000,"bu":"C"})");
  BOOST_REQUIRE_MESSAGE(rec, riot_test::why(rec));
  BOOST_TEST(rec->fields[0].name == "dev1/temp");
  BOOST_TEST(rec->fields[0].unit == "C");
  BOOST_TEST(rec->fields[0].time == 1005);
  BOOST_TEST(rec->fields[0].text == "21.5");
  BOOST_TEST(rec->fields[0].value == 21.5);
  BOOST_TEST(rec->fields[1].text == "true");
  BOOST_TEST(rec->fields[1].unit == "x");
  BOOST_TEST(rec->fields[1].time == 1000);
}

BOOST_AUTO_TEST_CASE(malformed_senml_is_a_counted_error_naming_the_problem) {
  senml_parse parse;
  struct bad {
    const char* json;
    const char* says;
  };
  std::vector<bad> cases{
      {"not json at all", "senml_parse: not JSON: Problem while parsing an atom starting with the letter 'n'"},
      {"[1,2]", "senml_parse: the message is not a JSON object"},
      {R"({"bt":1})", "senml_parse: no entry array 'e'"},
      {R"({"e":{}})", "senml_parse: 'e' must be an array of entries"},
      {R"({"e":[{"n":"x","v":"abc"}]})", "senml_parse: entry 0: 'v' is not a number: \"abc\""},
      {R"({"e":[{"n":"a","v":"1"},{"u":"x","v":"1"}]})", "senml_parse: entry 1 has no name ('n') and there is no base name ('bn')"},
      {R"({"e":[{"n":"x"}]})", "senml_parse: entry 0 ('x') has no value (v, sv or bv)"},
      {R"({"bt":"yesterday","e":[]})", "senml_parse: 'bt' is not a number: \"yesterday\""},
      {R"({"e":[3]})", "senml_parse: entry 0 is not a JSON object"},
  };
  for (auto& c : cases) {
    auto r = parse.process(c.json);
    BOOST_REQUIRE_MESSAGE(!r, c.json);
    BOOST_TEST(r.error().message == c.says);
  }
  // A message cut in half fails somewhere inside; it must fail, not crash.
  auto line = std::string(senml_payload(lines("SYS_sample_data_senml.csv").front()));
  BOOST_TEST(!parse.process(line.substr(0, line.size() / 2)));
  BOOST_TEST(parse.errors().count() == cases.size() + 1);
  BOOST_TEST(parse.process(line).has_value());  // the parser recovers
}

BOOST_AUTO_TEST_CASE(fanout_emits_one_observation_per_observable_with_meta) {
  senml_parse parse;
  senml_fanout fanout(senml_fanout_config::for_dataset(dataset::city, data_dir()));
  std::vector<observation> out;
  auto rec = parse.process(senml_payload(lines("SYS_sample_data_senml.csv").front()));
  auto n = fanout.process(*rec, 7, out);
  BOOST_REQUIRE(n);
  BOOST_TEST(*n == 5u);
  std::vector<std::string> types;
  std::vector<double> values;
  for (auto& o : out) {
    types.push_back(o.obs_type);
    values.push_back(o.value);
    BOOST_TEST(o.msg_id == 7);
    BOOST_TEST(o.timestamp == 1422748800000);
    BOOST_TEST(o.sensor_id == "ci4lr75sl000802ypo4qrcjda23");
    BOOST_TEST(o.meta == "1422748800000,ci4lr75sl000802ypo4qrcjda23,6.1668213,46.1927629");
    // one sensor id and one meta for the whole message, not a copy per observation
    BOOST_TEST(&o.sensor_id.str() == &out.front().sensor_id.str());
    BOOST_TEST(&o.meta.str() == &out.front().meta.str());
  }
  BOOST_TEST(types == (std::vector<std::string>{"temperature", "humidity", "light", "dust", "airquality_raw"}));
  BOOST_TEST(values == (std::vector<double>{8, 53.7, 0, 411.02, 140}));
}

BOOST_AUTO_TEST_CASE(fanout_counts_match_the_datasets) {
  BOOST_TEST(riot_test::observations(dataset::city, "SYS_sample_data_senml.csv").size() == 5000u);
  auto taxi = riot_test::observations(dataset::taxi, "TAXI_sample_data_senml.csv");
  BOOST_TEST(taxi.size() == 10000u);
  BOOST_TEST(taxi.front().obs_type == "taxi_identifier");
  BOOST_TEST(taxi.front().meta.str().substr(0, 34) == "2013-01-13 23:36:00,1358101800000,");
  BOOST_TEST(riot_test::observations(dataset::fit, "FIT_sample_data_senml.csv").size() == 45u * 11);
  auto grid = senml_fanout_config::for_dataset(dataset::grid, data_dir());
  BOOST_TEST(grid.observables == std::vector<std::string>{"energyconsumed"});
}

BOOST_AUTO_TEST_CASE(fanout_rejects_unknown_and_missing_fields) {
  senml_parse parse;
  senml_fanout fanout(senml_fanout_config::for_dataset(dataset::city, data_dir()));
  std::vector<observation> out;
  auto unknown = parse.process(R"({"bt":1,"e":[{"n":"source","sv":"s1"},{"n":"colour","sv":"red"}]})");
  auto r = fanout.process(*unknown, 3, out);
  BOOST_REQUIRE(!r);
  BOOST_TEST(r.error().message == "senml_fanout: message 3: field 'colour' is not in the dataset's schema");
  auto partial = parse.process(R"({"bt":1,"e":[{"n":"source","sv":"s1"},{"n":"longitude","v":"1"},)"
                               R"({"n":"latitude","v":"2"},{"n":"temperature","v":"3"}]})");
  r = fanout.process(*partial, 4, out);
  BOOST_REQUIRE(!r);
  BOOST_TEST(r.error().message == "senml_fanout: message 4: observable 'humidity' is missing");
  auto no_id = parse.process(R"({"bt":1,"e":[{"n":"humidity","v":"3"}]})");
  BOOST_TEST(fanout.process(*no_id, 5, out).error().message == "senml_fanout: message 5: id field 'source' is missing");
  BOOST_TEST(out.empty());
  BOOST_TEST(fanout.errors().count() == 3u);
}

BOOST_AUTO_TEST_CASE(csv_to_senml_writes_exact_senml_that_parses_back) {
  csv_to_senml c2s(csv_to_senml_config::for_dataset(dataset::city, data_dir()));
  auto json = c2s.process("1422748800000,ci4lr75sl000802ypo4qrcjda23,6.1668213,46.1927629,8,53.7,0,411.02,140,building4,analog");
  BOOST_REQUIRE_MESSAGE(json, riot_test::why(json));
  BOOST_TEST(*json ==
             R"({"bt":1422748800000,"e":[{"n":"source","u":"string","sv":"ci4lr75sl000802ypo4qrcjda23"},)"
             R"({"n":"longitude","u":"lon","v":6.1668213},{"n":"latitude","u":"lat","v":46.1927629},)"
             R"({"n":"temperature","u":"far","v":8},{"n":"humidity","u":"per","v":53.7},)"
             R"({"n":"light","u":"per","v":0},{"n":"dust","u":"per","v":411.02},)"
             R"({"n":"airquality_raw","u":"per","v":140},{"n":"location","u":"string","sv":"building4"},)"
             R"({"n":"type","u":"string","sv":"analog"}]})");
  senml_parse parse;
  auto rec = parse.process(*json);
  BOOST_REQUIRE(rec);
  BOOST_TEST(rec->base_time == 1422748800000);
  BOOST_TEST(rec->find("dust")->value == 411.02);
  BOOST_TEST(rec->find("type")->text == "analog");
}

BOOST_AUTO_TEST_CASE(csv_to_senml_counts_malformed_rows) {
  csv_to_senml c2s(csv_to_senml_config::for_dataset(dataset::city, data_dir()));
  BOOST_TEST(c2s.process("1,2,3").error().message == "csv_to_senml: expected 11 columns, got 3");
  BOOST_TEST(c2s.process("now,s,1,2,3,4,5,6,7,a,b").error().message ==
             "csv_to_senml: column 'timestamp' is not an integer (epoch ms): \"now\"");
  BOOST_TEST(c2s.process("1,s,1,2,hot,4,5,6,7,a,b").error().message ==
             "csv_to_senml: column 'temperature' is not numeric: \"hot\"");
  BOOST_TEST(c2s.process(R"(1,s"q,1,2,3,4,5,6,7,a,b)").has_value());  // quotes are escaped
  BOOST_TEST(c2s.errors().count() == 3u);
}

BOOST_AUTO_TEST_CASE(xml_parse_summarizes_the_sample_document) {
  auto text = [] {
    std::string s;
    for (auto& l : lines("tempSAX.xml")) s += l + "\n";
    return s;
  }();
  // Independent count: elements are '<' not followed by '/', '?' or '!'; text is every
  // non-blank run between '>' and '<'.
  std::uint64_t elements = 0, text_bytes = 0, attributes = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '<' && text[i + 1] != '/' && text[i + 1] != '?' && text[i + 1] != '!') ++elements;
    if (text[i] == '>') {
      auto end = text.find('<', i);
      if (end == std::string::npos) break;
      auto run = text.substr(i + 1, end - i - 1);
      if (run.find_first_not_of(" \n\t\r") != std::string::npos) text_bytes += run.size();
    }
    if (text.compare(i, 8, "rollno=\"") == 0) ++attributes;
  }
  xml_parse xml;
  auto s = xml.process(text);
  BOOST_REQUIRE_MESSAGE(s, riot_test::why(s));
  BOOST_TEST(s->elements == elements);
  BOOST_TEST(s->attributes == attributes);
  BOOST_TEST(s->text_bytes == text_bytes);
  BOOST_TEST(s->elements > 30u);
  auto bad = xml.process("<class><student></class>");
  BOOST_REQUIRE(!bad);
  BOOST_TEST(bad.error().message == "xml_parse: Start-end tags mismatch at byte 18");
  BOOST_TEST(xml.process("").error().message == "xml_parse: No document element found at byte 0");
  BOOST_TEST(xml.errors().count() == 2u);
}

BOOST_AUTO_TEST_CASE(annotate_appends_the_metadata_of_the_row_key) {
  annotate ann(annotate_config::for_dataset(dataset::city, data_dir()));
  std::set<std::string> keys;
  for (auto& l : lines("city-metadata.txt")) keys.insert(l.substr(0, l.find(':')));
  BOOST_TEST(ann.size() == keys.size());
  auto row = "1422748800000,ci4lnqzte000002xpokc9d25v0,6.1,46.1,8,53.7,0,411.02,140";
  auto r = ann.process(row);
  BOOST_REQUIRE(r);
  BOOST_TEST(*r == std::string(row) + ",building4,analog");
  BOOST_TEST(ann.process("1,unknown-sensor,1").error().message == "annotate: no metadata for key 'unknown-sensor'");
  BOOST_TEST(ann.process("1422748800000").error().message == "annotate: the row has no column 1");
  BOOST_TEST(ann.errors().count() == 2u);
  annotate fit(annotate_config::for_dataset(dataset::fit, data_dir()));
  BOOST_TEST(*fit.process("subject2,1417890600000,-9.2") == "subject2,1417890600000,-9.2,56,M");
  BOOST_CHECK_THROW(annotate_config::for_dataset(dataset::grid, data_dir()), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(csv_to_senml_writes_valid_json_numbers_for_loose_inputs) {
  csv_to_senml c2s({{"timestamp", "x", "y"}, {"timestamp", "u", "u"}, {"v", "v", "v"}});
  auto json = c2s.process("5,.5,+1");
  BOOST_REQUIRE(json);
  BOOST_TEST(*json == R"({"bt":5,"e":[{"n":"x","u":"u","v":0.5},{"n":"y","u":"u","v":1}]})");
  senml_parse parse;
  BOOST_TEST(parse.process(*json).has_value());
}
