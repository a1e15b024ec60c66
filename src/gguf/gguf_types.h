// The GGUF value model: metadata value types, parsed values and tensor descriptions.
//
// GGUF (versions 2 and 3) is a little-endian container: a header, typed key/value metadata,
// a tensor directory, then the aligned tensor data. Parsed values borrow from the file's
// bytes: string_views and spans stay valid as long as the GgufFile they came from.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/dtype.h"

namespace reprise::gguf {

inline constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as little-endian uint32
inline constexpr uint64_t kDefaultAlignment = 32;
inline constexpr uint32_t kMaxTensorDims = 4;

enum class ValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

std::string_view ValueTypeName(ValueType type);

// Size in bytes of one scalar of `type`; 0 for strings and arrays.
uint32_t ScalarSize(ValueType type);

bool IsIntegerType(ValueType type);

// One metadata value. Scalars are widened into `u64`, `i64` or `f64` (by kind); strings are
// views; arrays keep their element type and count, with numeric elements left in the file
// (`array_raw`, little-endian, unaligned), strings as views and nested arrays parsed.
struct Value {
  ValueType type = ValueType::kUint8;
  uint64_t u64 = 0;   // unsigned integers and bool
  int64_t i64 = 0;    // signed integers
  double f64 = 0.0;   // floats
  std::string_view str;

  ValueType array_type = ValueType::kUint8;
  uint64_t array_count = 0;
  std::span<const uint8_t> array_raw;         // numeric and bool arrays
  std::vector<std::string_view> array_strings;  // string arrays
  std::vector<Value> array_nested;            // arrays of arrays

  // A short human-readable rendering ("[151936 strings]", "1e-06", "\"llama\"").
  std::string ToShortString() const;
};

struct MetadataEntry {
  std::string_view key;
  Value value;
  uint64_t offset = 0;  // file offset of the entry's key, for error messages
};

// One entry of the tensor directory. `dims` are in GGUF order: dims[0] is the length of a
// row (the contiguous dimension), dims[1] the number of rows, and so on.
struct TensorInfo {
  std::string_view name;
  DType dtype = DType::kF32;
  std::vector<uint64_t> dims;
  uint64_t num_elements = 0;
  uint64_t offset_bytes = 0;  // absolute file offset of the first byte
  uint64_t size_bytes = 0;
  std::span<const uint8_t> data;

  uint64_t num_rows() const { return dims.empty() ? 0 : num_elements / dims[0]; }
  uint64_t row_length() const { return dims.empty() ? 0 : dims[0]; }
  std::string ShapeString() const;  // "[896, 151936]"
};

}  // namespace reprise::gguf
