// Per sensor-and-field state of the keyed RIoTBench tasks, looked up without allocating a key
// string per message.
#pragma once

#include <string>
#include <unordered_map>

#include "tidemark/riot/observation.hpp"

namespace tidemark::riot::detail {

template <class State>
class keyed_states {
 public:
  /// The state of `o`'s sensor and field, made by `init()` on first use.
  template <class Init>
  State& get(const observation& o, Init&& init) {
    key_.assign(o.sensor_id).push_back('\x1f');
    key_ += o.obs_type;
    auto it = states_.find(key_);
    if (it == states_.end()) it = states_.emplace(key_, init()).first;
    return it->second;
  }

 private:
  std::unordered_map<std::string, State> states_;
  std::string key_;  // reused for every lookup
};

}  // namespace tidemark::riot::detail
