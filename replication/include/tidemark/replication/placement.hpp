// Replica placement: replica-aware bin packing of replicas onto hosts, either one replica at a
// time as selection accepts them (replica_packer) or for a finished selection (place_replicas).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tidemark/replication/model.hpp"

namespace tidemark::replication {

enum class placement_strategy {
  /// First fit into hosts ordered by neighbour factor.
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
  std::uint64_t seed = 1;  ///< orders equal importances (place_replicas)
};

/// Hosts with what is left of their CPU and network after the primaries and the replicas placed
/// so far. A replica goes to a host that (1) holds no instance of its operator, primary
/// included, (2) has CPU left for its load and (3) network capacity left for its traffic
/// (net_in + net_out), (4) meets the colour limit when asked. Among those, it takes the host
/// with the most instances of its upstream and downstream operators (the neighbour factor), the
/// lowest index on a tie.
class replica_packer {
 public:
  /// `existing` replicas (empty: none) stay where they are and count like placed ones.
  replica_packer(const replication_model& m, const placement_options& opts,
                 const std::vector<std::vector<host_index>>& existing = {});

  /// Places one more replica of each operator in `ops` (an operator may appear several times),
  /// in order: all of them, or none when one fits no host. Returns whether it placed them.
  bool place(const std::vector<op_index>& ops);

  /// Hosts of each operator's replicas, existing ones first.
  std::vector<std::vector<host_index>> replicas() const;
  /// Replicas that place() could not find a host for.
  std::size_t rejected() const noexcept { return rejected_; }

 private:
  void take(op_index i, host_index h);
  void give_back(op_index i);
  bool fits(op_index i, host_index h) const;

  const replication_model& m_;
  placement_options opts_;
  std::vector<double> cpu_free_;
  std::vector<double> net_free_;
  std::vector<std::vector<host_index>> instances_;  // primary first, then replicas
  std::vector<std::vector<op_index>> neighbours_;
  std::vector<std::vector<std::uint32_t>> member_of_;  // queries; only for colour constraints
  std::vector<std::unordered_map<std::uint32_t, std::uint32_t>> colour_count_;  // per host
  std::vector<std::uint32_t> score_;
  std::size_t rejected_ = 0;
};

/// Places `levels[i]` replicas of each operator i after the `existing` ones, operators by
/// decreasing importance, as a packer would; a replica that fits no host is left out, so the
/// result may hold fewer replicas than `levels` asked for.
std::vector<std::vector<host_index>> place_replicas(
  const replication_model& m, const std::vector<std::uint32_t>& levels,
  const std::vector<double>& op_importance, const placement_options& opts,
  const std::vector<std::vector<host_index>>& existing = {});

}  // namespace tidemark::replication
