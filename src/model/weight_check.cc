#include "model/weight_check.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "kernels/quant_blocks.h"

namespace reprise::model {
namespace {

// Bit patterns whose exponent is all ones are infinities and NaNs.
constexpr uint32_t kF32Exponent = 0x7f800000u;
constexpr uint16_t kF16Exponent = 0x7c00u;
constexpr uint16_t kBF16Exponent = 0x7f80u;

template <typename Bits>
Bits LoadBits(const uint8_t* p) {
  Bits b;
  std::memcpy(&b, p, sizeof(Bits));
  return b;
}

// The index of the first element of `data` (elements of `Bits`) whose exponent field equals
// `exponent`, or `count` when none. Scans in slices with a branch-free inner loop, so that it
// vectorizes.
template <typename Bits>
uint64_t FirstNonFinite(const uint8_t* data, uint64_t count, Bits exponent) {
  constexpr uint64_t kSlice = 4096;
  for (uint64_t start = 0; start < count; start += kSlice) {
    const uint64_t n = count - start < kSlice ? count - start : kSlice;
    const uint8_t* p = data + start * sizeof(Bits);
    unsigned bad = 0;
    for (uint64_t i = 0; i < n; ++i) {
      bad |= (LoadBits<Bits>(p + i * sizeof(Bits)) & exponent) == exponent;
    }
    if (bad == 0) continue;
    for (uint64_t i = 0; i < n; ++i) {
      if ((LoadBits<Bits>(p + i * sizeof(Bits)) & exponent) == exponent) return start + i;
    }
  }
  return count;
}

// Where the half-float scales of one block of `dtype` lie; {0, 0} for unchecked types.
struct ScaleLayout {
  size_t block_bytes = 0;
  size_t offsets[2] = {0, 0};
  int num_scales = 0;
};

ScaleLayout ScalesOf(DType dtype) {
  using namespace kernels;
  switch (dtype) {
    case DType::kQ4_0:
      return {sizeof(BlockQ4_0), {offsetof(BlockQ4_0, d)}, 1};
    case DType::kQ4_1:
      return {sizeof(BlockQ4_1), {offsetof(BlockQ4_1, d), offsetof(BlockQ4_1, m)}, 2};
    case DType::kQ5_0:
      return {sizeof(BlockQ5_0), {offsetof(BlockQ5_0, d)}, 1};
    case DType::kQ5_1:
      return {sizeof(BlockQ5_1), {offsetof(BlockQ5_1, d), offsetof(BlockQ5_1, m)}, 2};
    case DType::kQ8_0:
      return {sizeof(BlockQ8_0), {offsetof(BlockQ8_0, d)}, 1};
    case DType::kQ2_K:
      return {sizeof(BlockQ2_K), {offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin)}, 2};
    case DType::kQ3_K:
      return {sizeof(BlockQ3_K), {offsetof(BlockQ3_K, d)}, 1};
    case DType::kQ4_K:
      return {sizeof(BlockQ4_K), {offsetof(BlockQ4_K, d), offsetof(BlockQ4_K, dmin)}, 2};
    case DType::kQ5_K:
      return {sizeof(BlockQ5_K), {offsetof(BlockQ5_K, d), offsetof(BlockQ5_K, dmin)}, 2};
    case DType::kQ6_K:
      return {sizeof(BlockQ6_K), {offsetof(BlockQ6_K, d)}, 1};
    default:
      return {};
  }
}

Status NonFinite(const gguf::TensorInfo& tensor, const char* what, uint64_t index) {
  return CorruptError("tensor '" + std::string(tensor.name) + "' (" +
                      std::string(DTypeName(tensor.dtype)) + ") holds a NaN or infinite " + what +
                      " at index " + std::to_string(index));
}

}  // namespace

Status CheckTensorFinite(const gguf::TensorInfo& tensor) {
  const uint8_t* data = tensor.data.data();
  const uint64_t size = tensor.data.size();
  uint64_t bad;
  switch (tensor.dtype) {
    case DType::kF32:
      bad = FirstNonFinite<uint32_t>(data, size / 4, kF32Exponent);
      return bad == size / 4 ? Status::Ok() : NonFinite(tensor, "value", bad);
    case DType::kF16:
      bad = FirstNonFinite<uint16_t>(data, size / 2, kF16Exponent);
      return bad == size / 2 ? Status::Ok() : NonFinite(tensor, "value", bad);
    case DType::kBF16:
      bad = FirstNonFinite<uint16_t>(data, size / 2, kBF16Exponent);
      return bad == size / 2 ? Status::Ok() : NonFinite(tensor, "value", bad);
    default:
      break;
  }
  const ScaleLayout layout = ScalesOf(tensor.dtype);
  if (layout.num_scales == 0) return Status::Ok();
  const uint64_t num_blocks = size / layout.block_bytes;
  unsigned any = 0;
  for (uint64_t b = 0; b < num_blocks; ++b) {
    const uint8_t* block = data + b * layout.block_bytes;
    for (int s = 0; s < layout.num_scales; ++s) {
      any |= (LoadBits<uint16_t>(block + layout.offsets[s]) & kF16Exponent) == kF16Exponent;
    }
  }
  if (any == 0) return Status::Ok();
  for (uint64_t b = 0; b < num_blocks; ++b) {
    const uint8_t* block = data + b * layout.block_bytes;
    for (int s = 0; s < layout.num_scales; ++s) {
      if ((LoadBits<uint16_t>(block + layout.offsets[s]) & kF16Exponent) == kF16Exponent) {
        return NonFinite(tensor, "block scale", b);
      }
    }
  }
  return Status::Ok();
}

Status CheckWeightsFinite(const gguf::GgufFile& file) {
  for (const gguf::TensorInfo& tensor : file.tensors()) {
    REPRISE_RETURN_IF_ERROR(CheckTensorFinite(tensor));
  }
  return Status::Ok();
}

}  // namespace reprise::model
