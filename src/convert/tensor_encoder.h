// Writing model weights into a GgufWriter in a chosen stored type.
//
// Shared by the importers and `make-model`: takes float values, picks the stored type
// (falling back to F16/F32 when the row length does not fit the type's block) and encodes
// them with kernels::QuantizeRow.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"
#include "gguf/gguf_writer.h"

namespace reprise::convert {

// The type a weight matrix with rows of `row_length` elements is stored in when `wanted` is
// asked for: `wanted` if its block divides the row, else F16 (for quantized types) .
DType StoredTypeFor(DType wanted, uint64_t row_length);

// Adds tensor `name` with GGUF dims (dims[0] = row length) holding `values`, stored as
// StoredTypeFor(wanted, dims[0]). Errors: InvalidArgument (size mismatch, unsupported type).
Status AddEncodedTensor(gguf::GgufWriter& writer, const std::string& name,
                        std::vector<uint64_t> dims, std::span<const float> values, DType wanted);

// Converts `count` elements stored as F32, F16 or BF16 at `data` to float.
// Requires: dtype is one of those three and data holds count elements.
std::vector<float> ToFloat(DType dtype, std::span<const uint8_t> data, uint64_t count);

// The llama.cpp `general.file_type` code for a file whose weights are mostly `dtype`.
uint32_t FileTypeCode(DType dtype);

// Sets general.file_type (and general.quantization_version for quantized types).
void SetFileType(gguf::GgufWriter& writer, DType dtype);

}  // namespace reprise::convert
