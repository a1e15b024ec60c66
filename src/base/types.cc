// The names of the settings in reprise/types.h, and their parsing: the names the command line,
// the C API, the server and the reports use.
#include "reprise/types.h"

#include <string>

namespace reprise {
namespace {

// The value of `Enum` named `name` among `values`, or InvalidArgument listing the names.
template <typename Enum, size_t N>
Result<Enum> ParseName(std::string_view name, const Enum (&values)[N],
                       const char* (*name_of)(Enum), std::string_view what) {
  std::string choices;
  for (const Enum value : values) {
    if (name == name_of(value)) return value;
    if (!choices.empty()) choices += ", ";
    choices += name_of(value);
  }
  return InvalidArgumentError("unknown " + std::string(what) + " '" + std::string(name) + "' (" +
                              choices + ")");
}

}  // namespace

const char* ReuseMethodName(ReuseMethod method) {
  switch (method) {
    case ReuseMethod::kNone:
      return "none";
    case ReuseMethod::kPrefix:
      return "prefix";
    case ReuseMethod::kFull:
      return "full";
    case ReuseMethod::kBlend:
      return "blend";
  }
  return "?";
}

Result<ReuseMethod> ParseReuseMethod(std::string_view name) {
  return ParseName(name, kReuseMethods, ReuseMethodName, "reuse method");
}

const char* TokenSelectionName(TokenSelection selection) {
  switch (selection) {
    case TokenSelection::kDeviation:
      return "deviation";
    case TokenSelection::kAttention:
      return "attention";
    case TokenSelection::kAttentionTimesDeviation:
      return "attention-deviation";
  }
  return "?";
}

Result<TokenSelection> ParseTokenSelection(std::string_view name) {
  return ParseName(name, kTokenSelections, TokenSelectionName, "selection");
}

const char* Int8SchemeName(Int8Scheme scheme) {
  switch (scheme) {
    case Int8Scheme::kPerBlock:
      return "per-block";
    case Int8Scheme::kPerTensor:
      return "per-tensor";
    case Int8Scheme::kShadow:
      return "shadow";
  }
  return "?";
}

Result<Int8Scheme> ParseInt8Scheme(std::string_view name) {
  return ParseName(name, kInt8Schemes, Int8SchemeName, "int8 scheme");
}

// The packed formats' names (kernels/packed_matrix.h: PackedFormatName).
const char* WeightFormatName(WeightFormat format) {
  switch (format) {
    case WeightFormat::kAsStored:
      return "as-stored";
    case WeightFormat::kQ8_0:
      return "q8_0x8";
    case WeightFormat::kQ4_0:
      return "q4_0x8";
    case WeightFormat::kF16:
      return "f16x8";
    case WeightFormat::kF32:
      return "f32x8";
  }
  return "?";
}

Result<WeightFormat> ParseWeightFormat(std::string_view name) {
  return ParseName(name, kWeightFormats, WeightFormatName, "weight format");
}

const char* KvCodecName(KvCodec codec) {
  switch (codec) {
    case KvCodec::kF16:
      return "f16";
    case KvCodec::kInt8:
      return "int8";
  }
  return "?";
}

Result<KvCodec> ParseKvCodec(std::string_view name) {
  return ParseName(name, kKvCodecs, KvCodecName, "KV codec");
}

const char* ChunkingModeName(ChunkingMode mode) {
  switch (mode) {
    case ChunkingMode::kFixed:
      return "fixed";
    case ChunkingMode::kContent:
      return "content";
  }
  return "?";
}

Result<ChunkingMode> ParseChunkingMode(std::string_view name) {
  return ParseName(name, kChunkingModes, ChunkingModeName, "chunking");
}

const char* ScheduleStrategyName(ScheduleStrategy strategy) {
  switch (strategy) {
    case ScheduleStrategy::kDp:
      return "dp";
    case ScheduleStrategy::kGreedy:
      return "greedy";
    case ScheduleStrategy::kNaive:
      return "naive";
  }
  return "?";
}

Result<ScheduleStrategy> ParseScheduleStrategy(std::string_view name) {
  return ParseName(name, kScheduleStrategies, ScheduleStrategyName, "scheduler");
}

}  // namespace reprise
