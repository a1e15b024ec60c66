#include "convert/rope_scaling.h"

#include <cmath>

namespace reprise::convert {

std::vector<float> Llama3RopeFreqFactors(const Llama3RopeScaling& scaling, float theta,
                                         int rope_dims) {
  const double low_freq_wavelen = scaling.original_context_length / scaling.low_freq_factor;
  const double high_freq_wavelen = scaling.original_context_length / scaling.high_freq_factor;
  std::vector<float> factors(static_cast<size_t>(rope_dims / 2));
  for (int i = 0; i < rope_dims / 2; ++i) {
    const double freq = std::pow(static_cast<double>(theta), -2.0 * i / rope_dims);
    const double wavelen = 2.0 * M_PI / freq;
    double factor;
    if (wavelen < high_freq_wavelen) {
      factor = 1.0;
    } else if (wavelen > low_freq_wavelen) {
      factor = scaling.factor;
    } else {
      const double smooth = (scaling.original_context_length / wavelen - scaling.low_freq_factor) /
                            (scaling.high_freq_factor - scaling.low_freq_factor);
      factor = 1.0 / ((1.0 - smooth) / scaling.factor + smooth);
    }
    factors[static_cast<size_t>(i)] = static_cast<float>(factor);
  }
  return factors;
}

}  // namespace reprise::convert
