// Totals that the dashboard and the progress line read from live snapshots: per operator summed
// over its instances, which stages are sources and sinks, late events and state bytes from the
// operators' extra counters.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tidemark/runtime/live.hpp"

namespace tidemark::observe::detail {

/// One operator of the plan with its counters summed over the instances that have answered.
struct operator_totals {
  std::uint32_t stage = 0;
  std::string name;
  std::string kind;
  std::uint64_t events_in = 0;
  std::uint64_t events_out = 0;
  /// Events behind the watermark: window operators' accepted plus dropped late events.
  std::uint64_t late_events = 0;
  /// Window state bytes in memory (`window_state_bytes`) and, for tiered state, on disk
  /// (`state_disk_bytes`); empty for operators that report none.
  std::optional<double> state_memory_bytes;
  std::optional<double> state_disk_bytes;
};

/// Every operator of the plan, stage by stage in the stage's order.
std::vector<operator_totals> per_operator(const live_snapshot& s);

/// Per stage: no edge enters it (its head is a source) / no edge leaves it (it ends in sinks).
std::vector<bool> source_stages(const live_plan& p);
std::vector<bool> sink_stages(const live_plan& p);

/// Events the sources emitted so far.
std::uint64_t source_events(const live_snapshot& s);
/// Late events over every operator.
std::uint64_t late_events(const live_snapshot& s);

/// The watermark of one stage instance: what it passed on or its inputs agreed on; a stage that
/// has neither (a whole job fused into one stage) falls back to the last watermark one of its
/// operators reports. start_of_time when there is none yet.
event_time instance_watermark(const instance_metrics& m);
/// The lowest watermark over the instances of `stages` (start_of_time when one has none yet or
/// when no instance answered).
event_time lowest_watermark(const live_snapshot& s, const std::vector<bool>& stages);

}  // namespace tidemark::observe::detail
