// write_table in a running job (no checkpoints): every element becomes one row, each instance
// commits what is left at the end of the input and leaves the marker "finished".
#define BOOST_TEST_MODULE write_table_job
#include <boost/test/unit_test.hpp>

#include <map>
#include <string>
#include <vector>

#include "../../support/temp_dir.hpp"
#include "tidemark/persistence/table_sink.hpp"
#include "tidemark/persistence/table_store.hpp"
#include "tidemark/runtime/runtime.hpp"

using namespace tidemark;
using namespace tidemark::persistence;
using tidemark::test::temp_dir;

BOOST_AUTO_TEST_CASE(each_element_becomes_one_row) {
  temp_dir dir;
  std::vector<int> xs;
  for (int x = 0; x < 5000; ++x) xs.push_back(x);
  job j{"table"};
  auto squares = j.from_container(xs).parallelism(2).map([](int x) { return x; }).parallelism(2);
  write_table(
      squares, dir.path().string(), "squares", [](int x) { return "k" + std::to_string(x); },
      [](int x) { return std::to_string(x * x); }, "squares");
  run(j);
  // the instances opened the directory where they ran; this process shares their connection
  auto conn = wt_connection::open_shared(dir.path().string(), "log=(enabled=true)");

  std::map<std::string, std::string> want;
  for (int x = 0; x < 5000; ++x) want["k" + std::to_string(x)] = std::to_string(x * x);
  std::map<std::string, std::string> got;
  table_store table{conn, "squares", durability::power_loss};
  for (auto& r : table.prefix("")) got[r.key] = r.value;
  BOOST_TEST((got == want));
  table_store markers{conn, "squares.sink_commits", durability::power_loss};
  for (std::uint32_t i = 0; i < 2; ++i)
    BOOST_TEST(markers.lookup(sink_marker_key("squares", i)).value_or("") == "finished",
               "instance " << i);
}
