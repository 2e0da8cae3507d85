// Test helpers: the RIoTBench sample files from TIDEMARK_DATA_DIR, parsed once per test.
#pragma once

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tidemark/riot/senml.hpp"
#include "../../support/environment.hpp"

namespace riot_test {

inline std::string data_path(const std::string& file) { return tidemark::test::data_dir() + "/" + file; }

/// The error message of a failed result, or "" (for BOOST_REQUIRE_MESSAGE, which always evaluates it).
template <class R>
std::string why(const R& r) {
  return r ? std::string() : r.error().message;
}

/// The data directory itself.
inline std::string data_dir() { return tidemark::test::data_dir(); }

inline std::vector<std::string> lines(const std::string& file) {
  std::ifstream in(data_path(file));
  if (!in) throw std::runtime_error("missing sample file " + data_path(file));
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(l);
  return out;
}

/// The observations of a SenML sample file, fanned out per field (message ids count from 1).
inline std::vector<tidemark::riot::observation> observations(tidemark::riot::dataset d, const std::string& file) {
  tidemark::riot::senml_parse parse;
  tidemark::riot::senml_fanout fanout(tidemark::riot::senml_fanout_config::for_dataset(d, data_dir()));
  std::vector<tidemark::riot::observation> out;
  std::int64_t id = 0;
  for (auto& l : lines(file)) {
    auto rec = parse.process(tidemark::riot::senml_payload(l));
    if (!rec) throw std::runtime_error(rec.error().message);
    auto n = fanout.process(*rec, ++id, out);
    if (!n) throw std::runtime_error(n.error().message);
  }
  return out;
}

}  // namespace riot_test
