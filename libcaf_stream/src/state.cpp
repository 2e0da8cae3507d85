// Captured checkpoint state (state.hpp): the synchronous default of operator_logic::capture.
#include "tidemark/core/state.hpp"

#include <memory>
#include <utility>

namespace tidemark {

state_capture captured_bytes(std::vector<std::uint8_t> bytes) {
  return captured_bytes(std::move(bytes), nullptr);
}

state_capture captured_bytes(std::vector<std::uint8_t> bytes, state_capture rest) {
  // shared: a std::function must be copyable, and 100 MB are not copied for that
  auto b = std::make_shared<const std::vector<std::uint8_t>>(std::move(bytes));
  return [b, rest = std::move(rest)](state_writer& out) {
    out.bytes().write(b->data(), b->size());
    if (rest) rest(out);
  };
}

state_capture operator_logic::capture(std::uint64_t checkpoint) {
  return capture_now(checkpoint, [&](state_writer& out) { snapshot(out); });
}

}  // namespace tidemark
