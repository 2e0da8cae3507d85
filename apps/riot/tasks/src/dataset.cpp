// Dataset names (see dataset.hpp).
#include "tidemark/riot/dataset.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
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
  return TIDEMARK_DEFAULT_DATA_DIR;
}

}  // namespace tidemark::riot
