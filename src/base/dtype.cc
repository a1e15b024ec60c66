#include "base/dtype.h"

#include <array>
#include <cctype>

#include "base/check.h"

namespace reprise {
namespace {

// Block layouts from the GGUF/ggml specification (ggml-common.h block structs).
constexpr std::array<DTypeInfo, 35> kDTypes = {{
    {DType::kF32, "f32", 1, 4},
    {DType::kF16, "f16", 1, 2},
    {DType::kQ4_0, "q4_0", 32, 18},
    {DType::kQ4_1, "q4_1", 32, 20},
    {DType::kQ5_0, "q5_0", 32, 22},
    {DType::kQ5_1, "q5_1", 32, 24},
    {DType::kQ8_0, "q8_0", 32, 34},
    {DType::kQ8_1, "q8_1", 32, 36},
    {DType::kQ2_K, "q2_K", 256, 84},
    {DType::kQ3_K, "q3_K", 256, 110},
    {DType::kQ4_K, "q4_K", 256, 144},
    {DType::kQ5_K, "q5_K", 256, 176},
    {DType::kQ6_K, "q6_K", 256, 210},
    {DType::kQ8_K, "q8_K", 256, 292},
    {DType::kIQ2_XXS, "iq2_xxs", 256, 66},
    {DType::kIQ2_XS, "iq2_xs", 256, 74},
    {DType::kIQ3_XXS, "iq3_xxs", 256, 98},
    {DType::kIQ1_S, "iq1_s", 256, 50},
    {DType::kIQ4_NL, "iq4_nl", 32, 18},
    {DType::kIQ3_S, "iq3_s", 256, 110},
    {DType::kIQ2_S, "iq2_s", 256, 82},
    {DType::kIQ4_XS, "iq4_xs", 256, 136},
    {DType::kI8, "i8", 1, 1},
    {DType::kI16, "i16", 1, 2},
    {DType::kI32, "i32", 1, 4},
    {DType::kI64, "i64", 1, 8},
    {DType::kF64, "f64", 1, 8},
    {DType::kIQ1_M, "iq1_m", 256, 56},
    {DType::kBF16, "bf16", 1, 2},
    {DType::kTQ1_0, "tq1_0", 256, 54},
    {DType::kTQ2_0, "tq2_0", 256, 66},
    {DType::kMXFP4, "mxfp4", 32, 17},
    {DType::kNVFP4, "nvfp4", 64, 36},
    {DType::kQ1_0, "q1_0", 128, 18},
    {DType::kQ2_0, "q2_0", 64, 18},
}};

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

}  // namespace

std::optional<DTypeInfo> LookupDType(uint32_t id) {
  for (const DTypeInfo& info : kDTypes) {
    if (static_cast<uint32_t>(info.dtype) == id) return info;
  }
  return std::nullopt;
}

const DTypeInfo& GetDTypeInfo(DType dtype) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.dtype == dtype) return info;
  }
  REPRISE_CHECK(false) << "unknown DType " << static_cast<uint32_t>(dtype);
  return kDTypes[0];
}

std::optional<DType> ParseDTypeName(std::string_view name) {
  for (const DTypeInfo& info : kDTypes) {
    if (EqualsIgnoreCase(info.name, name)) return info.dtype;
  }
  return std::nullopt;
}

}  // namespace reprise
