// Overflow-checked integer arithmetic for sizes and offsets read from untrusted files.
#pragma once

#include <cstdint>
#include <optional>

namespace reprise {

// a + b, or nullopt on overflow.
inline std::optional<uint64_t> CheckedAdd(uint64_t a, uint64_t b) {
  uint64_t out;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

// a * b, or nullopt on overflow.
inline std::optional<uint64_t> CheckedMul(uint64_t a, uint64_t b) {
  uint64_t out;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

// The smallest multiple of `alignment` (a power of two, > 0) that is >= value, or nullopt.
inline std::optional<uint64_t> CheckedAlignUp(uint64_t value, uint64_t alignment) {
  auto sum = CheckedAdd(value, alignment - 1);
  if (!sum) return std::nullopt;
  return *sum / alignment * alignment;
}

}  // namespace reprise
