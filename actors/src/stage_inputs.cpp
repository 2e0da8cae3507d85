// Duplicate suppression over replica copies and the deterministic input merge (see
// stage_inputs.hpp).
#include "stage_inputs.hpp"

#include <algorithm>

namespace tidemark::detail {

copy_filter::copy_filter(const std::vector<std::uint32_t>& logical_input, std::size_t inputs,
                         std::uint64_t start)
    : input_of_(logical_input),
      at_(logical_input.size()),
      deaf_(logical_input.size(), false),
      restarted_(logical_input.size()),
      inputs_(inputs) {
  // a copy restored from the checkpoint the channels started at starts where they did
  for (auto& in : inputs_) in.barriers.push_back({start, {}});
}

batch_ptr copy_filter::accept(std::uint32_t slot, batch_ptr b) {
  if (deaf_[slot]) return nullptr;
  auto& at = at_[slot];
  auto& in = inputs_[input_of_[slot]];
  const auto start = at.elements;
  const auto n = b->size();
  at = {start + n, 0};
  reached(slot);
  if (in.ended) return nullptr;
  // the frontier is the furthest copy, so it is never behind this one's start
  const auto seen = in.frontier.elements - std::min(start, in.frontier.elements);
  if (in.frontier < at) in.frontier = at;
  if (seen >= n) return nullptr;
  if (seen == 0) return b;
  // copies cut their batches at different places (linger timers): keep the new tail
  targets_.assign(n, 1);
  std::fill_n(targets_.begin(), seen, 0);
  auto old = b->make_empty(seen);
  auto fresh = b->make_empty(n - seen);
  batch_base* outs[] = {old.get(), fresh.get()};
  b->scatter(targets_.data(), outs);
  return fresh;
}

bool copy_filter::accept(std::uint32_t slot, signal_kind kind, event_time wm) {
  if (deaf_[slot]) return false;
  auto& at = at_[slot];
  auto& in = inputs_[input_of_[slot]];
  const bool leading = at == in.frontier;
  ++at.signals;
  reached(slot);
  if (in.frontier < at) in.frontier = at;
  if (in.ended) return false;
  switch (kind) {
    case signal_kind::watermark:
      if (wm <= in.wm) return false;
      in.wm = wm;
      return true;
    case signal_kind::barrier: {
      const auto id = static_cast<std::uint64_t>(wm);
      if (id <= in.barrier) return false;
      in.barrier = id;
      // every copy sends the barrier at the same place: a copy restored from it starts here
      in.barriers.push_back({id, at});
      return true;
    }
    case signal_kind::eos:
      in.ended = true;
      return true;
    case signal_kind::probe:  // loops run without replicas (refused in executable_graph)
      return leading;
    case signal_kind::idle:
    case signal_kind::active: {
      const bool idle = kind == signal_kind::idle;
      if (!leading || idle == in.idle) return false;
      in.idle = idle;
      return true;
    }
  }
  return false;
}

bool copy_filter::restart(std::uint32_t slot, std::uint64_t checkpoint) {
  auto& in = inputs_[input_of_[slot]];
  restarted_[slot] = {};
  for (const auto& [id, after] : in.barriers)
    if (id == checkpoint && !in.ended) {
      at_[slot] = after;
      deaf_[slot] = false;
      restarted_[slot] = {in.frontier, true, false};
      reached(slot);
      return true;
    }
  deaf_[slot] = true;
  return false;
}

/// A restored slot's catch-up ends once it got as far as its input was at the restart.
void copy_filter::reached(std::uint32_t slot) {
  auto& r = restarted_[slot];
  if (!r.waiting || at_[slot] < r.owed) return;
  r.waiting = false;
  r.reached = true;
}

bool copy_filter::caught_up(std::uint32_t slot) {
  return std::exchange(restarted_[slot].reached, false);
}

void copy_filter::trim(std::uint64_t id) {
  for (auto& in : inputs_)
    while (in.barriers.size() > 1 && in.barriers[1].first <= id) in.barriers.pop_front();
}

void input_merge::push(input_item item) {
  inputs_[item.input].items.push_back(std::move(item));
}

void input_merge::release(std::deque<input_item>& out) {
  for (;;) {
    logical_state* next = nullptr;
    bool aligning = false;
    for (auto& in : inputs_) {
      if (in.ended) continue;
      if (in.at_barrier) {
        aligning = true;
        continue;
      }
      if (!next || in.opened_by < next->opened_by) next = &in;  // ties: the lowest index
    }
    if (!next) {
      if (!aligning) return;  // every input ended
      // every input that has not ended handed out the barrier: the stage aligns on it
      for (auto& in : inputs_) in.at_barrier = false;
      continue;
    }
    if (next->items.empty()) return;  // the order must wait for this input
    auto item = std::move(next->items.front());
    next->items.pop_front();
    if (!item.batch) {
      switch (item.kind) {
        case signal_kind::watermark:
          next->opened_by = std::max(next->opened_by, item.wm);
          break;
        case signal_kind::barrier:
          next->at_barrier = true;
          break;
        case signal_kind::eos:
          next->ended = true;
          break;
        case signal_kind::idle:
        case signal_kind::active:
        case signal_kind::probe:
          break;
      }
    }
    out.push_back(std::move(item));
  }
}

}  // namespace tidemark::detail
