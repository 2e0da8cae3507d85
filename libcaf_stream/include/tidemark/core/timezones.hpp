// Timezone analysis (docs/timezones.md): a pure function over the logical graph that finds the
// areas downstream of potentially delayed operators and the edges a synchronizer must guard.
// Plan compilation (synchronizer.hpp) inserts the synchronizers; tests check the analysis alone.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tidemark/core/graph.hpp"

namespace tidemark {

/// An edge that enters a timezone: input `input` of node `to` reads from `from`.
struct timezone_input {
  node_id from = 0;
  node_id to = 0;
  std::uint32_t input = 0;
  bool feedback = false;  ///< a loop's feedback edge back into the timezone
  friend bool operator==(const timezone_input& a, const timezone_input& b) {
    return a.from == b.from && a.to == b.to && a.input == b.input && a.feedback == b.feedback;
  }
};

/// The area of the graph that must see one timestamp (or time slice) at a time because a
/// delayed operator upstream of it completes elements out of order.
struct timezone {
  std::uint32_t id = 0;
  node_id origin = 0;  ///< the delayed operator that causes it
  /// The origin sits on a cycle, so it belongs to its own timezone (patent fig. 4c).
  bool origin_inside = false;
  std::vector<node_id> members;        ///< ascending ids
  std::vector<timezone_input> inputs;  ///< every edge the synchronizer guards, by (to, input)
  /// The smallest timezone that contains this one's origin (nested timezones, fig. 4d).
  std::optional<std::uint32_t> parent;

  bool contains(node_id n) const;
};

/// One timezone per delayed operator, in node order: its downstream closure (including itself
/// when it is on a cycle), the edges into that closure from outside it plus the feedback edges
/// into it, and the enclosing timezone. Feedback edges are followed like any other edge.
std::vector<timezone> find_timezones(const logical_graph& g);

/// Readable summary, one timezone per line: origin, members, guarded inputs, parent.
std::string describe(const logical_graph& g, const std::vector<timezone>& zones);

}  // namespace tidemark
