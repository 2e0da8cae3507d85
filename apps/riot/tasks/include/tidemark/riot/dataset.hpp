// The four RIoTBench datasets. Task configurations are loadable per dataset with the values of
// RIoTBench's tasks_<DATASET>.properties (as intended where the shipped files are broken).
#pragma once

#include <string>
#include <string_view>

namespace tidemark::riot {

/// CITY is also called SYS in the original file names.
enum class dataset { city, taxi, fit, grid };

/// "CITY"/"SYS", "TAXI", "FIT", "GRID" (any case); throws std::invalid_argument naming the choices.
dataset parse_dataset(std::string_view name);

/// "CITY", "TAXI", "FIT" or "GRID".
std::string_view to_string(dataset d) noexcept;

/// The sample-data directory: $TIDEMARK_DATA_DIR when set, else the directory configured at build time
/// (CMake TIDEMARK_DATA_DIR, by default data/riotbench in the source tree) if it exists, else the
/// installed copy (<prefix>/share/tidemark/riotbench). Throws std::runtime_error naming the paths
/// it tried when none of them exists.
std::string default_data_dir();

}  // namespace tidemark::riot
