// Llama 3 RoPE frequency scaling: the per-pair factors stored as `rope_freqs.weight`.
#pragma once

#include <vector>

namespace reprise::convert {

struct Llama3RopeScaling {
  float factor = 32.0f;
  float low_freq_factor = 1.0f;
  float high_freq_factor = 4.0f;
  int original_context_length = 8192;
};

// For each of the rope_dims / 2 frequencies theta^(-2i/rope_dims), the divisor Llama 3
// applies: 1 for short wavelengths, `factor` for long ones, a smooth blend in between.
std::vector<float> Llama3RopeFreqFactors(const Llama3RopeScaling& scaling, float theta,
                                         int rope_dims);

}  // namespace reprise::convert
