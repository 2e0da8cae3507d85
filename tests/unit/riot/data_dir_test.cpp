// riot::default_data_dir(): $TIDEMARK_DATA_DIR when set and not empty, else the build's sample data.
// (In a build tree that folder exists, so neither the installed fallback nor the error naming both
// paths is reached here.)
#define BOOST_TEST_MODULE riot_data_dir
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <string>

#include "../../support/environment.hpp"
#include "tidemark/riot/dataset.hpp"

using tidemark::riot::default_data_dir;

namespace {
// The build's sample data, as ctest passes it, taken before the tests change the environment.
const std::string build_data_dir = tidemark::test::data_dir();
}  // namespace

// The tests change the process environment one after the other (Boost.Test runs them serially).
// NOLINTBEGIN(concurrency-mt-unsafe)

BOOST_AUTO_TEST_CASE(the_environment_variable_wins_even_when_the_folder_is_missing) {
  setenv("TIDEMARK_DATA_DIR", "/nonexistent/riotbench", 1);
  BOOST_TEST(default_data_dir() == "/nonexistent/riotbench");
}

BOOST_AUTO_TEST_CASE(without_it_the_build_s_sample_data) {
  unsetenv("TIDEMARK_DATA_DIR");
  BOOST_TEST(default_data_dir() == build_data_dir);
  setenv("TIDEMARK_DATA_DIR", "", 1);  // set but empty counts as unset
  BOOST_TEST(default_data_dir() == build_data_dir);
}

// NOLINTEND(concurrency-mt-unsafe)
