// Per sensor-and-field state of the keyed RIoTBench tasks, in the core's keyed-state table
// (tidemark::detail::flat_hash_map, as keyed operators use), looked up without allocating a key
// string per message.
#pragma once

#include <functional>
#include <string>

#include "tidemark/core/detail/flat_hash_map.hpp"
#include "tidemark/riot/observation.hpp"

namespace tidemark::riot::detail {

template <class State>
class keyed_states {
 public:
  /// The state of `o`'s sensor and field, made by `init()` on first use. The reference is valid
  /// until the next call.
  template <class Init>
  State& get(const observation& o, Init&& init) {
    const auto key = sensor_field_key(o, key_);
    return states_.find_or_insert(tidemark::detail::mix_hash(std::hash<std::string_view>{}(key)),
                                  key_, init);
  }

 private:
  tidemark::detail::flat_hash_map<std::string, State> states_;
  std::string key_;  // reused for every lookup
};

}  // namespace tidemark::riot::detail
