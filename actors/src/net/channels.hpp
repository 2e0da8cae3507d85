// The channels of a deployed plan, numbered the same way in every process (stages in plan order,
// instances in order, copies in order, output slots in order), and the check that every channel
// crossing a process boundary carries a type with a codec.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../deploy.hpp"
#include "../wiring.hpp"
#include "tidemark/core/codec.hpp"

namespace tidemark::net {

struct channel {
  std::uint32_t from_stage, from_instance, out_slot;
  std::uint32_t to_stage, to_instance, in_slot;
  std::uint32_t from_copy, to_copy;  ///< 0: the primary (replicas: 1, 2, ...)
  const logical_node* producer;  ///< the operator of the sending stage the channel reads
  std::uint32_t port;            ///< and the output port it reads
  /// What the channel carries: value type and codec.
  const output_port& output() const { return producer->outputs.at(port); }
};

std::vector<channel> enumerate_channels(const logical_graph& g, const physical_plan& p,
                                        const detail::wiring& w);

/// Index of the first instance of each stage in the flat list of stage instances.
std::vector<std::uint32_t> instance_offsets(const physical_plan& p);

/// Throws job_error when a channel between two nodes carries a type without tidemark::codec,
/// naming the operator, the type and the nodes.
void check_codecs(const std::vector<channel>& chans, const std::vector<std::uint32_t>& offsets,
                  const detail::placement& placement, const std::vector<std::string>& ids);

}  // namespace tidemark::net
