// Seeded, platform-independent random numbers for the planner and the simulator: the same seed
// gives the same plan and the same estimate with any standard library.
#pragma once

#include <cstdint>

namespace tidemark::replication::detail {

/// SplitMix64 finalizer: a well-mixed 64-bit value from a 64-bit input.
inline std::uint64_t splitmix(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// A value determined by a seed and an index (e.g. an operator's random score).
inline std::uint64_t mix(std::uint64_t seed, std::uint64_t index) noexcept {
  return splitmix(splitmix(seed) ^ index);
}

/// Uniform in [0, 1) from 64 random bits.
inline double unit_interval(std::uint64_t bits) noexcept {
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

/// A sequential generator: SplitMix64 stepping through its state.
class rng {
 public:
  explicit rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() noexcept {
    std::uint64_t x = state_;
    state_ += 0x9e3779b97f4a7c15ULL;
    return splitmix(x);
  }
  double uniform() noexcept { return unit_interval(next()); }

 private:
  std::uint64_t state_;
};

}  // namespace tidemark::replication::detail
