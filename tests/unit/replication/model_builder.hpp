// Hand-made replication models for the tests: operators with a given load on a given host,
// queries derived from the sinks.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "tidemark/replication/model.hpp"

namespace tidemark::replication::test {

class model_builder {
 public:
  model_builder& host(std::string name, double cpu = 1.0,
                      double net = std::numeric_limits<double>::infinity()) {
    m_.hosts.push_back({std::move(name), cpu, net});
    return *this;
  }
  /// An operator of measured load `load` whose primary runs on host `on`.
  op_index op(std::string name, double load, host_index on, std::vector<op_index> inputs = {},
              double bytes_per_event = 0) {
    operator_info o;
    o.name = std::move(name);
    for (auto i : inputs) o.inputs.push_back({i, 1.0});
    o.source_rate = 1;
    o.bytes_in = o.bytes_out = bytes_per_event;
    o.measured_load = load;
    m_.operators.push_back(std::move(o));
    m_.primary.push_back(on);
    return static_cast<op_index>(m_.operators.size() - 1);
  }
  replication_model build() {
    m_.queries = queries_from_sinks(m_.operators);
    apply_load_model(m_);
    return m_;
  }

 private:
  replication_model m_;
};

}  // namespace tidemark::replication::test
