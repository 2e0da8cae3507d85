// The rows of a job's results table and their comparison with a reference run's, for the tests
// that kill jobs and check that recovery lost, repeated or changed nothing.
// Include after <boost/test/unit_test.hpp>.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "tidemark/persistence/table_store.hpp"

namespace tidemark::test {

using result_rows = std::map<std::string, std::string>;

/// Every row of table `table` in the WiredTiger directory `dir` (a table sink's commit markers
/// live in another table). A process that ran the sink may still hold the directory for a moment
/// after the run returned (a node closes it at the coordinator's Stop): until then WiredTiger
/// refuses a second process, so this retries for up to 10 s.
inline result_rows table_rows(const std::string& dir, const std::string& table) {
  std::shared_ptr<persistence::wt_connection> db;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
  while (!db) {
    try {
      db = persistence::wt_connection::open_shared(dir, "log=(enabled=true)");
    } catch (const persistence::storage_error&) {
      if (std::chrono::steady_clock::now() > deadline) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds{50});
    }
  }
  persistence::table_store t{db, table, persistence::durability::power_loss};
  result_rows out;
  t.scan({}, std::nullopt, [&](std::string_view k, std::string_view v) {
    out.emplace(std::string{k}, std::string{v});
    return true;
  });
  return out;
}

/// Checks that `got` holds exactly the rows of `expected`: none lost, none with another value,
/// none extra; logs the first five of each kind.
inline void check_same_rows(const result_rows& expected, const result_rows& got) {
  std::size_t missing = 0, wrong = 0, extra = 0;
  for (const auto& [k, v] : expected) {
    auto it = got.find(k);
    if (it == got.end()) {
      if (++missing <= 5) BOOST_TEST_MESSAGE("lost: " << k << " = " << v);
    } else if (it->second != v) {
      if (++wrong <= 5) BOOST_TEST_MESSAGE("wrong: " << k << " = " << it->second << ", expected " << v);
    }
  }
  for (const auto& [k, v] : got)
    if (!expected.count(k) && ++extra <= 5) BOOST_TEST_MESSAGE("extra: " << k << " = " << v);
  BOOST_TEST(got.size() == expected.size());
  BOOST_TEST(missing == 0u);
  BOOST_TEST(wrong == 0u);
  BOOST_TEST(extra == 0u);
}

}  // namespace tidemark::test
