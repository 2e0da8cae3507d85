// `tidemark run` on a terminal (a pseudo-terminal here) redraws one progress line in place and
// erases it before the summary; with its output going to pipes it prints no progress line.
#define BOOST_TEST_MODULE progress line on a terminal
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <regex>
#include <string>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../support/environment.hpp"

namespace {

// 8000 readings at 4000/s: about two seconds, four redraws of the line
const std::vector<std::string> job_args = {
    tidemark::test::tool_binary(), "run", "example-window-count", "--events", "8000", "--rate", "4000"};

[[noreturn]] void exec_tidemark() {
  std::vector<char*> argv;
  for (const auto& a : job_args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execv(argv[0], argv.data());
  ::_exit(127);
}

/// Everything `fd` yields until the writer closes it (a pty master reports EIO then), within 60 s.
std::string read_all(int fd) {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{60};
  char buf[4096];
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    auto n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

int wait_exit(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// The job's output on a pseudo-terminal `columns` wide (stdout and stderr both go there).
std::string run_on_terminal(unsigned short columns, int& exit_code) {
  winsize size{};
  size.ws_row = 40;
  size.ws_col = columns;
  int master = -1;
  auto pid = ::forkpty(&master, nullptr, nullptr, &size);
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) exec_tidemark();
  auto out = read_all(master);
  ::close(master);
  exit_code = wait_exit(pid);
  return out;
}

/// The progress lines drawn in `out`: the text after each `\r` up to the clear-to-end-of-line.
std::vector<std::string> drawn_lines(const std::string& out) {
  std::vector<std::string> lines;
  static const std::regex drawn{"\r(elapsed [^\r\n]*)\x1b\\[K"};
  for (std::sregex_iterator it{out.begin(), out.end(), drawn}, end; it != end; ++it)
    lines.push_back((*it)[1]);
  return lines;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_terminal_sees_the_line_redrawn_then_erased_before_the_summary) {
  int code = -1;
  auto out = run_on_terminal(200, code);
  BOOST_TEST(code == 0);
  auto lines = drawn_lines(out);
  BOOST_TEST_MESSAGE("progress lines drawn: " << lines.size());
  BOOST_REQUIRE(lines.size() >= 2);
  static const std::regex shape{
      R"(elapsed [0-9.]+ s \| (-|[0-9.]+k?) events/s \| [0-9.]+k? events \| watermark (-|end|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) \| late \d+)"};
  for (const auto& l : lines) BOOST_TEST(std::regex_match(l, shape), l);
  // the job moved while it was watched: some redraw shows a rate
  bool rate_shown = false;
  for (const auto& l : lines) rate_shown |= l.find("- events/s") == std::string::npos;
  BOOST_TEST(rate_shown);
  // erased (\r, clear line) after the last redraw, and the summary and report come after that
  auto last_draw = out.rfind("\relapsed ");
  auto erased = out.find("\r\x1b[K", last_draw + 1);
  BOOST_REQUIRE(erased != std::string::npos);
  auto report = out.find("window results for 8000 readings");
  BOOST_TEST(report != std::string::npos);
  BOOST_TEST(report > erased);
  BOOST_TEST(out.find("operator", erased) != std::string::npos);  // the summary table's header
}

BOOST_AUTO_TEST_CASE(a_narrow_terminal_gets_the_line_cut_to_its_width) {
  int code = -1;
  auto out = run_on_terminal(40, code);
  BOOST_TEST(code == 0);
  auto lines = drawn_lines(out);
  BOOST_REQUIRE(!lines.empty());
  for (const auto& l : lines) BOOST_TEST(l.size() <= 39u, l);  // a full line would wrap
}

BOOST_AUTO_TEST_CASE(output_to_pipes_has_no_progress_line) {
  int pipe_fds[2];
  BOOST_REQUIRE(::pipe(pipe_fds) == 0);
  auto pid = ::fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(pipe_fds[1], STDOUT_FILENO);
    ::dup2(pipe_fds[1], STDERR_FILENO);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    exec_tidemark();
  }
  ::close(pipe_fds[1]);
  auto out = read_all(pipe_fds[0]);
  ::close(pipe_fds[0]);
  BOOST_TEST(wait_exit(pid) == 0);
  BOOST_TEST(out.find("window results for 8000 readings") != std::string::npos);
  BOOST_TEST(out.find("elapsed") == std::string::npos);
  BOOST_TEST(out.find('\r') == std::string::npos);
}
