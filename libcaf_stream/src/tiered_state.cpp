// Names of the tiered-state enums for metrics and messages.
#include "tidemark/core/tiered_state.hpp"

namespace tidemark {

const char* to_string(io_class c) noexcept {
  switch (c) {
    case io_class::prestage: return "prestage";
    case io_class::write: return "write";
    case io_class::destage: return "destage";
  }
  return "?";
}

}  // namespace tidemark
