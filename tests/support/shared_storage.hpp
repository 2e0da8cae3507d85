// Storage services that the test cases of a module share, like a node's. They end with the test
// module (a Boost.Test global fixture), not in static destruction, where the CAF actor system of a
// service cannot end. Include after <boost/test/unit_test.hpp>, in one file per test module.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "tidemark/persistence/storage_service.hpp"

namespace tidemark::test {

inline std::vector<std::shared_ptr<persistence::storage_service>>& shared_services() {
  static std::vector<std::shared_ptr<persistence::storage_service>> all;
  return all;
}

/// A service with `cfg` that lives until the test module ends; keep it as a weak_ptr in statics.
inline std::shared_ptr<persistence::storage_service> shared_service(persistence::storage_config cfg = {}) {
  shared_services().push_back(std::make_shared<persistence::storage_service>(std::move(cfg)));
  return shared_services().back();
}

struct end_shared_services {
  ~end_shared_services() { shared_services().clear(); }
};
BOOST_TEST_GLOBAL_FIXTURE(end_shared_services);

}  // namespace tidemark::test
