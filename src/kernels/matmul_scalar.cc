// Scalar reference matmul over the packed layouts. It performs the same float operations in
// the same order as the AVX2 kernels (an exact int32 dot per block, then one fused
// multiply-add per block, or one per column for float weights; for kI8x8 one exact int32 dot
// over the row and one product), so the two agree to the bit and tests can compare them
// tightly.

#include <cmath>
#include <cstring>

#include "base/check.h"
#include "base/float16.h"
#include "kernels/activation_quant.h"
#include "kernels/kernel_impl.h"
#include "kernels/quant_blocks.h"

namespace reprise::kernels::scalar {
namespace {

constexpr int64_t kQ8GroupBlockBytes = kPackRows * 2 + kPackRows * kQK;
constexpr int64_t kQ4GroupBlockBytes = kPackRows * 2 + kPackRows * kQK / 2;
constexpr int64_t kQ4KSuperHeaderBytes = kPackRows * 4;

float HalfAt(const uint8_t* p, int64_t index) {
  uint16_t bits;
  std::memcpy(&bits, p + 2 * index, sizeof(bits));
  return F16ToF32(bits);
}

float DotQ8(const PackedMatrix& w, int64_t n, const QuantizedRowView& a) {
  const uint8_t* group = w.group(n / kPackRows);
  const int64_t r = n % kPackRows;
  float acc = 0.0f;
  for (int64_t b = 0; b < w.cols / kQK; ++b) {
    const uint8_t* block = group + b * kQ8GroupBlockBytes;
    const int8_t* q = reinterpret_cast<const int8_t*>(block + 2 * kPackRows);
    const int8_t* qa = a.q + b * kQK;
    int32_t isum = 0;
    for (int c = 0; c < 8; ++c) {
      for (int i = 0; i < 4; ++i) isum += q[(c * kPackRows + r) * 4 + i] * qa[4 * c + i];
    }
    acc = std::fma(static_cast<float>(isum), HalfAt(block, r) * a.scale(b), acc);
  }
  return acc;
}

// The exact dot of row r's 32 nibbles of a Q4_0x8 / Q4_Kx8 block (bytes at q) with the
// block's 32 activations.
int32_t NibbleDot(const uint8_t* q, int64_t r, const int8_t* qa) {
  int32_t isum = 0;
  for (int p = 0; p < 4; ++p) {
    for (int i = 0; i < 4; ++i) {
      const uint8_t byte = q[(p * kPackRows + r) * 4 + i];
      isum += (byte & 0xf) * qa[4 * p + i] + (byte >> 4) * qa[16 + 4 * p + i];
    }
  }
  return isum;
}

float DotQ4(const PackedMatrix& w, int64_t n, const QuantizedRowView& a) {
  const uint8_t* group = w.group(n / kPackRows);
  const int64_t r = n % kPackRows;
  float acc = 0.0f;
  for (int64_t b = 0; b < w.cols / kQK; ++b) {
    const uint8_t* block = group + b * kQ4GroupBlockBytes;
    const uint8_t* q = block + 2 * kPackRows;
    const int8_t* qa = a.q + b * kQK;
    const int32_t isum = NibbleDot(q, r, qa) - 8 * a.sum(b);  // the nibbles are value + 8
    acc = std::fma(static_cast<float>(isum), HalfAt(block, r) * a.scale(b), acc);
  }
  return acc;
}

// kQ4_Kx8: a value is d * q - min with d = d_super * scale and min = dmin_super * min_6bit
// per block, so sum(a * value) = d * sum(a * q) - min * sum(a): the exact int32 dot of nibbles
// and activations scaled by d * d_a, then min times d_a * sum(a) subtracted, one FMA each.
// kQ5_Kx8 (kQ5): the same with q = nibble + 16 * fifth bit (0..31).
template <bool kQ5>
float DotAffineK(const PackedMatrix& w, int64_t n, const QuantizedRowView& a) {
  const uint8_t* group = w.group(n / kPackRows);
  const int64_t r = n % kPackRows;
  float acc = 0.0f;
  for (int64_t b = 0; b < w.cols / kQK; ++b) {
    const uint8_t* header = group + b / 8 * kQ4KSuperHeaderBytes;
    const uint8_t* block =
        kQ5 ? group + Q5BlockOffset(w.cols, b)
            : group + w.cols / kQK_K * kQ4KSuperHeaderBytes + b * kQ4GroupBlockBytes;
    const int8_t* qa = a.q + b * kQK;
    int32_t isum = NibbleDot(block + 2 * kPackRows, r, qa);
    if constexpr (kQ5) {
      for (int i = 0; i < 4; ++i) {
        const uint8_t fifth = block[kQ5HighOffset + 4 * r + i];
        for (int p = 0; p < 4; ++p) {
          isum += 16 * ((fifth >> (2 * p) & 1) * qa[4 * p + i] +
                        (fifth >> (2 * p + 1) & 1) * qa[16 + 4 * p + i]);
        }
      }
    }
    const float d = HalfAt(header, r) * static_cast<float>(block[r]);
    const float min = HalfAt(header, kPackRows + r) * static_cast<float>(block[kPackRows + r]);
    const float da = a.scale(b);
    acc = std::fma(static_cast<float>(isum), d * da, acc);
    acc = std::fma(-min, da * static_cast<float>(a.sum(b)), acc);
  }
  return acc;
}

// kQ6_Kx8: a value is d * scale_h * (q - 32) with an int8 scale per 16 columns, so per block
// isum = scale_0 * sum_0((q - 32) a) + scale_1 * sum_1((q - 32) a), exact in int32 (and in a
// float: |isum| <= 2 * 128 * 16 * 32 * 127 < 2^24), scaled by d * d_a with one FMA.
float DotQ6K(const PackedMatrix& w, int64_t n, const QuantizedRowView& a) {
  const uint8_t* group = w.group(n / kPackRows);
  const int64_t r = n % kPackRows;
  float acc = 0.0f;
  for (int64_t b = 0; b < w.cols / kQK; ++b) {
    const uint8_t* block = group + Q6BlockOffset(w.cols, b);
    const uint8_t* high = block + kQ6HighOffset;
    const int8_t* qa = a.q + b * kQK;
    int32_t half_sum[2] = {0, 0};
    for (int p = 0; p < 4; ++p) {
      for (int i = 0; i < 4; ++i) {
        const uint8_t low = block[kQ6LowOffset + (p * kPackRows + r) * 4 + i];
        const uint8_t top = high[32 * (p / 2) + 4 * r + i] >> (4 * (p % 2));
        const int q0 = (low & 0xf) | (top & 3) << 4;
        const int q1 = (low >> 4) | (top >> 2 & 3) << 4;
        half_sum[0] += (q0 - 32) * qa[4 * p + i];
        half_sum[1] += (q1 - 32) * qa[16 + 4 * p + i];
      }
    }
    const int32_t isum = static_cast<int8_t>(block[r]) * half_sum[0] +
                         static_cast<int8_t>(block[kPackRows + r]) * half_sum[1];
    const float d = HalfAt(group + b / 8 * kQ6SuperHeaderBytes, r);
    acc = std::fma(static_cast<float>(isum), d * a.scale(b), acc);
  }
  return acc;
}

// kI8x8: the whole row in int32, then one rescale.
float DotI8(const PackedMatrix& w, int64_t n, const int8_t* a, float static_scale) {
  const uint8_t* group = w.group(n / kPackRows);
  const int64_t r = n % kPackRows;
  const int8_t* q = reinterpret_cast<const int8_t*>(group + kI8x8HeaderBytes);
  int32_t isum = 0;
  for (int64_t c = 0; c < w.cols / 4; ++c) {
    for (int i = 0; i < 4; ++i) isum += q[(c * kPackRows + r) * 4 + i] * a[4 * c + i];
  }
  float d;
  std::memcpy(&d, group + 4 * r, sizeof(d));
  return static_cast<float>(isum) * (d * static_scale);
}

float DotF32(const PackedMatrix& w, int64_t n, const float* x) {
  const uint8_t* group = w.group(n / kPackRows);
  const int64_t r = n % kPackRows;
  float acc = 0.0f;
  for (int64_t k = 0; k < w.cols; ++k) {
    float value;
    std::memcpy(&value, group + (k * kPackRows + r) * 4, sizeof(value));
    acc = std::fma(value, x[k], acc);
  }
  return acc;
}

float DotF16(const PackedMatrix& w, int64_t n, const float* x) {
  const uint8_t* group = w.group(n / kPackRows);
  const int64_t r = n % kPackRows;
  float acc = 0.0f;
  for (int64_t k = 0; k < w.cols; ++k) acc = std::fma(HalfAt(group, k * kPackRows + r), x[k], acc);
  return acc;
}

}  // namespace

void MatMul(const PackedMatrix& w, const MatMulInput& x, const MatMulOutput& out, int64_t m_begin,
            int64_t m_end, int64_t n_begin, int64_t n_end) {
  REPRISE_DCHECK(0 <= m_begin && m_begin <= m_end);
  REPRISE_DCHECK(0 <= n_begin && n_begin <= n_end && n_end <= w.rows);
  for (int64_t m = m_begin; m < m_end; ++m) {
    float* out_row = out.data + m * out.stride;
    for (int64_t n = n_begin; n < n_end; ++n) {
      float value = 0.0f;
      switch (w.format) {
        case PackedFormat::kQ8_0x8:
          value = DotQ8(w, n, QuantizedRowView(x.q8 + m * x.q8_stride, w.cols));
          break;
        case PackedFormat::kQ4_0x8:
          value = DotQ4(w, n, QuantizedRowView(x.q8 + m * x.q8_stride, w.cols));
          break;
        case PackedFormat::kQ4_Kx8:
          value = DotAffineK<false>(w, n, QuantizedRowView(x.q8 + m * x.q8_stride, w.cols));
          break;
        case PackedFormat::kQ5_Kx8:
          value = DotAffineK<true>(w, n, QuantizedRowView(x.q8 + m * x.q8_stride, w.cols));
          break;
        case PackedFormat::kQ6_Kx8:
          value = DotQ6K(w, n, QuantizedRowView(x.q8 + m * x.q8_stride, w.cols));
          break;
        case PackedFormat::kF16x8:
          value = DotF16(w, n, x.f32 + m * x.f32_stride);
          break;
        case PackedFormat::kF32x8:
          value = DotF32(w, n, x.f32 + m * x.f32_stride);
          break;
        case PackedFormat::kI8x8:
          value =
              DotI8(w, n, reinterpret_cast<const int8_t*>(x.q8 + m * x.q8_stride), x.static_scale);
          break;
      }
      out_row[n] = out.accumulate ? out_row[n] + value : value;
    }
  }
}

}  // namespace reprise::kernels::scalar
