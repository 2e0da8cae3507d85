// The lines of a result file in sorted order, for comparing runs whose output order is not
// defined (parallel instances, several nodes).
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace tidemark::test {

/// The lines of file `p`, sorted; none when it cannot be read.
inline std::vector<std::string> sorted_lines(const std::filesystem::path& p) {
  std::ifstream in{p};
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  return lines;
}

}  // namespace tidemark::test
