// The Aion workloads as registered jobs: aion-average, aion-bigrams, aion-stock and
// aion-linear-road, each with `--state memory|tiered --past-windows K --rate R` and the papers'
// event delay model (an event is late by max(0, round(X) - 1) windows, X ~ LogNormal(0, 1)).
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "tidemark/core/lateness.hpp"

#include "tidemark/runtime/job_registry.hpp"

namespace tidemark::aion {

/// The papers' delay model: windows an event is late by, seeded; draws above `max_windows`
/// (the past windows accepted, and the windows elapsed so far) are rejected and drawn again.
class delay_model {
 public:
  explicit delay_model(std::uint64_t seed) : rng_(seed) {}
  /// Windows late: max(0, round(X) - 1) with X ~ LogNormal(0, 1), at most `max_windows`.
  std::int64_t windows_late(std::int64_t max_windows);

 private:
  std::mt19937_64 rng_;
  std::lognormal_distribution<double> x_{0.0, 1.0};
};

/// Allowed lateness from its option text: `past-windows` (K windows of W ms), or any
/// parse_lateness spec (`fixed:MS`, `predictive:...`). Throws std::invalid_argument.
lateness parse_lateness_option(const std::string& spec, event_time window_ms, std::int64_t past_windows);

/// Registers aion-average, aion-bigrams, aion-stock and aion-linear-road.
void register_jobs(job_registry& registry);

}  // namespace tidemark::aion
