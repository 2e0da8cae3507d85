// set_log_level (tidemark/core/log.hpp): each accepted name sets the threshold of spdlog's default
// logger, a bad name is refused with a message naming it and the accepted ones, and library
// messages go to stderr (never stdout, where program output goes) as "TIME LEVEL PROGRAM: TEXT".
#define BOOST_TEST_MODULE log_level
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <utility>

#include <spdlog/spdlog.h>

#include "../../support/temp_dir.hpp"
#include "../../support/thrown.hpp"
#include "tidemark/core/log.hpp"

namespace {

// Points file descriptor `fd` at a file while it lives, so what spdlog's sinks write is readable.
class redirected {
 public:
  redirected(int fd, const std::string& path) : fd_(fd), saved_(::dup(fd)) {
    std::fflush(nullptr);
    int file = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    BOOST_REQUIRE(file >= 0);
    ::dup2(file, fd_);
    ::close(file);
  }
  ~redirected() {
    std::fflush(nullptr);
    ::dup2(saved_, fd_);
    ::close(saved_);
  }
  redirected(const redirected&) = delete;
  redirected& operator=(const redirected&) = delete;

 private:
  int fd_;
  int saved_;
};

std::string read(const std::string& path) {
  std::ifstream in{path};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

BOOST_AUTO_TEST_CASE(each_accepted_name_sets_the_threshold) {
  const std::pair<const char*, spdlog::level::level_enum> levels[] = {
      {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug},
      {"info", spdlog::level::info},   {"warn", spdlog::level::warn},
      {"error", spdlog::level::err},   {"off", spdlog::level::off}};
  for (const auto& [name, level] : levels) {
    tidemark::set_log_level(name);
    BOOST_TEST(spdlog::get_level() == level, name);
  }
  tidemark::set_log_level("info");
}

BOOST_AUTO_TEST_CASE(a_bad_name_is_refused_naming_it_and_keeps_the_level) {
  tidemark::set_log_level("error");
  for (const char* bad : {"loud", "", "INFO", "warning"}) {
    BOOST_TEST(
        tidemark::test::thrown<std::invalid_argument>([&] { tidemark::set_log_level(bad); }) ==
        "log level '" + std::string{bad} + "' is not one of trace, debug, info, warn, error, off");
    BOOST_TEST(spdlog::get_level() == spdlog::level::err);
  }
  tidemark::set_log_level("info");
}

BOOST_AUTO_TEST_CASE(messages_go_to_stderr_with_time_level_and_program) {
  tidemark::test::temp_dir dir{"log-level-test"};
  tidemark::set_log_level("info");
  {
    redirected out{STDOUT_FILENO, dir / "stdout"};
    redirected err{STDERR_FILENO, dir / "stderr"};
    spdlog::info("shown {}", 42);
    spdlog::debug("below the threshold");
    tidemark::set_log_level("warn");
    spdlog::info("no longer shown");
    spdlog::warn("a warning");
    tidemark::set_log_level("info");
  }
  BOOST_TEST(read(dir / "stdout").empty());
  const auto program =
      std::filesystem::path{boost::unit_test::framework::master_test_suite().argv[0]}
          .filename()
          .string();
  // The level may be coloured when stderr was a terminal when the logger was made.
  const std::string stamp = R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z )";
  const std::string colour = R"((\x1b\[[0-9;]*m)*)";
  const std::regex expected{stamp + colour + "info" + colour + " " + program + ": shown 42\n" +
                            stamp + colour + "warning" + colour + " " + program + ": a warning\n"};
  const auto text = read(dir / "stderr");
  BOOST_TEST(std::regex_match(text, expected), text);
}
