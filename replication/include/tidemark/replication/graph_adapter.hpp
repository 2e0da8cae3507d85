// Builds the replication model of a job: from its logical graph plus per-operator cost and
// selectivity annotations, from a run's or a running job's measured counters, or from the JSON
// graph format that `tidemark replication plan` reads.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tidemark/core/graph.hpp"
#include "tidemark/core/metrics.hpp"
#include "tidemark/core/plan.hpp"
#include "tidemark/replication/model.hpp"

namespace tidemark::replication {

/// What the planner needs to know about one logical operator beyond the graph. Rates, loads and
/// traffic are for the whole operator and split evenly over its parallel instances.
struct operator_annotation {
  double source_rate = 0;  ///< events/s, sources only
  double cost = 0;         ///< CPU per input event, in host-capacity seconds
  double selectivity = 1;
  double bytes_in = 0;
  double bytes_out = 0;
  std::optional<double> measured_input_rate;
  std::optional<double> measured_load;
  /// Host name of each instance's primary; empty to let place_primaries decide.
  std::vector<std::string> hosts;
};

/// Annotations measured by a run of the job (tidemark::run's result): per operator name the
/// source rate (sources) or input rate, the selectivity (events out / events in) and the load,
/// in cores: busy time / run time. A fused stage reports one busy time for its whole chain; it
/// is shared among the chain's operators in proportion to the events each handled (input events,
/// output events for a source). Give hosts their CPU capacity in cores to match.
std::map<std::string, operator_annotation> measured_annotations(const job_result& r);

/// The same annotations over an interval of a running job: the counters of every stage instance
/// at its start (`before`; an instance missing there counts from zero) and at its end (`after`),
/// `seconds` apart. Throws model_error when `seconds` is not positive.
std::map<std::string, operator_annotation> measured_annotations(
    const std::vector<instance_metrics>& before, const std::vector<instance_metrics>& after,
    double seconds);

/// Two live snapshots of a running job and where its stage instances ran.
struct live_measurement {
  std::vector<instance_metrics> before;
  std::vector<instance_metrics> after;
  double seconds = 0;  ///< between the two
  /// The node of every stage instance, by stage then instance (empty when unknown).
  std::vector<std::vector<std::string>> node_of;
};

/// A model measured on a running job, and where each of its operators was measured.
struct live_model {
  replication_model model;
  /// Per model operator: the node its instance ran on ("" when unknown).
  std::vector<std::string> measured_on;
  /// True when the primaries are where they were measured; false when every measured node is
  /// not one of the hosts (an embedded run) and place_primaries placed them.
  bool measured_placement = false;
};

/// The model of `g` (the graph that ran, synchronizer gates included) on `hosts` from the
/// interval between two live snapshots: loads, input rates and selectivities as
/// measured_annotations, one query per sink node as model_from_graph. When every operator
/// instance ran on a node that `hosts` names, that node is its primary's host; otherwise the
/// primaries are placed by place_primaries. Throws model_error as model_from_graph, or when the
/// snapshots name an operator the graph does not have.
live_model model_from_live(const logical_graph& g, const live_measurement& m,
                           std::vector<host_info> hosts);

/// The model of `g` on `hosts`. Each instance of a node becomes one operator ("name" when the
/// parallelism is 1, "name[i]" otherwise); a forward edge between equal parallelisms links
/// instance i to instance i, a broadcast edge gives every consumer instance the whole stream,
/// any other edge splits the stream evenly. Each sink node defines one query. Loads follow
/// apply_load_model. Either every operator names its hosts or none does (then the primaries
/// are placed by place_primaries). Throws model_error naming the operator at fault when the
/// graph is invalid, an annotation names an unknown operator or host, or the result does not
/// validate.
replication_model model_from_graph(const logical_graph& g,
                                   const std::map<std::string, operator_annotation>& annotations,
                                   std::vector<host_info> hosts);

/// The model of the compiled plan `p` of `g` as a cluster runs it: one operator per stage
/// instance (a stage's operators run in one actor, so they are copied together), named after
/// the stage's head ("name" or "name[i]"), with the load `instance_load` gives it (per stage
/// instance, flat in plan order, in the hosts' CPU units) on host `primary` (same order). A
/// stage holding a source or a sink is not replicable. Each sink node defines one query: the
/// instances of its stage and everything upstream. Throws model_error when the sizes do not
/// match the plan or the result does not validate.
replication_model model_from_plan(const logical_graph& g, const physical_plan& p,
                                  const std::vector<double>& instance_load,
                                  std::vector<host_info> hosts,
                                  const std::vector<host_index>& primary);

/// Parses the JSON graph format (docs/replication.md):
///   {"hosts": [{"name": "a", "cpu": 1, "network": 1e8}, ...] or {"count": 4, "cpu": 1},
///    "operators": [{"name": "src", "rate": 1000, "cost": 1e-4, ...},
///                  {"name": "f", "inputs": ["src"], "selectivity": 0.5, ...}, ...]}
/// `origin` (a file name) prefixes every error message. Throws model_error on malformed JSON,
/// unknown or mistyped fields, or a graph that model_from_graph rejects.
replication_model model_from_json(const std::string& text, const std::string& origin);

}  // namespace tidemark::replication
