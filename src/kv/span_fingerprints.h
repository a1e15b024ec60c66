// SpanFingerprints: a small set of hashes of a token sequence such that two sequences sharing
// any span of at least kGuaranteedSpanTokens tokens share at least one hash — the key of the
// candidate search for sub-chunk matches (docs/design.md §6 "Matching"; issue 17).
//
// The method is winnowing (Schleimer, Wilkerson, Aiken, SIGMOD 2003): hash every window of
// kFingerprintNgram consecutive tokens, and of every run of W = kGuaranteedSpanTokens -
// kFingerprintNgram + 1 consecutive n-gram hashes keep the smallest. A span of
// kGuaranteedSpanTokens tokens holds one whole run, so both sequences keep its smallest hash.
// About 2 / (W + 1) of the positions are kept: ~40 hashes for a 512-token chunk.
//
// The hashes are persisted in the store's catalog: their definition (below, in the .cc) is
// part of the catalog format and must not change without a schema migration.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace reprise::kv {

inline constexpr int kFingerprintNgram = 8;
inline constexpr int kGuaranteedSpanTokens = 32;

// The distinct fingerprints of `tokens`, sorted ascending. A sequence shorter than
// kFingerprintNgram has none; one shorter than kGuaranteedSpanTokens keeps the smallest of
// its n-gram hashes.
std::vector<uint64_t> SpanFingerprints(std::span<const int32_t> tokens);

}  // namespace reprise::kv
