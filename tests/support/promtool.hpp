// Checks Prometheus expositions with the real `promtool check metrics` (Debian's prometheus
// package, installed by scripts/dev setup). A missing promtool fails the test: it is never skipped.
// Include after <boost/test/unit_test.hpp>.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "temp_dir.hpp"

namespace tidemark::test {

/// What `promtool check metrics` says about `exposition` (its output and exit status); "" when it
/// accepts it. Fails the test (BOOST_REQUIRE) when promtool is not installed.
inline std::string promtool_problems(const std::string& exposition) {
  // NOLINTNEXTLINE(concurrency-mt-unsafe): tests call it from their main thread
  BOOST_REQUIRE_MESSAGE(std::system("command -v promtool >/dev/null 2>&1") == 0,
                        "promtool is missing: `scripts/dev setup` installs Debian's prometheus");
  temp_dir dir{"tidemark-promtool"};
  const auto file = dir / "metrics.txt";
  std::ofstream{file} << exposition;
  std::string output;
  auto* pipe = ::popen(("promtool check metrics < '" + file + "' 2>&1").c_str(), "r");
  BOOST_REQUIRE(pipe);
  char buf[512];
  while (auto n = std::fread(buf, 1, sizeof buf, pipe)) output.append(buf, n);
  const int status = ::pclose(pipe);
  if (status == 0) return {};
  return "promtool exit status " + std::to_string(status) + ": " + output;
}

}  // namespace tidemark::test
