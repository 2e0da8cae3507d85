// The WiredTiger table store on real files: read-back after reopening, range and prefix scans
// (order, bounds, limits), batches, removal, threads sharing one connection, and its errors.
#define BOOST_TEST_MODULE table_store
#include <boost/test/unit_test.hpp>

#include <wiredtiger.h>

#include <string>
#include <thread>
#include <vector>

#include "../../support/temp_dir.hpp"
#include "tidemark/persistence/table_store.hpp"

using namespace tidemark::persistence;
using tidemark::test::temp_dir;

namespace {

const std::string logged = "log=(enabled=true)";

std::vector<std::string> keys_of(const std::vector<row>& rows) {
  std::vector<std::string> keys;
  for (const auto& r : rows) keys.push_back(r.key);
  return keys;
}

}  // namespace

BOOST_AUTO_TEST_CASE(rows_survive_closing_and_reopening_the_database) {
  temp_dir dir;
  {
    auto conn = wt_connection::open(dir.path(), logged);
    table_store table{conn, "readings"};
    table.insert("city-1", "23.5");
    table.insert("city-2", std::string{"bin\0ary", 7});
    table.insert("city-1", "24.0");  // overwrites
  }
  auto conn = wt_connection::open(dir.path(), logged);
  table_store table{conn, "readings"};
  BOOST_TEST(table.lookup("city-1").value() == "24.0");
  BOOST_TEST(table.lookup("city-2").value() == std::string("bin\0ary", 7));
  BOOST_TEST(!table.lookup("city-3").has_value());
  BOOST_TEST(!table.lookup("").has_value());
  BOOST_CHECK_EXCEPTION(table.insert("", "x"), storage_error, [](const storage_error& e) {
    return std::string{e.what()} ==
           "inserting an empty key (not permitted) into table:readings key \"\": Invalid argument";
  });
}

BOOST_AUTO_TEST_CASE(range_scans_are_ordered_bytewise_and_end_exclusive) {
  temp_dir dir;
  auto conn = wt_connection::open(dir.path(), logged);
  table_store table{conn, "ordered", durability::checkpoint};
  const std::vector<std::string> keys{"b", "ab", std::string{"a\0", 2}, "a", "aa", "\xff", "abc", "0"};
  for (const auto& k : keys) table.insert(k, "v" + k);

  auto rows = table.range("a", "b");
  BOOST_TEST(keys_of(rows) == (std::vector<std::string>{"a", std::string{"a\0", 2}, "aa", "ab", "abc"}));
  BOOST_TEST(rows[3].value == "vab");
  // A first key that is absent starts at the next one; the end key itself is excluded.
  BOOST_TEST(keys_of(table.range("aaa", "abc")) == (std::vector<std::string>{"ab"}));
  BOOST_TEST(keys_of(table.range("a", "b", 2)) == (std::vector<std::string>{"a", std::string{"a\0", 2}}));
  BOOST_TEST(table.range("b", "a").empty());
  BOOST_TEST(keys_of(table.range("c", "\xff\xff")) == (std::vector<std::string>{"\xff"}));

  BOOST_TEST(keys_of(table.prefix("ab")) == (std::vector<std::string>{"ab", "abc"}));
  BOOST_TEST(keys_of(table.prefix("\xff")) == (std::vector<std::string>{"\xff"}));
  BOOST_TEST(table.prefix("").size() == keys.size());
  BOOST_TEST(keys_of(table.prefix("", 1)) == (std::vector<std::string>{"0"}));
}

BOOST_AUTO_TEST_CASE(prefix_end_is_the_next_key_after_every_extension) {
  BOOST_TEST(prefix_end("ab").value() == "ac");
  BOOST_TEST(prefix_end("a\xff").value() == "b");
  BOOST_TEST(!prefix_end("\xff\xff").has_value());
  BOOST_TEST(!prefix_end("").has_value());
}

BOOST_AUTO_TEST_CASE(batches_insert_every_row_and_remove_reports_presence) {
  temp_dir dir;
  auto conn = wt_connection::open(dir.path(), logged);
  table_store table{conn, "batched", durability::power_loss};
  std::vector<row> rows;
  for (int i = 0; i < 100; ++i) rows.push_back({"k" + std::to_string(1000 + i), std::to_string(i * i)});
  table.insert_batch(rows);
  BOOST_TEST(table.prefix("k").size() == 100u);
  BOOST_TEST(table.lookup("k1099").value() == "9801");
  BOOST_TEST(table.remove("k1099"));
  BOOST_TEST(!table.remove("k1099"));
  BOOST_TEST(!table.lookup("k1099").has_value());
  BOOST_TEST(table.prefix("k").size() == 99u);
}

