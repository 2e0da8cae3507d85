// Reads the RIoTBench CITY (SYS) SenML sample for the I/O task tests: each line is
// "<timestamp>,<SenML JSON>"; the tests need the timestamp, the source id and observed values.
#pragma once

#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../support/environment.hpp"

namespace tidemark::test {

struct city_event {
  std::string line;  ///< the whole sample line
  long long ts = 0;
  std::string source;
  std::string temperature;
  std::string humidity;
};

namespace detail {
// The string after `marker` up to the next '"' (enough for the sample's fixed field layout).
inline std::string after(const std::string& line, const std::string& marker) {
  auto at = line.find(marker);
  if (at == std::string::npos) throw std::runtime_error("sample line lacks " + marker + ": " + line);
  at += marker.size();
  return line.substr(at, line.find('"', at) - at);
}
// The "v" of the entry named `field`: entries read {"v":"<value>","u":"<unit>","n":"<field>"}.
inline std::string value_of(const std::string& line, const std::string& field) {
  auto n = line.find("\"n\":\"" + field + "\"");
  auto v = line.rfind("{\"v\":\"", n);
  if (n == std::string::npos || v == std::string::npos)
    throw std::runtime_error("sample line lacks field " + field + ": " + line);
  v += 6;
  return line.substr(v, line.find('"', v) - v);
}
}  // namespace detail

/// The first `n` events of SYS_sample_data_senml.csv.
inline std::vector<city_event> city_events(std::size_t n) {
  std::ifstream in(data_dir() + "/SYS_sample_data_senml.csv");
  if (!in) throw std::runtime_error("cannot open SYS_sample_data_senml.csv in " + data_dir());
  std::vector<city_event> events;
  std::string line;
  while (events.size() < n && std::getline(in, line)) {
    city_event e;
    e.ts = std::stoll(line.substr(0, line.find(',')));
    e.source = detail::after(line, "\"sv\":\"");
    e.temperature = detail::value_of(line, "temperature");
    e.humidity = detail::value_of(line, "humidity");
    e.line = std::move(line);
    events.push_back(std::move(e));
  }
  return events;
}

}  // namespace tidemark::test
