// Where a test finds the programs and files it uses: in the environment ctest gives it
// (tidemark_add_test in cmake/TidemarkTesting.cmake; RUNS names the programs), never compiled in.
// An object file then does not depend on where the checkout is, and the compiler cache serves
// every fresh clone (CI builds one each run).
#pragma once

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace tidemark::test {

/// The value of environment variable `name`; throws naming it when it is unset or empty (the test
/// was not started by ctest, or its tidemark_add_test lacks `RUNS`).
inline std::string from_environment(const char* name) {
  const char* v = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read before threads start
  if (!v || !*v)
    throw std::runtime_error(std::string{name} +
                             " is not set: run the test through ctest (tidemark_add_test sets it)");
  return v;
}

/// The RIoTBench sample data folder of the build.
inline std::string data_dir() { return from_environment("TIDEMARK_DATA_DIR"); }
/// The repository's root folder.
inline std::string source_dir() { return from_environment("TIDEMARK_SOURCE_DIR"); }
/// The `tidemark` tool (tests with `RUNS tidemark`).
inline std::string tool_binary() { return from_environment("TIDEMARK_BIN"); }
/// The `tidemark-node` program (tests with `RUNS tidemark-node`).
inline std::string node_binary() { return from_environment("TIDEMARK_NODE_BIN"); }

}  // namespace tidemark::test
