#include "kernels/quantize.h"

#include <cstring>

#include "base/check.h"
#include "base/float16.h"
#include "kernels/quantize_internal.h"

namespace reprise::kernels {
namespace {

using RowKernel = void (*)(const uint8_t* src, float* dst, int64_t num_blocks);
using QuantizeKernel = void (*)(const float* src, uint8_t* dst, int64_t num_blocks);

// Plain types go through the same signature with one-element "blocks". 16-bit values are
// read with memcpy: rows of a mapped file carry no alignment.
void DequantizeF32(const uint8_t* src, float* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

template <float (*kToF32)(uint16_t)>
void DequantizeHalf(const uint8_t* src, float* dst, int64_t n) {
  constexpr int64_t kChunk = 256;
  uint16_t bits[kChunk];
  for (int64_t start = 0; start < n; start += kChunk) {
    const int64_t count = n - start < kChunk ? n - start : kChunk;
    std::memcpy(bits, src + 2 * start, static_cast<size_t>(count) * sizeof(uint16_t));
    for (int64_t i = 0; i < count; ++i) dst[start + i] = kToF32(bits[i]);
  }
}

void QuantizeF32(const float* src, uint8_t* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

template <uint16_t (*kFromF32)(float)>
void QuantizeHalf(const float* src, uint8_t* dst, int64_t n) {
  constexpr int64_t kChunk = 256;
  uint16_t bits[kChunk];
  for (int64_t start = 0; start < n; start += kChunk) {
    const int64_t count = n - start < kChunk ? n - start : kChunk;
    for (int64_t i = 0; i < count; ++i) bits[i] = kFromF32(src[start + i]);
    std::memcpy(dst + 2 * start, bits, static_cast<size_t>(count) * sizeof(uint16_t));
  }
}

RowKernel FindDequantizer(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return DequantizeF32;
    case DType::kF16:
      return DequantizeHalf<F16ToF32>;
    case DType::kBF16:
      return DequantizeHalf<BF16ToF32>;
    case DType::kQ4_0:
      return internal::DequantizeQ4_0;
    case DType::kQ4_1:
      return internal::DequantizeQ4_1;
    case DType::kQ5_0:
      return internal::DequantizeQ5_0;
    case DType::kQ5_1:
      return internal::DequantizeQ5_1;
    case DType::kQ8_0:
      return internal::DequantizeQ8_0;
    case DType::kQ2_K:
      return internal::DequantizeQ2_K;
    case DType::kQ3_K:
      return internal::DequantizeQ3_K;
    case DType::kQ4_K:
      return internal::DequantizeQ4_K;
    case DType::kQ5_K:
      return internal::DequantizeQ5_K;
    case DType::kQ6_K:
      return internal::DequantizeQ6_K;
    default:
      return nullptr;
  }
}

QuantizeKernel FindQuantizer(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return QuantizeF32;
    case DType::kF16:
      return QuantizeHalf<F32ToF16>;
    case DType::kBF16:
      return QuantizeHalf<F32ToBF16>;
    case DType::kQ4_0:
      return internal::QuantizeQ4_0;
    case DType::kQ4_1:
      return internal::QuantizeQ4_1;
    case DType::kQ5_0:
      return internal::QuantizeQ5_0;
    case DType::kQ5_1:
      return internal::QuantizeQ5_1;
    case DType::kQ8_0:
      return internal::QuantizeQ8_0;
    case DType::kQ3_K:
      return internal::QuantizeQ3_K;
    case DType::kQ4_K:
      return internal::QuantizeQ4_K;
    case DType::kQ5_K:
      return internal::QuantizeQ5_K;
    case DType::kQ6_K:
      return internal::QuantizeQ6_K;
    default:
      return nullptr;
  }
}

}  // namespace

bool CanDequantize(DType dtype) { return FindDequantizer(dtype) != nullptr; }

bool CanQuantize(DType dtype) { return FindQuantizer(dtype) != nullptr; }

size_t RowBytes(DType dtype, int64_t n) {
  const DTypeInfo& info = GetDTypeInfo(dtype);
  REPRISE_DCHECK(n >= 0 && n % info.block_elements == 0) << DTypeName(dtype) << " row of " << n;
  return static_cast<size_t>(n / info.block_elements) * info.block_bytes;
}

void DequantizeRow(DType dtype, const uint8_t* src, float* dst, int64_t n) {
  const RowKernel kernel = FindDequantizer(dtype);
  const uint32_t block_elements = GetDTypeInfo(dtype).block_elements;
  REPRISE_DCHECK(kernel != nullptr) << "cannot dequantize " << DTypeName(dtype);
  REPRISE_DCHECK(n >= 0 && n % block_elements == 0) << DTypeName(dtype) << " row of " << n;
  kernel(src, dst, n / block_elements);
}

void QuantizeRow(DType dtype, const float* src, uint8_t* dst, int64_t n) {
  const QuantizeKernel kernel = FindQuantizer(dtype);
  const uint32_t block_elements = GetDTypeInfo(dtype).block_elements;
  REPRISE_DCHECK(kernel != nullptr) << "cannot quantize " << DTypeName(dtype);
  REPRISE_DCHECK(n >= 0 && n % block_elements == 0) << DTypeName(dtype) << " row of " << n;
  kernel(src, dst, n / block_elements);
}

}  // namespace reprise::kernels
