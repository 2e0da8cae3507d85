// What happens to a stage's input before its operators see it, when replication asks for more
// than arrival order: duplicate suppression over replica copies of one upstream instance, and the
// deterministic merge of several logical inputs (docs/replication.md). Pure logic, no CAF.
#pragma once

#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "tidemark/core/batch.hpp"
#include "tidemark/core/operator.hpp"

namespace tidemark::detail {

/// What travels on a channel besides batches. A barrier's watermark field is its checkpoint id; a
/// probe goes around a loop (docs/timezones.md, "Loops at run time") and its watermark field
/// carries the lowest event time the loop may still hold.
enum class signal_kind : std::uint8_t { watermark, idle, active, eos, barrier, probe };

/// One item that arrived on an input slot: a batch, or a signal when `batch` is null.
struct input_item {
  std::uint32_t slot = 0;   ///< the physical input slot (its sender gets the credit back)
  std::uint32_t input = 0;  ///< the logical input: the slot, or the input its copies feed
  batch_ptr batch;
  signal_kind kind = signal_kind::watermark;
  event_time wm = 0;
  /// false: restored from an unaligned checkpoint, so no sender waits for its credit.
  bool credited = true;
};

/// Duplicate suppression for logical inputs fed by several copies of one upstream instance (its
/// primary and replicas), each on its own FIFO, lossless slot. Copies send the same element
/// sequence, so a batch of n elements on a slot that received e elements before covers positions
/// [e, e+n) of the logical stream: the filter passes what lies beyond the furthest copy (the
/// frontier) and drops the rest. Signals:
/// - a watermark passes when it is above the input's last one (safe from any copy: every copy
///   announces the same elements, so a copy's watermark holds for the logical stream);
/// - a barrier passes once per checkpoint id, an end-of-stream once (the input is then over and
///   everything later is dropped);
/// - idle/active pass only from the copy at the frontier (counting the signals since its last
///   element), and only when they change the input's state: a lagging copy's repeated idle would
///   otherwise mark an active input idle again.
/// A copy restored mid-run from a checkpoint (docs/replication.md, "Restoring the replication
/// level") sends the sequence from that checkpoint's barrier on: the filter keeps, per logical
/// input, the position right after each barrier not yet trimmed, and restart() puts the slot there.
class copy_filter {
 public:
  /// `logical_input[s]` is the logical input slot s feeds (values below `inputs`); the channels
  /// start at the state of checkpoint `start` (0: the beginning).
  copy_filter(const std::vector<std::uint32_t>& logical_input, std::size_t inputs,
              std::uint64_t start = 0);

  /// The part of `b` (arrived on `slot`) that no copy delivered before; null when there is none.
  batch_ptr accept(std::uint32_t slot, batch_ptr b);
  /// Whether a signal that arrived on `slot` is new for its logical input.
  bool accept(std::uint32_t slot, signal_kind kind, event_time wm);

  /// `slot` now carries a copy restored from checkpoint `checkpoint`: its sequence starts where
  /// its logical input stood right after that checkpoint's barrier. False when that place is not
  /// known (trimmed, or the input ended): then everything on the slot is dropped.
  bool restart(std::uint32_t slot, std::uint64_t checkpoint);
  /// Once per restart: the restored copy on `slot` reached where its logical input stood at the
  /// restart (it delivered again everything the input had then).
  bool caught_up(std::uint32_t slot);
  /// Checkpoint `id` completed: no copy will be restored from an older one.
  void trim(std::uint64_t id);

 private:
  /// A place in a stream: elements before it, then signals since the last of them.
  struct position {
    std::uint64_t elements = 0;
    std::uint64_t signals = 0;
    bool operator<(const position& o) const {
      return elements != o.elements ? elements < o.elements : signals < o.signals;
    }
    bool operator==(const position& o) const {
      return elements == o.elements && signals == o.signals;
    }
  };
  struct logical_state {
    position frontier;  // the furthest any copy got
    event_time wm = start_of_time;
    std::uint64_t barrier = 0;  // the last barrier id passed
    bool idle = false;
    bool ended = false;
    // the position right after each barrier passed that a copy may still be restored from
    std::deque<std::pair<std::uint64_t, position>> barriers;
  };
  /// A restored slot's catch-up: where its input stood at the restart.
  struct catch_up {
    position owed;
    bool waiting = false;  // not reached yet
    bool reached = false;  // reached, not reported yet
  };
  void reached(std::uint32_t slot);
  std::vector<std::uint32_t> input_of_;  // per slot
  std::vector<position> at_;             // per slot: how far that copy got
  std::vector<bool> deaf_;               // per slot: a restart failed, everything is dropped
  std::vector<catch_up> restarted_;      // per slot
  std::vector<logical_state> inputs_;
  std::vector<std::uint32_t> targets_;  // scratch for trimming
};

/// The deterministic merge (in the spirit of Borealis's SUnion): the order in which the operators
/// see the items of several logical inputs depends only on each input's own item sequence, never
/// on arrival timing. Each input's stream is cut into epochs by its watermarks; the merge hands
/// out the epoch of the input whose current epoch was opened by the lowest watermark (ties: the
/// lowest input index; an input before its first watermark counts as the start of time), item by
/// item as they arrive, until that epoch's closing watermark; then it chooses again. Epochs are
/// ordered by the watermark that opened them, which is known when the epoch starts, so an epoch
/// streams through and is never buffered whole (an epoch longer than the credit window would
/// otherwise deadlock its sender). Inputs that ended drop out. An input whose checkpoint barrier
/// was handed out waits until every input that has not ended handed out that barrier, so the
/// stage's aligned checkpoint captures the same state wherever the merge runs. Idle inputs still
/// hold the merge (when an idle input resumes cannot be ordered against other inputs' items):
/// every input of a merged stage needs watermarks, or ends.
class input_merge {
 public:
  explicit input_merge(std::size_t inputs) : inputs_(inputs) {}

  /// Queues an item of logical input `item.input`.
  void push(input_item item);
  /// Moves every item that may go to the operators now, in merge order, to the end of `out`.
  void release(std::deque<input_item>& out);

 private:
  struct logical_state {
    std::deque<input_item> items;
    event_time opened_by = start_of_time;  // the watermark that opened the current epoch
    bool at_barrier = false;
    bool ended = false;
  };
  std::vector<logical_state> inputs_;
};

}  // namespace tidemark::detail
