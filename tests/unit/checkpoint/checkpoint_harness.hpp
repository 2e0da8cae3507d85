// Test helpers for checkpoints of single instances: take an instance's snapshot as bytes, restore
// a fresh instance from them, and follow a job's source through its timestamp operator (whose
// event times identify the elements when their type is private to the job).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "tidemark/core/operator.hpp"
#include "tidemark/core/state.hpp"

namespace tidemark::test {

/// What `logic` (an operator, a source or a sink) writes for checkpoint `id`.
template <class Logic>
std::vector<std::uint8_t> snapshot_of(Logic& logic, std::uint64_t id = 7) {
  std::vector<std::uint8_t> out;
  state_writer w{id, out};
  logic.snapshot(w);
  return out;
}

/// Restores `logic` from `bytes` of checkpoint `id` and checks that it read every byte.
template <class Logic>
void restore_from(Logic& logic, const std::vector<std::uint8_t>& bytes, std::uint64_t id = 7) {
  state_reader r{id, bytes.data(), bytes.size()};
  logic.restore(r);
  BOOST_CHECK_EQUAL(r.remaining(), 0u);
}

/// Feeds what a source emits through a timestamp operator and keeps the event times in order.
class event_times final : public emitter {
 public:
  explicit event_times(std::unique_ptr<operator_logic> timestamps) : timestamps_(std::move(timestamps)) {}
  void emit_watermark(event_time) override {}
  void emit_idle(bool) override {}
  std::vector<event_time> times;

 protected:
  void emit_on(std::uint32_t port, batch_ptr b) override {
    if (port != 0) return;
    if (!b->times.empty()) {  // the timestamp operator's output comes back here
      times.insert(times.end(), b->times.begin(), b->times.end());
      return;
    }
    timestamps_->process(0, std::move(b), *this);
  }

 private:
  std::unique_ptr<operator_logic> timestamps_;
};

}  // namespace tidemark::test
