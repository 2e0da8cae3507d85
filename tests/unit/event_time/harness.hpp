// Test helpers for event-time operators: an emitter that records what an operator emits, and a
// pipe that feeds one operator's output straight into the next, as a fused chain would.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "tidemark/core/detail/flat_hash_map.hpp"
#include "tidemark/core/operator.hpp"

namespace tidemark::test {

/// One thing an operator emitted, in order.
struct emitted {
  enum class kind { batch, watermark, idle } k;
  batch_ptr b;
  event_time wm = 0;
  bool idle = false;
  std::uint32_t port = 0;  ///< the output port of a batch
};

class recording_emitter final : public emitter {
 public:
  void emit_watermark(event_time wm) override {
    log.push_back({emitted::kind::watermark, nullptr, wm});
  }
  void emit_idle(bool idle) override { log.push_back({emitted::kind::idle, nullptr, 0, idle}); }

  /// All values of every batch<T> emitted on `port`, in order.
  template <class T>
  std::vector<T> values(std::uint32_t port = 0) const {
    std::vector<T> xs;
    for (const auto& e : log)
      if (e.k == emitted::kind::batch && e.port == port)
        for (const auto& x : static_cast<const batch<T>&>(*e.b).values) xs.push_back(x);
    return xs;
  }

  std::vector<event_time> watermarks() const {
    std::vector<event_time> wms;
    for (const auto& e : log)
      if (e.k == emitted::kind::watermark) wms.push_back(e.wm);
    return wms;
  }

  std::vector<emitted> log;

 protected:
  void emit_on(std::uint32_t port, batch_ptr b) override {
    log.push_back({emitted::kind::batch, std::move(b), 0, false, port});
  }
};

/// Feeds everything emitted into `next` (process / on_watermark), which emits into `out`.
/// Records the watermark `next` has seen when each element arrives.
class pipe_emitter final : public emitter {
 public:
  pipe_emitter(operator_logic& next, emitter& out) : next_(next), out_(out) {}

  void emit_watermark(event_time wm) override {
    wm_ = wm;
    next_.on_watermark(wm, out_);
  }
  void emit_idle(bool idle) override { out_.emit_idle(idle); }

  /// The watermark in force when each element reached `next`, in arrival order.
  std::vector<event_time> arrival_watermarks;

 protected:
  /// Only the main output feeds `next`.
  void emit_on(std::uint32_t port, batch_ptr b) override {
    if (port != 0) return;
    arrival_watermarks.insert(arrival_watermarks.end(), b->size(), wm_);
    next_.process(0, std::move(b), out_);
  }

 private:
  operator_logic& next_;
  emitter& out_;
  event_time wm_ = start_of_time;
};

/// A batch of values with optional event times and key hashes.
template <class T>
batch_ptr make_batch(std::vector<T> xs, std::vector<event_time> times = {},
                     std::vector<std::uint64_t> hashes = {}) {
  auto b = std::make_unique<batch<T>>(std::move(xs));
  b->times = std::move(times);
  b->hashes = std::move(hashes);
  return b;
}

/// A keyed value at an event time: the element most window tests stream.
struct reading {
  int key = 0;
  event_time t = 0;
  std::int64_t v = 0;
};

/// The key of a reading (or of any element with an int `key`).
struct key_of {
  template <class T>
  int operator()(const T& x) const {
    return x.key;
  }
};

/// The value of a reading.
struct v_of {
  std::int64_t operator()(const reading& r) const { return r.v; }
};

/// `rs` as one batch with their event times and the key hashes key_by would give them.
inline batch_ptr readings(std::vector<reading> rs) {
  std::vector<event_time> ts;
  std::vector<std::uint64_t> hs;
  for (const auto& r : rs) {
    ts.push_back(r.t);
    hs.push_back(detail::mix_hash(std::hash<int>{}(r.key)));
  }
  return make_batch(std::move(rs), std::move(ts), std::move(hs));
}

}  // namespace tidemark::test
