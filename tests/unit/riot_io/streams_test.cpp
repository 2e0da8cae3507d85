// The I/O tasks on Tidemark streams, run by tidemark::run: CITY SenML lines parsed by the SenML
// parse task and inserted into a WiredTiger table by parallel sink instances, bad rows counted in the job report, lookups as an
// operator, and zip archives written by a sink that flushes at the end of the stream.
#define BOOST_TEST_MODULE riot_io_streams
#include <boost/test/unit_test.hpp>

#include <zip.h>

#include <filesystem>

#include "../../support/temp_dir.hpp"
#include "sample_data.hpp"
#include "tidemark/riot/io/streams.hpp"
#include "tidemark/riot/senml.hpp"
#include "tidemark/runtime/runtime.hpp"

using namespace tidemark;
using namespace tidemark::riot::io;
using persistence::wt_connection;
using tidemark::test::temp_dir;

namespace {

const std::vector<key_part> ts_then_source{{0, key_encoding::integer}, {1, key_encoding::text}};

// The SenML parse task, then the row "<base time>,<source>,<temperature as written>". Each
// map instance gets its own copy of the parser (it is one-per-thread).
struct city_row_parser {
  std::shared_ptr<tidemark::riot::senml_parse> parse = std::make_shared<tidemark::riot::senml_parse>();
  city_row_parser() = default;
  city_row_parser(const city_row_parser&) : parse(std::make_shared<tidemark::riot::senml_parse>()) {}

  std::string operator()(const std::string& line) const {
    auto record = parse->process(tidemark::riot::senml_payload(line));
    if (!record) throw std::runtime_error(record.error().message);
    return std::to_string(record->base_time) + "," + record->find("source")->text + "," +
           record->find("temperature")->text;
  }
};

const operator_metrics& metrics_of(const std::vector<operator_metrics>& all, const std::string& name) {
  for (const auto& m : all)
    if (m.name == name) return m;
  BOOST_FAIL("no operator " + name + " in the job report");
  throw std::logic_error("unreachable");
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_job_inserts_parsed_city_rows_into_the_table_store) {
  temp_dir dir;
  auto conn = wt_connection::open(dir / "", "log=(enabled=true)");
  job j{"city_to_table"};
  auto rows = j.from_text_file(tidemark::test::data_dir() + "/SYS_sample_data_senml.csv")
                  .map(city_row_parser{}, "parse")
                  .parallelism(2);
  // 1000 rows over two instances in batches of 64: each instance ends with a partial batch that
  // only the end-of-stream flush writes.
  insert_into_table(rows, conn, {"city", ts_then_source, 64}, "store");
  auto result = run(j);

  persistence::table_store table{conn, "city"};
  auto all = table.prefix("");
  BOOST_TEST(all.size() == 1000u);
  BOOST_TEST(all.front().value == "1422748800000,ci4lr75sl000802ypo4qrcjda23,8");
  auto events = tidemark::test::city_events(1000);
  for (const auto& e : {events[0], events[499], events[999]}) {
    table_lookup lookup{conn, {"city", ts_then_source}};
    BOOST_TEST(lookup.process(std::to_string(e.ts) + "," + e.source).value() ==
               std::to_string(e.ts) + "," + e.source + "," + e.temperature);
  }
  const auto operators = result.per_operator();
  const auto& store = metrics_of(operators, "store");
  BOOST_TEST(store.events_in == 1000u);
  BOOST_TEST(store.extra.at("task_errors") == 0.0);
}

BOOST_AUTO_TEST_CASE(bad_rows_are_counted_in_the_job_report_and_good_rows_stored) {
  temp_dir dir;
  auto conn = wt_connection::open(dir / "", "log=(enabled=true)");
  job j{"bad_rows"};
  auto rows = j.from_container<std::string>({"1,a,x", "one,b,y", "2,c,z", "3"});
  insert_into_table(rows, conn, {"t", ts_then_source, 10}, "store");
  auto result = run(j);
  BOOST_TEST(metrics_of(result.per_operator(), "store").extra.at("task_errors") == 2.0);
  table_range_scan scan{conn, {"t"}};
  BOOST_TEST(scan.process(INT64_MIN, INT64_MAX) == "1,a,x\n2,c,z");
}

BOOST_AUTO_TEST_CASE(lookups_run_as_an_operator) {
  temp_dir dir;
  auto conn = wt_connection::open(dir / "", "log=(enabled=true)");
  {
    table_insert insert{conn, {"meta", {key_part{}}, 10}};
    insert.process("ci4lr75sl000802ypo4qrcjda23,building4");
    insert.process("ci4lr75v6000a02ypa256zigk27,building2");
  }
  job j{"lookup"};
  auto found = lookup_in_table(j.from_container<std::string>({"ci4lr75v6000a02ypa256zigk27,7.5", "unknown,1"}),
                               conn, {"meta"})
                   .collect();
  run(j);
  auto values = found.values();
  std::sort(values.begin(), values.end());
  BOOST_TEST((values == std::vector<std::optional<std::string>>{
                  std::nullopt, std::string{"ci4lr75v6000a02ypa256zigk27,building2"}}));
}

BOOST_AUTO_TEST_CASE(a_zip_sink_writes_full_archives_and_the_rest_at_the_end) {
  temp_dir dir;
  std::vector<zip_entry> entries;
  for (int i = 0; i < 7; ++i) entries.push_back({"chart-" + std::to_string(i) + ".svg", std::string(100 + i, 's')});
  job j{"zip"};
  zip_entries(j.from_container(entries), {dir / "out", "stats", 3});
  run(j);
  std::size_t total = 0;
  for (const auto* name : {"stats-0-0.zip", "stats-0-1.zip", "stats-0-2.zip"}) {
    int error = 0;
    zip_t* archive = zip_open((dir / "out/" + std::string{name}).c_str(), ZIP_RDONLY, &error);
    BOOST_REQUIRE_MESSAGE(archive, name);
    total += static_cast<std::size_t>(zip_get_num_entries(archive, 0));
    zip_close(archive);
  }
  BOOST_TEST(total == 7u);
}
