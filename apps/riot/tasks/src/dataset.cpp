// Dataset names (see dataset.hpp).
#include "tidemark/riot/dataset.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace tidemark::riot {

dataset parse_dataset(std::string_view name) {
  std::string upper(name);
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  if (upper == "CITY" || upper == "SYS") return dataset::city;
  if (upper == "TAXI") return dataset::taxi;
  if (upper == "FIT") return dataset::fit;
  if (upper == "GRID") return dataset::grid;
  throw std::invalid_argument("unknown dataset '" + std::string(name) +
                              "'; use CITY (or SYS), TAXI, FIT or GRID");
}

std::string_view to_string(dataset d) noexcept {
  switch (d) {
    case dataset::city: return "CITY";
    case dataset::taxi: return "TAXI";
    case dataset::fit: return "FIT";
    case dataset::grid: return "GRID";
  }
  return "?";
}

std::string default_data_dir() {
  if (const char* dir = std::getenv("TIDEMARK_DATA_DIR"); dir && *dir)  // NOLINT(concurrency-mt-unsafe)
    return dir;
  // The source tree first, so that a build never reads an older installed copy.
  for (const char* dir : {TIDEMARK_DEFAULT_DATA_DIR, TIDEMARK_INSTALLED_DATA_DIR})
    if (std::filesystem::is_directory(dir)) return dir;
  throw std::runtime_error("no RIoTBench sample data: TIDEMARK_DATA_DIR is not set and neither "
                           TIDEMARK_DEFAULT_DATA_DIR " nor " TIDEMARK_INSTALLED_DATA_DIR
                           " exists; set TIDEMARK_DATA_DIR to the sample data directory");
}

}  // namespace tidemark::riot
