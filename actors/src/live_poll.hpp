// Refreshes a live_view: a driver asks its stage actors for their counters every period, keeps
// the latest answer of each instance (and its final counters once done) and publishes them.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include <caf/actor.hpp>

#include "tidemark/runtime/live.hpp"

namespace tidemark::detail {

class live_poll {
 public:
  /// `view` may be null: then nothing is asked or published.
  live_poll(std::shared_ptr<live_view> view, live_plan plan, std::chrono::milliseconds period);

  /// When the period has passed, publishes what answered so far and asks every stage in `stages`
  /// again (the answers come to `driver` as live_metrics_msg). Returns how long until the next ask.
  std::chrono::milliseconds ask(const caf::actor& driver, const std::vector<caf::actor>& stages);
  /// Records the counters of one instance: an answer, or its final counters.
  void update(instance_metrics m);
  /// Records the latest counters of one cluster process (replacing its earlier ones).
  void update(node_status s);
  /// Publishes the counters recorded so far.
  void publish(bool finished);
  bool enabled() const noexcept { return view_ != nullptr; }

 private:
  using clock = std::chrono::steady_clock;
  std::shared_ptr<live_view> view_;
  std::shared_ptr<const live_plan> plan_;
  std::chrono::milliseconds period_;
  clock::time_point started_;
  clock::time_point next_;
  std::vector<instance_metrics> latest_;  // sorted by stage, instance
  std::vector<node_status> nodes_;        // in order of first report
};

}  // namespace tidemark::detail
