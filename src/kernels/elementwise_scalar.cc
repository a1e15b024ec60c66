// Scalar reference row kernels (elementwise.h, activation_quant.h) and the RoPE tables.

#include <cmath>
#include <cstring>

#include "base/check.h"
#include "base/float16.h"
#include "kernels/activation_quant.h"
#include "kernels/kernel_impl.h"

namespace reprise::kernels {

void RopeInverseFrequencies(float theta, int64_t rot_dim, const float* factors, float freq_scale,
                            float* inv_freq) {
  REPRISE_DCHECK(rot_dim > 0 && rot_dim % 2 == 0);
  for (int64_t i = 0; i < rot_dim / 2; ++i) {
    double value = std::pow(static_cast<double>(theta),
                            -2.0 * static_cast<double>(i) / static_cast<double>(rot_dim));
    value *= freq_scale;
    if (factors != nullptr) value /= factors[i];
    inv_freq[i] = static_cast<float>(value);
  }
}

void RopeCosSin(int32_t position, const float* inv_freq, int64_t num_pairs, float* cos,
                float* sin) {
  for (int64_t i = 0; i < num_pairs; ++i) {
    const double angle = static_cast<double>(position) * static_cast<double>(inv_freq[i]);
    cos[i] = static_cast<float>(std::cos(angle));
    sin[i] = static_cast<float>(std::sin(angle));
  }
}

namespace scalar {
namespace {

// The quantization of one 32-value block, shared by QuantizeRow and RmsNormQuantize. The
// AVX2 version computes the same d and the same products, and rounds the same way (to
// nearest even), so both give identical bytes.
void QuantizeBlock(const float* x, int8_t* q, float* d_out, int32_t* sum_out) {
  float amax = 0.0f;
  for (int j = 0; j < kActivationBlock; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  int32_t sum = 0;
  for (int j = 0; j < kActivationBlock; ++j) {
    const int value = static_cast<int>(std::nearbyint(x[j] * id));
    q[j] = static_cast<int8_t>(value);
    sum += value;
  }
  *d_out = d;
  *sum_out = sum;
}

float InverseRms(const float* x, int64_t k, float eps) {
  float sum = 0.0f;
  for (int64_t i = 0; i < k; ++i) sum += x[i] * x[i];
  return 1.0f / std::sqrt(sum / static_cast<float>(k) + eps);
}

}  // namespace

void StaticQuantizeRow(const float* x, int64_t k, float inv_scale, int8_t* dst) {
  for (int64_t i = 0; i < k; ++i) {
    const float v = std::fmin(std::fmax(x[i] * inv_scale, -127.0f), 127.0f);
    dst[i] = static_cast<int8_t>(std::nearbyint(v));
  }
}

void QuantizeRow(const float* x, int64_t k, uint8_t* dst) {
  REPRISE_DCHECK(k % kActivationBlock == 0);
  const int64_t num_blocks = k / kActivationBlock;
  for (int64_t b = 0; b < num_blocks; ++b) {
    float d;
    int32_t sum;
    QuantizeBlock(x + b * kActivationBlock, reinterpret_cast<int8_t*>(dst) + b * kActivationBlock,
                  &d, &sum);
    std::memcpy(dst + k + 4 * b, &d, sizeof(d));
    std::memcpy(dst + k + 4 * num_blocks + 4 * b, &sum, sizeof(sum));
  }
}

void RmsNorm(const float* x, const float* weight, int64_t k, float eps, float* out) {
  const float inv = InverseRms(x, k, eps);
  for (int64_t i = 0; i < k; ++i) out[i] = x[i] * inv * weight[i];
}

void RmsNormQuantize(const float* x, const float* weight, int64_t k, float eps, uint8_t* dst) {
  REPRISE_DCHECK(k % kActivationBlock == 0);
  const float inv = InverseRms(x, k, eps);
  const int64_t num_blocks = k / kActivationBlock;
  for (int64_t b = 0; b < num_blocks; ++b) {
    float normed[kActivationBlock];
    for (int j = 0; j < kActivationBlock; ++j) {
      const int64_t i = b * kActivationBlock + j;
      normed[j] = x[i] * inv * weight[i];
    }
    float d;
    int32_t sum;
    QuantizeBlock(normed, reinterpret_cast<int8_t*>(dst) + b * kActivationBlock, &d, &sum);
    std::memcpy(dst + k + 4 * b, &d, sizeof(d));
    std::memcpy(dst + k + 4 * num_blocks + 4 * b, &sum, sizeof(sum));
  }
}

void Rope(float* x, int64_t num_heads, int64_t head_stride, int64_t rot_dim, const float* cos,
          const float* sin, RopeStyle style) {
  REPRISE_DCHECK(rot_dim % 2 == 0);
  const int64_t half = rot_dim / 2;
  for (int64_t h = 0; h < num_heads; ++h) {
    float* head = x + h * head_stride;
    for (int64_t i = 0; i < half; ++i) {
      const int64_t i0 = style == RopeStyle::kInterleaved ? 2 * i : i;
      const int64_t i1 = style == RopeStyle::kInterleaved ? 2 * i + 1 : i + half;
      const float a = head[i0];
      const float b = head[i1];
      head[i0] = a * cos[i] - b * sin[i];
      head[i1] = a * sin[i] + b * cos[i];
    }
  }
}

void SiluMul(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void Softmax(float* x, int64_t n) {
  float max = x[0];
  for (int64_t i = 1; i < n; ++i) max = std::fmax(max, x[i]);
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void Add(const float* a, const float* b, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void F32ToF16Row(const float* x, int64_t n, uint16_t* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = F32ToF16(x[i]);
}

void F16ToF32Row(const uint16_t* x, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = F16ToF32(x[i]);
}

}  // namespace scalar
}  // namespace reprise::kernels
