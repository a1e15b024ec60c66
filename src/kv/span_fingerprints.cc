#include "kv/span_fingerprints.h"

#include <algorithm>
#include <deque>

namespace reprise::kv {
namespace {

// splitmix64's finalizer: a bijective 64-bit mix.
uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

// The hash of tokens[begin, begin + kFingerprintNgram). Part of the catalog format.
uint64_t NgramHash(std::span<const int32_t> tokens, size_t begin) {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (size_t i = begin; i < begin + kFingerprintNgram; ++i) {
    h = Mix(h ^ static_cast<uint32_t>(tokens[i]));
  }
  return h;
}

}  // namespace

std::vector<uint64_t> SpanFingerprints(std::span<const int32_t> tokens) {
  std::vector<uint64_t> out;
  if (tokens.size() < static_cast<size_t>(kFingerprintNgram)) return out;
  const size_t num_hashes = tokens.size() - kFingerprintNgram + 1;
  std::vector<uint64_t> hashes(num_hashes);
  for (size_t i = 0; i < num_hashes; ++i) hashes[i] = NgramHash(tokens, i);
  const size_t window =
      std::min(num_hashes, static_cast<size_t>(kGuaranteedSpanTokens - kFingerprintNgram + 1));
  // The minimum of every window of `window` hashes, by a monotonic deque of positions whose
  // hashes increase from front to back.
  std::deque<size_t> candidates;
  for (size_t i = 0; i < num_hashes; ++i) {
    while (!candidates.empty() && hashes[candidates.back()] >= hashes[i]) candidates.pop_back();
    candidates.push_back(i);
    if (candidates.front() + window <= i) candidates.pop_front();
    if (i + 1 >= window) out.push_back(hashes[candidates.front()]);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace reprise::kv
