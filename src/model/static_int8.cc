#include "model/static_int8.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"

namespace reprise::model {

const char* ActivationPointName(ActivationPoint point) {
  switch (point) {
    case ActivationPoint::kAttnIn:
      return "attn_in";
    case ActivationPoint::kAttnOut:
      return "attn_out";
    case ActivationPoint::kFfnIn:
      return "ffn_in";
    case ActivationPoint::kFfnHidden:
      return "ffn_hidden";
  }
  return "?";
}

std::vector<ActivationQuant> PlanStaticInt8(const ActivationCalibration& calibration,
                                            const StaticInt8Options& options) {
  std::vector<ActivationQuant> plan;
  if (options.scheme == Int8Scheme::kPerBlock) return plan;
  const size_t num_points = calibration.channel_absmax.size();
  REPRISE_CHECK(num_points % kActivationPointsPerLayer == 0);
  plan.resize(num_points);
  // Outliers: every channel of every point, ranked by absmax / its point's median absmax.
  struct Candidate {
    float ratio;
    int32_t point, channel;
  };
  std::vector<Candidate> candidates;
  int64_t total_channels = 0;
  for (size_t p = 0; p < num_points; ++p) {
    const std::vector<float>& absmax = calibration.channel_absmax[p];
    total_channels += static_cast<int64_t>(absmax.size());
    if (options.scheme != Int8Scheme::kShadow || absmax.empty()) continue;
    std::vector<float> sorted = absmax;
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<ptrdiff_t>(sorted.size() / 2),
                     sorted.end());
    const float median = std::max(sorted[sorted.size() / 2], 1e-20f);
    for (size_t c = 0; c < absmax.size(); ++c) {
      candidates.push_back({absmax[c] / median, static_cast<int32_t>(p), static_cast<int32_t>(c)});
    }
  }
  const auto budget = static_cast<size_t>(std::floor(
      std::clamp(options.outlier_fraction, 0.0, 1.0) * static_cast<double>(total_channels) + 1e-9));
  if (budget > 0 && !candidates.empty()) {
    const size_t take = std::min(budget, candidates.size());
    // Largest ratios first; ties to the lower point and channel, so plans are reproducible.
    std::partial_sort(candidates.begin(), candidates.begin() + static_cast<ptrdiff_t>(take),
                      candidates.end(), [](const Candidate& a, const Candidate& b) {
                        if (a.ratio != b.ratio) return a.ratio > b.ratio;
                        if (a.point != b.point) return a.point < b.point;
                        return a.channel < b.channel;
                      });
    for (size_t i = 0; i < take; ++i) {
      plan[static_cast<size_t>(candidates[i].point)].outliers.push_back(candidates[i].channel);
    }
  }
  for (size_t p = 0; p < num_points; ++p) {
    ActivationQuant& quant = plan[p];
    std::sort(quant.outliers.begin(), quant.outliers.end());
    const std::vector<float>& absmax = calibration.channel_absmax[p];
    float range = 0.0f;
    size_t next_outlier = 0;
    for (size_t c = 0; c < absmax.size(); ++c) {
      if (next_outlier < quant.outliers.size() &&
          quant.outliers[next_outlier] == static_cast<int32_t>(c)) {
        ++next_outlier;
        continue;
      }
      range = std::max(range, absmax[c]);
    }
    // A tensor that was all zeros still needs a usable scale.
    quant.scale = range > 0.0f ? range / 127.0f : 1.0f;
  }
  return plan;
}

}  // namespace reprise::model
