// The replication planner's view of a running system: operators with their load, the queries
// (one per sink) that depend on them, hosts with CPU and network capacity, and where each
// operator's primary instance runs. Loads come from measurements or from the Borealis load model.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tidemark::replication {

using op_index = std::uint32_t;
using host_index = std::uint32_t;

/// A model that cannot be planned: the message names the operator, host or query at fault.
class model_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One input stream of an operator.
struct input_edge {
  op_index from = 0;
  /// Fraction of `from`'s output that reaches this operator: 1 for a whole stream, 1/n when the
  /// stream is split over n parallel instances.
  double share = 1.0;
};

struct operator_info {
  std::string name;
  std::vector<input_edge> inputs;  ///< empty for a source
  /// Events per second a source emits (used only by operators without inputs).
  double source_rate = 0;
  /// CPU per input event, in host-capacity seconds: load = cost * input rate.
  double cost = 0;
  /// Output events per input event.
  double selectivity = 1;
  double bytes_in = 0;   ///< bytes per input event
  double bytes_out = 0;  ///< bytes per output event
  /// Runtime measurements; when set they replace the load model's estimate.
  std::optional<double> measured_input_rate;
  std::optional<double> measured_load;
  /// False for an operator that cannot run as an active copy (the runtime copies no stage that
  /// holds a source or a sink); selection never gives it a replica.
  bool replicable = true;

  // Filled by apply_load_model.
  double input_rate = 0;   ///< events/s
  double output_rate = 0;  ///< events/s
  double load = 0;         ///< CPU, in host-capacity units
  double net_in = 0;       ///< bytes/s
  double net_out = 0;      ///< bytes/s
  double net() const noexcept { return net_in + net_out; }
};

struct host_info {
  std::string name;
  double cpu_capacity = 1.0;
  double net_capacity = std::numeric_limits<double>::infinity();  ///< bytes/s
};

/// The operators one sink depends on: the sink and everything upstream of it.
struct query {
  std::string name;
  std::vector<op_index> operators;  ///< ascending, no duplicates
};

struct replication_model {
  std::vector<operator_info> operators;  ///< every operator follows the operators it reads
  std::vector<query> queries;
  std::vector<host_info> hosts;
  std::vector<host_index> primary;  ///< host of each operator's primary instance
  /// Hosts of the replicas already running, per operator (empty: none yet). The planner keeps
  /// them and plans only additional ones.
  std::vector<std::vector<host_index>> replicas;
};

/// Returns the first problem of the model (bad input order, unknown host, negative cost,
/// empty query, ...) as a message naming what and where, or nullopt when it can be planned.
std::optional<std::string> validate(const replication_model& m);

/// Fills input_rate, output_rate, load, net_in and net_out of every operator. Rates are linear
/// combinations of source rates and upstream selectivities; a measured input rate replaces the
/// estimate from that operator on downstream, a measured load replaces cost * rate.
void apply_load_model(replication_model& m);

/// The query named `name` made of `sinks` and every operator upstream of them.
query upstream_query(const std::vector<operator_info>& ops, const std::vector<op_index>& sinks,
                     std::string name);

/// One query per operator that no other operator reads, named after it.
std::vector<query> queries_from_sinks(const std::vector<operator_info>& ops);

/// For each operator, the operators reading from it.
std::vector<std::vector<op_index>> consumers(const std::vector<operator_info>& ops);

/// Number of queries each operator belongs to.
std::vector<std::uint32_t> query_degree(const replication_model& m);

/// Places every primary instance: heaviest first, each on the host with the lowest relative CPU
/// use (ties to the lower index). Network capacity is not considered.
void place_primaries(replication_model& m);

/// Sum of the operators' loads.
double total_load(const replication_model& m);

}  // namespace tidemark::replication
