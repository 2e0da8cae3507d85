// What survives kill -9: a child process writes and then kills itself with SIGKILL; the parent
// reopens the database and checks exactly which writes recovery kept at each durability level.
#define BOOST_TEST_MODULE durability
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <functional>
#include <string>

#include "../../support/temp_dir.hpp"
#include "tidemark/persistence/blob_store.hpp"
#include "tidemark/persistence/table_store.hpp"

using namespace tidemark::persistence;
using tidemark::test::temp_dir;

namespace {

const std::string logged = "log=(enabled=true)";

// Ends the calling process at once, as kill -9 would: no destructor, no WiredTiger close.
[[noreturn]] void crash_now() {
  kill(getpid(), SIGKILL);
  _exit(4);  // not reached
}

// Runs `work` in a child process; `work` must end with crash_now() while its stores are open.
void run_and_kill(const std::function<void()>& work) {
  pid_t pid = fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {
    try {
      work();
    } catch (...) {
      _exit(3);
    }
    _exit(5);  // work returned without crashing: the parent sees no SIGKILL and fails
  }
  int status = 0;
  BOOST_REQUIRE(waitpid(pid, &status, 0) == pid);
  BOOST_REQUIRE(WIFSIGNALED(status));
  BOOST_REQUIRE(WTERMSIG(status) == SIGKILL);
}

}  // namespace

BOOST_AUTO_TEST_CASE(logged_levels_keep_every_acknowledged_write) {
  for (auto level : {durability::process_crash, durability::power_loss}) {
    temp_dir dir;
    run_and_kill([&] {
      auto conn = wt_connection::open(dir.path(), logged);
      table_store table{conn, "rows", level};
      for (int i = 0; i < 200; ++i) table.insert("r" + std::to_string(1000 + i), std::to_string(i));
      blob_store blobs{conn, "blobs", level, 4096};
      blobs.put("model", std::string(10000, 'm'));
      crash_now();
    });
    auto conn = wt_connection::open(dir.path(), logged);
    table_store table{conn, "rows", level};
    auto rows = table.prefix("r");
    BOOST_TEST(rows.size() == 200u, to_string(level));
    BOOST_TEST(rows.back().key == "r1199");
    BOOST_TEST(rows.back().value == "199");
    auto model = blob_store(conn, "blobs", level).get("model");
    BOOST_REQUIRE_MESSAGE(model.has_value(), "blob lost at level " << to_string(level));
    BOOST_TEST(*model == std::string(10000, 'm'));
  }
}

BOOST_AUTO_TEST_CASE(checkpoint_level_keeps_exactly_what_was_checkpointed) {
  temp_dir dir;
  run_and_kill([&] {
    auto conn = wt_connection::open(dir.path(), logged);
    table_store table{conn, "rows", durability::checkpoint};
    table.insert("before", "1");
    table.checkpoint();
    table.insert("after", "2");
    crash_now();
  });
  auto conn = wt_connection::open(dir.path(), logged);
  table_store table{conn, "rows", durability::checkpoint};
  BOOST_TEST(table.lookup("before").value() == "1");
  BOOST_TEST(!table.lookup("after").has_value());
}
