#include "convert/tensor_encoder.h"

#include <cstring>

#include "base/float16.h"
#include "kernels/quantize.h"

namespace reprise::convert {

DType StoredTypeFor(DType wanted, uint64_t row_length) {
  const DTypeInfo& info = GetDTypeInfo(wanted);
  if (row_length % info.block_elements == 0) return wanted;
  return DType::kF16;
}

Status AddEncodedTensor(gguf::GgufWriter& writer, const std::string& name,
                        std::vector<uint64_t> dims, std::span<const float> values, DType wanted) {
  if (dims.empty()) return InvalidArgumentError("tensor '" + name + "' has no dimensions");
  uint64_t count = 1;
  for (uint64_t d : dims) count *= d;
  if (count != values.size()) {
    return InvalidArgumentError("tensor '" + name + "': " + std::to_string(values.size()) +
                                " values for " + std::to_string(count) + " elements");
  }
  const DType stored = StoredTypeFor(wanted, dims[0]);
  if (!kernels::CanQuantize(stored)) {
    return InvalidArgumentError("cannot write tensors of type " + std::string(DTypeName(stored)));
  }
  const int64_t row = static_cast<int64_t>(dims[0]);
  const uint64_t rows = count / dims[0];
  const size_t row_bytes = kernels::RowBytes(stored, row);
  std::vector<uint8_t> bytes(row_bytes * rows);
  for (uint64_t r = 0; r < rows; ++r) {
    kernels::QuantizeRow(stored, values.data() + r * dims[0], bytes.data() + r * row_bytes, row);
  }
  return writer.AddTensor(name, stored, std::move(dims), std::move(bytes));
}

std::vector<float> ToFloat(DType dtype, std::span<const uint8_t> data, uint64_t count) {
  std::vector<float> out(count);
  if (dtype == DType::kF32) {
    std::memcpy(out.data(), data.data(), count * 4);
    return out;
  }
  for (uint64_t i = 0; i < count; ++i) {
    uint16_t h;
    std::memcpy(&h, data.data() + 2 * i, 2);
    out[i] = dtype == DType::kF16 ? F16ToF32(h) : BF16ToF32(h);
  }
  return out;
}

uint32_t FileTypeCode(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 0;
    case DType::kF16: return 1;
    case DType::kQ4_0: return 2;
    case DType::kQ4_1: return 3;
    case DType::kQ8_0: return 7;
    case DType::kQ5_0: return 8;
    case DType::kQ5_1: return 9;
    case DType::kQ2_K: return 10;
    case DType::kQ3_K: return 11;  // "mostly Q3_K_S"
    case DType::kQ4_K: return 14;  // "mostly Q4_K_S"
    case DType::kQ5_K: return 16;  // "mostly Q5_K_S"
    case DType::kQ6_K: return 18;
    case DType::kBF16: return 32;
    default: return 1;
  }
}

void SetFileType(gguf::GgufWriter& writer, DType dtype) {
  writer.SetU32("general.file_type", FileTypeCode(dtype));
  if (dtype != DType::kF32 && dtype != DType::kF16 && dtype != DType::kBF16) {
    writer.SetU32("general.quantization_version", 2);
  }
}

}  // namespace reprise::convert
