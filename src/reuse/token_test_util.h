// Token sequences for the reuse layer's tests: consecutive ids, and parts joined.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <numeric>
#include <vector>

namespace reprise::reuse::testing_tokens {

using Tokens = std::vector<int32_t>;

// first, first + 1, ..., first + count - 1.
inline Tokens Range(int32_t first, int count) {
  Tokens v(static_cast<size_t>(count));
  std::iota(v.begin(), v.end(), first);
  return v;
}

inline Tokens Concat(std::initializer_list<Tokens> parts) {
  Tokens out;
  for (const Tokens& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace reprise::reuse::testing_tokens
