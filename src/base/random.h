// A small deterministic pseudo-random generator (xoshiro256**), seeded by splitmix64.
//
// Used where results must be reproducible from a seed on every platform: synthetic model
// weights, sampling, tests. Thread-compatible.
#pragma once

#include <cstdint>

namespace reprise {

class Random {
 public:
  explicit Random(uint64_t seed) {
    for (uint64_t& s : state_) s = SplitMix64(seed);
  }

  uint64_t NextU64() {
    const uint64_t result = Rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = Rotl(state_[3], 45);
    return result;
  }

  // Uniform in [0, 1).
  double NextDouble() { return static_cast<double>(NextU64() >> 11) * 0x1.0p-53; }
  float NextFloat() { return static_cast<float>(NextU64() >> 40) * 0x1.0p-24f; }

  // Uniform in [0, bound). Requires: bound > 0.
  uint64_t NextBelow(uint64_t bound) { return NextU64() % bound; }

  // Standard normal (Box-Muller).
  double NextGaussian();

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static uint64_t SplitMix64(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  uint64_t state_[4];
};

}  // namespace reprise