BOOST_AUTO_TEST_CASE(threads_share_one_connection_with_a_store_each) {
  temp_dir dir;
  auto conn = wt_connection::open(dir.path(), logged);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([conn, t] {
      table_store table{conn, "shared"};
      for (int i = 0; i < 250; ++i) table.insert("t" + std::to_string(t) + "-" + std::to_string(i), "x");
    });
  for (auto& th : threads) th.join();
  table_store table{conn, "shared"};
  BOOST_TEST(table.prefix("t").size() == 1000u);
  BOOST_TEST(table.prefix("t3-").size() == 250u);
}

BOOST_AUTO_TEST_CASE(bad_table_names_are_rejected_with_the_name) {
  temp_dir dir;
  auto conn = wt_connection::open(dir.path(), logged);
  for (std::string bad : {"", "a/b", "x:y", "with space"}) {
    try {
      table_store table{conn, bad};
      BOOST_FAIL("accepted table name '" + bad + "'");
    } catch (const std::invalid_argument& e) {
      BOOST_TEST(std::string{e.what()}.find("table store name \"" + bad + "\" is invalid") == 0u);
    }
  }
}

BOOST_AUTO_TEST_CASE(wiredtiger_errors_name_the_table_and_key) {
  temp_dir dir;
  { table_store table{wt_connection::open(dir.path(), logged), "events"}; }
  auto conn = wt_connection::open(dir.path(), logged + ",readonly=true");
  table_store table{conn, "events"};
  try {
    table.insert("sensor-7", "1");
    BOOST_FAIL("insert into a read-only database succeeded");
  } catch (const storage_error& e) {
    std::string expected = std::string{"inserting into table:events key \"sensor-7\": "} +
                           wiredtiger_strerror(e.code());
    BOOST_TEST(e.what() == expected);
  }
}

BOOST_AUTO_TEST_CASE(durability_must_match_the_connection_and_the_existing_table) {
  temp_dir dir;
  {
    auto unlogged = wt_connection::open(dir.path());
    BOOST_CHECK_THROW((table_store{unlogged, "t", durability::process_crash}), std::invalid_argument);
    table_store ok{unlogged, "t", durability::checkpoint};
    ok.insert("k", "v");
    ok.checkpoint();
  }
  auto conn = wt_connection::open(dir.path(), logged);
  try {
    table_store table{conn, "t", durability::power_loss};
    BOOST_FAIL("reopened an unlogged table as power_loss");
  } catch (const std::invalid_argument& e) {
    BOOST_TEST(std::string{e.what()} ==
               "table store table:t was created without a log, so it cannot give durability "
               "power_loss; open it with the level it was created with");
  }
  BOOST_TEST(table_store(conn, "t", durability::checkpoint).lookup("k").value() == "v");

  auto session = conn->open_session();
  session.create("table:strings", "key_format=S,value_format=S");
  BOOST_CHECK_EXCEPTION((table_store{conn, "strings"}), std::invalid_argument, [](const auto& e) {
    return std::string{e.what()}.find("exists with key_format=S,value_format=S") != std::string::npos;
  });
}

BOOST_AUTO_TEST_CASE(the_cache_statistic_counts_the_rows_held_in_memory) {
  temp_dir dir;
  auto conn = wt_connection::open(dir.path(), "statistics=(fast),cache_size=64MB");
  table_store table{conn, "cached", durability::checkpoint};
  const auto before = conn->cache_bytes_in_use();
  // 2,000 values of 4 KiB: 8 MB that no checkpoint has written out, so the cache holds them all
  const std::size_t rows = 2000, size = 4096;
  for (std::size_t i = 0; i < rows; ++i)
    table.insert("row-" + std::to_string(i), std::string(size, static_cast<char>('a' + i % 26)));
  const auto after = conn->cache_bytes_in_use();
  BOOST_TEST(before < 1'000'000u);
  BOOST_TEST(after >= before + rows * size);
  BOOST_TEST(after <= 64u << 20);

  temp_dir quiet;
  auto without = wt_connection::open(quiet.path());  // keeps no statistics
  BOOST_CHECK_EXCEPTION(without->cache_bytes_in_use(), storage_error, [&](const storage_error& e) {
    return std::string{e.what()}.find(
               "reading the cache statistics of the WiredTiger database in '" +
               quiet.path().string() + "'") == 0;
  });
}
