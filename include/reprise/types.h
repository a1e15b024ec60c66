// The named settings of Reprise — how a request reuses KV, how blend selects tokens, the int8
// arithmetic, the weight and KV formats, chunking and scheduling — and their names. One set of
// types for the public API and every layer inside the engine (the model, graph, reuse, store
// and engine layers take these very enums; the C API maps its constants onto them).
//
// This header includes only reprise/status.h and the standard library.
#pragma once

#include <cstdint>
#include <string_view>

#include "reprise/status.h"

namespace reprise {

// How a request reuses cached KV.
enum class ReuseMethod : uint8_t {
  kNone,    // full prefill, nothing cached
  kPrefix,  // exact reuse of a cached prefix (lossless)
  kFull,    // cached chunks at new positions, nothing recomputed (the Prompt Cache baseline)
  kBlend,   // cached chunks at new positions with selective recompute
};
const char* ReuseMethodName(ReuseMethod method);              // "none", "prefix", "full", "blend"
Result<ReuseMethod> ParseReuseMethod(std::string_view name);  // Errors: InvalidArgument
inline constexpr ReuseMethod kReuseMethods[] = {ReuseMethod::kNone, ReuseMethod::kPrefix,
                                                ReuseMethod::kFull, ReuseMethod::kBlend};

// Which reused tokens blend recomputes (its r share).
enum class TokenSelection : uint8_t {
  kDeviation,  // those whose KV deviates most at the check layer (CacheBlend)
  kAttention,  // those the prompt's last new tokens (the question) attend to most there
  kAttentionTimesDeviation,  // the largest product of the two
};
// "deviation", "attention", "attention-deviation".
const char* TokenSelectionName(TokenSelection selection);
Result<TokenSelection> ParseTokenSelection(std::string_view name);  // Errors: InvalidArgument
inline constexpr TokenSelection kTokenSelections[] = {TokenSelection::kDeviation,
                                                      TokenSelection::kAttention,
                                                      TokenSelection::kAttentionTimesDeviation};

// How the layers' matrix multiplies take int8 activations (docs/design.md §9, from llm.npu).
enum class Int8Scheme : uint8_t {
  kPerBlock,   // one scale per 32 activations, at run time: the CPU's accurate path (default)
  kPerTensor,  // an NPU's arithmetic: one static scale per tensor from a calibration, int8
               // weights with a scale per output channel, int32 accumulation over the row
  kShadow,     // kPerTensor with shadow outlier execution: the few input channels whose
               // calibrated range dwarfs the rest are computed in float and added back
};
// "per-block", "per-tensor", "shadow".
const char* Int8SchemeName(Int8Scheme scheme);
Result<Int8Scheme> ParseInt8Scheme(std::string_view name);  // Errors: InvalidArgument
inline constexpr Int8Scheme kInt8Schemes[] = {Int8Scheme::kPerBlock, Int8Scheme::kPerTensor,
                                              Int8Scheme::kShadow};

// How the compiled model packs the weight matrices: as their file type maps to (the default),
// or every matrix in one format (experiments: an F32 or F16 file run through the Q8_0 int8
// kernels, a quantized file through the float ones).
enum class WeightFormat : uint8_t { kAsStored, kQ8_0, kQ4_0, kF16, kF32 };
// "as-stored", "q8_0x8", "q4_0x8", "f16x8", "f32x8" (the packed formats' names).
const char* WeightFormatName(WeightFormat format);
Result<WeightFormat> ParseWeightFormat(std::string_view name);  // Errors: InvalidArgument
inline constexpr WeightFormat kWeightFormats[] = {WeightFormat::kAsStored, WeightFormat::kQ8_0,
                                                  WeightFormat::kQ4_0, WeightFormat::kF16,
                                                  WeightFormat::kF32};

// How the store keeps KV on flash.
// The values are kept in KV files and the catalog: never renumber.
enum class KvCodec : uint8_t {
  kF16 = 0,   // as computed
  kInt8 = 1,  // INT8 after a Hadamard rotation: half the bytes (lossy: never exact KV)
};
const char* KvCodecName(KvCodec codec);               // "f16", "int8"
Result<KvCodec> ParseKvCodec(std::string_view name);  // Errors: InvalidArgument
inline constexpr KvCodec kKvCodecs[] = {KvCodec::kF16, KvCodec::kInt8};

// Where segments are cut into chunks: every chunk_tokens tokens, or at content boundaries
// (paragraphs, sentences) near that length so that text pasted elsewhere cuts the same way.
enum class ChunkingMode : uint8_t { kFixed, kContent };
const char* ChunkingModeName(ChunkingMode mode);                // "fixed", "content"
Result<ChunkingMode> ParseChunkingMode(std::string_view name);  // Errors: InvalidArgument
inline constexpr ChunkingMode kChunkingModes[] = {ChunkingMode::kFixed, ChunkingMode::kContent};

// How blend's graph calls are chosen (docs/design.md §5): the chunk-merge DP, or the ablation's
// baselines (fill each call in order; each reused or new run its own calls).
enum class ScheduleStrategy : uint8_t { kDp, kGreedy, kNaive };
const char* ScheduleStrategyName(ScheduleStrategy strategy);            // "dp", "greedy", "naive"
Result<ScheduleStrategy> ParseScheduleStrategy(std::string_view name);  // Errors: InvalidArgument
inline constexpr ScheduleStrategy kScheduleStrategies[] = {
    ScheduleStrategy::kDp, ScheduleStrategy::kGreedy, ScheduleStrategy::kNaive};

}  // namespace reprise
