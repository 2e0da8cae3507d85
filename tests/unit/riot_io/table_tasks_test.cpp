// Table insert / lookup / range scan on a real WiredTiger table filled from the CITY sample:
// range queries follow the CITY TRAIN timer file, keys sort numerically, bad rows are counted.
#define BOOST_TEST_MODULE riot_table_tasks
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <sstream>

#include "../../support/temp_dir.hpp"
#include "sample_data.hpp"
#include "tidemark/riot/io/table_tasks.hpp"

using namespace tidemark::riot::io;
using tidemark::persistence::wt_connection;
using tidemark::test::temp_dir;

namespace {

// "<ts>,<source>,<temperature>" per CITY event: the row the tasks store.
std::string row_of(const tidemark::test::city_event& e) {
  return std::to_string(e.ts) + "," + e.source + "," + e.temperature;
}

std::vector<std::string> lines(const std::string& batch) {
  std::vector<std::string> out;
  std::istringstream in(batch);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

const std::vector<key_part> ts_then_source{{0, key_encoding::integer}, {1, key_encoding::text}};

}  // namespace

BOOST_AUTO_TEST_CASE(integer_keys_sort_in_numeric_order) {
  BOOST_TEST(ordered_integer_key(0) == "09223372036854775808");
  BOOST_TEST(ordered_integer_key(-1) == "09223372036854775807");
  std::vector<std::int64_t> xs{1422748800000, -5, 7, 0, -1, 12, INT64_MIN, INT64_MAX};
  std::vector<std::string> keys;
  for (auto x : xs) keys.push_back(ordered_integer_key(x));
  std::sort(xs.begin(), xs.end());
  std::sort(keys.begin(), keys.end());
  for (std::size_t i = 0; i < xs.size(); ++i) BOOST_TEST(keys[i] == ordered_integer_key(xs[i]));
}

BOOST_AUTO_TEST_CASE(range_scans_follow_the_city_timer_file) {
  temp_dir dir;
  auto conn = wt_connection::open(dir.path(), "log=(enabled=true)");
  auto events = tidemark::test::city_events(1000);
  BOOST_REQUIRE(events.size() == 1000u);
  {
    table_insert insert{conn, {"city", ts_then_source, 100}};
    for (const auto& e : events) BOOST_TEST(insert.process(row_of(e)));
    BOOST_TEST(insert.rows_written() == 1000u);
    BOOST_TEST(insert.errors().count() == 0u);
  }
  table_range_scan scan{conn, {"city"}};
  // Timer rows 1 and 2 of inputFileForTimerSpout-CITY.csv: all 1000 sample events fall in the
  // first range, none in the second.
  BOOST_TEST(lines(scan.process(1422748800000, 1422749800000)).size() == 1000u);
  BOOST_TEST(scan.process(1422752400000, 1422753400000).empty());
  // Seconds 3, 4 and 5 of the sample hold 17 + 16 + 17 events; the end is exclusive.
  auto batch = lines(scan.process(1422748803000, 1422748806000));
  BOOST_TEST(batch.size() == 50u);
  BOOST_TEST(batch.front().rfind("1422748803000,", 0) == 0u);
  BOOST_TEST(batch.back().rfind("1422748805000,", 0) == 0u);
  BOOST_TEST(std::is_sorted(batch.begin(), batch.end()));
  BOOST_TEST(scan.rows_returned() == 1050u);
  // One row at a time: the same rows in the same order, counted the same way.
  std::vector<std::string> visited;
  scan.for_each(1422748803000, 1422748806000,
                [&](std::string_view row) { visited.emplace_back(row); });
  BOOST_TEST(visited == batch);
  BOOST_TEST(scan.rows_returned() == 1100u);

  table_range_scan limited{conn, {"city", 3}};
  BOOST_TEST(lines(limited.process(1422748803000, 1422748806000)).size() == 3u);
  visited.clear();
  limited.for_each(1422748803000, 1422748806000,
                   [&](std::string_view row) { visited.emplace_back(row); });
  BOOST_TEST(visited == std::vector<std::string>(batch.begin(), batch.begin() + 3));
}

BOOST_AUTO_TEST_CASE(lookup_finds_the_stored_row_by_its_key_columns) {
  temp_dir dir;
  auto conn = wt_connection::open(dir.path(), "log=(enabled=true)");
  auto events = tidemark::test::city_events(20);
  {
    table_insert insert{conn, {"city", ts_then_source, 7}};
    for (const auto& e : events) insert.process(row_of(e));
  }  // the destructor writes the last, partial batch
  table_lookup lookup{conn, {"city", ts_then_source}};
  BOOST_TEST(lookup.process("1422748800000,ci4lr75sl000802ypo4qrcjda23").value() ==
             "1422748800000,ci4lr75sl000802ypo4qrcjda23,8");
  BOOST_TEST(lookup.process(row_of(events[19])).value() == row_of(events[19]));
  BOOST_TEST(!lookup.process("1422748800000,no-such-sensor").has_value());
  BOOST_TEST(lookup.misses() == 1u);
  BOOST_TEST(!lookup.process("1422748800000").has_value());
  BOOST_TEST(lookup.errors().count() == 1u);
}

BOOST_AUTO_TEST_CASE(rows_are_written_per_batch_and_bad_rows_are_counted) {
  temp_dir dir;
  auto conn = wt_connection::open(dir.path(), "log=(enabled=true)");
  table_insert insert{conn, {"t", ts_then_source, 2}};
  BOOST_TEST(insert.process("10,a,x"));
  BOOST_TEST(insert.rows_written() == 0u);
  BOOST_TEST(!insert.process("ten,a,x"));
  BOOST_TEST(insert.errors().last() == "table_insert into t: key column 0 is not an integer: \"ten\" in row \"ten,a,x\"");
  BOOST_TEST(!insert.process("11"));
  BOOST_TEST(insert.errors().last() == "table_insert into t: row has no key column 1: \"11\"");
  BOOST_TEST(insert.errors().count() == 2u);
  BOOST_TEST(insert.process("-3,b,y"));
  BOOST_TEST(insert.rows_written() == 2u);
  insert.process("5,c,z");
  insert.flush();
  BOOST_TEST(insert.rows_written() == 3u);
  table_range_scan scan{conn, {"t"}};
  BOOST_TEST(scan.process(INT64_MIN, INT64_MAX) == "-3,b,y\n5,c,z\n10,a,x");
}
