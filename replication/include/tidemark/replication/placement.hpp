// Replica placement: replica-aware bin packing of the selected replicas onto hosts.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "tidemark/replication/model.hpp"

namespace tidemark::replication {

enum class placement_strategy {
  /// First fit by decreasing importance into hosts ordered by neighbour factor.
  bin_packing,
  /// bin_packing plus colour constraints: the colours of a replica are the queries it belongs
  /// to, and a host takes at most `colour_limit` replicas of one colour, so one host crash
  /// takes few replicas of any query.
  colour_constrained,
};

const char* to_string(placement_strategy p) noexcept;
/// Parses "bin-packing" or "colour".
std::optional<placement_strategy> parse_placement(std::string_view s);

struct placement_options {
  placement_strategy strategy = placement_strategy::bin_packing;
  std::uint32_t colour_limit = 1;
  std::uint64_t seed = 1;  ///< orders equal importances
};

/// Hosts of the replicas of each operator, placed by decreasing importance. A replica goes to a
/// host that (1) holds no instance of its operator, primary included, (2) has CPU left for its
/// load and (3) network capacity left for its traffic (net_in + net_out) after the primaries and
/// the replicas placed before it, (4) meets the colour limit when asked. Among those, it takes
/// the host with the most instances of its upstream and downstream operators (the neighbour
/// factor), the lowest index on a tie. A replica that fits nowhere is left out, so a result may
/// hold fewer replicas than `levels` asked for.
std::vector<std::vector<host_index>> place_replicas(const replication_model& m,
                                                    const std::vector<std::uint32_t>& levels,
                                                    const std::vector<double>& op_importance,
                                                    const placement_options& opts);

}  // namespace tidemark::replication
