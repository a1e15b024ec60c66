// DType: the element types of tensors, numbered as in GGUF files (the ggml type ids).
//
// Quantized types store elements in blocks: `block_elements` values packed into
// `block_bytes` bytes. Every type a GGUF file may name is listed, so that sizes of any tensor
// can be validated; which of them can be dequantized or computed is for kernels/ to say.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace reprise {

enum class DType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
  kNVFP4 = 40,
  kQ1_0 = 41,
  kQ2_0 = 42,
};

struct DTypeInfo {
  DType dtype;
  std::string_view name;   // "q4_K", as ggml spells it
  uint32_t block_elements;  // values per block (1 for plain types)
  uint32_t block_bytes;     // bytes per block
};

// The layout of a known type id, or nullopt for an id no GGUF writer uses.
std::optional<DTypeInfo> LookupDType(uint32_t id);

// Requires: `dtype` is one of the enumerators.
const DTypeInfo& GetDTypeInfo(DType dtype);

inline std::string_view DTypeName(DType dtype) { return GetDTypeInfo(dtype).name; }

// Looks a type up by its ggml name ("q8_0", "F16", case-insensitive).
std::optional<DType> ParseDTypeName(std::string_view name);

}  // namespace reprise
