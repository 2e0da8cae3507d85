// Where each channel of a physical plan starts and ends (slots on both sides, per stage
// instance, with the copies of replicated instances), and the setup of one stage instance. Shared
// by the embedded runtime and by nodes, which build the same wiring from the same plan and
// replica counts so that channel numbers agree across processes.
#pragma once

#include <cstdint>
#include <vector>

#include <caf/actor_system_config.hpp>

#include "stage_actor.hpp"
#include "tidemark/core/job.hpp"
#include "tidemark/core/plan.hpp"
#include "tidemark/core/synchronizer.hpp"

namespace tidemark::detail {

/// Every copy of a stage instance (copy 0 is the primary, copies 1.. its replicas) runs the same
/// operators with the same slots: the layout below is per (stage, instance) and holds for each of
/// its copies.
struct wiring {
  struct endpoint {
    std::uint32_t stage;
    std::uint32_t instance;
    std::uint32_t copy = 0;  ///< 0: the primary
  };
  struct out_channel {
    endpoint to;
    /// The receiver's input slot for the sender's primary; the sender's copy c reaches slot + c
    /// (a receiver has one slot per copy of each upstream instance, side by side).
    std::uint32_t slot;
    std::uint32_t from_op;  ///< the sending operator (position in its stage)
    std::uint32_t port;     ///< and its output port
  };
  // per stage, per instance: input ports of its slots
  std::vector<std::vector<std::vector<std::uint32_t>>> input_ports;
  // per stage, per instance: the logical input of each slot (the copies of one upstream instance
  // share one)
  std::vector<std::vector<std::vector<std::uint32_t>>> logical_input;
  // per stage, per instance: per slot, where its sender runs relative to the stage's loop
  std::vector<std::vector<std::vector<loop_role>>> input_roles;
  // per stage, per instance: output channels and edges; edges name the slots to the receivers'
  // primaries, output_copies the slots to their replicas (per output slot)
  std::vector<std::vector<std::vector<out_channel>>> outputs;
  std::vector<std::vector<std::vector<output_edge>>> edges;
  std::vector<std::vector<std::vector<std::vector<std::uint32_t>>>> output_copies;
  // per stage, per instance: its copies (1: no replica)
  std::vector<std::vector<std::uint32_t>> copies;
};

/// The wiring of `p` where stage instance k (flat index, stages in plan order) has `replicas[k]`
/// replicas besides its primary (`replicas` empty or shorter: none).
wiring wire(const physical_plan& p, const std::vector<std::uint32_t>& replicas = {});

/// The graph a run executes: `j`'s graph validated (job_error names the problem, and what a loop
/// cannot run with yet), synchronizers inserted per `opts`. The embedded
/// runtime, the coordinator and every node derive their plans from it, so they agree.
synchronized_graph executable_graph(const job& j, const run_options& opts);

/// The setup of instance `i` of stage `s` with its operators created, without output targets and
/// driver (the caller connects those).
stage_setup make_stage_setup(const logical_graph& g, const physical_plan& p, const wiring& w,
                             std::uint32_t s, std::uint32_t i, const run_options& opts);

/// Scheduler settings of an actor system that runs stages.
void configure(caf::actor_system_config& cfg, const run_options& opts);

/// Prints the summary and writes the report as `opts` asks.
void publish(const job_result& result, const run_options& opts);

}  // namespace tidemark::detail
