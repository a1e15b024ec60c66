#include "kernels/kernel_set.h"

#include <cstdlib>
#include <string_view>

#include "base/cpu_features.h"
#include "base/logging.h"
#include "kernels/kernel_impl.h"

namespace reprise::kernels {
namespace {

KernelSet MakeScalarSet() {
  KernelSet set;
  set.name = "scalar";
  set.matmul = scalar::MatMul;
  set.quantize_row = scalar::QuantizeRow;
  set.static_quantize_row = scalar::StaticQuantizeRow;
  set.rms_norm = scalar::RmsNorm;
  set.rms_norm_quantize = scalar::RmsNormQuantize;
  set.rope = scalar::Rope;
  set.silu_mul = scalar::SiluMul;
  set.softmax = scalar::Softmax;
  set.add = scalar::Add;
  set.f32_to_f16 = scalar::F32ToF16Row;
  set.f16_to_f32 = scalar::F16ToF32Row;
  set.attention = scalar::Attention;
  set.int8_peak = scalar::Int8PeakLoop();
  set.float_peak = scalar::Float32PeakLoop();
  return set;
}

#if defined(__x86_64__)

KernelSet MakeAvx2Set() {
  KernelSet set;
  set.name = "avx2";
  set.matmul = avx2::MatMul;
  set.quantize_row = avx2::QuantizeRow;
  set.static_quantize_row = avx2::StaticQuantizeRow;
  set.rms_norm = avx2::RmsNorm;
  set.rms_norm_quantize = avx2::RmsNormQuantize;
  set.rope = avx2::Rope;
  set.silu_mul = avx2::SiluMul;
  set.softmax = avx2::Softmax;
  set.add = avx2::Add;
  set.f32_to_f16 = avx2::F32ToF16Row;
  set.f16_to_f32 = avx2::F16ToF32Row;
  set.attention = avx2::Attention;
  set.int8_peak = avx2::Int8PeakLoop();
  set.float_peak = avx2::Float32PeakLoop();
  return set;
}

KernelSet MakeAvxVnniSet() {
  KernelSet set = MakeAvx2Set();
  set.name = "avx-vnni";
  set.matmul = avx_vnni::MatMul;
  set.q6_k_format = PackedFormat::kQ8_0x8;
  set.int8_peak = avx_vnni::Int8PeakLoop();
  return set;
}

KernelSet MakeAvx512VnniSet() {
  KernelSet set = MakeAvx2Set();
  set.name = "avx512-vnni";
  set.matmul = avx512_vnni::MatMul;
  set.q6_k_format = PackedFormat::kQ8_0x8;
  set.attention = avx512::Attention;
  set.int8_peak = avx512_vnni::Int8PeakLoop();
  set.float_peak = avx512_vnni::Float32PeakLoop();
  return set;
}

#endif  // __x86_64__

#if defined(__aarch64__)

KernelSet MakeNeonDotSet() {
  KernelSet set;
  set.name = "neon-dotprod";
  set.matmul = neon::MatMul;
  set.q6_k_format = PackedFormat::kQ8_0x8;
  set.quantize_row = neon::QuantizeRow;
  set.static_quantize_row = neon::StaticQuantizeRow;
  set.rms_norm = neon::RmsNorm;
  set.rms_norm_quantize = neon::RmsNormQuantize;
  set.rope = neon::Rope;
  set.silu_mul = neon::SiluMul;
  set.softmax = neon::Softmax;
  set.add = neon::Add;
  set.f32_to_f16 = neon::F32ToF16Row;
  set.f16_to_f32 = neon::F16ToF32Row;
  set.attention = neon::Attention;
  set.int8_peak = neon::Int8PeakLoop();
  set.float_peak = neon::Float32PeakLoop();
  return set;
}

KernelSet MakeNeonI8mmSet() {
  KernelSet set = MakeNeonDotSet();
  set.name = "neon-i8mm";
  set.matmul = neon_i8mm::MatMul;
  set.int8_peak = neon_i8mm::Int8PeakLoop();
  return set;
}

#endif  // __aarch64__

const KernelSet& DetectBestKernels() {
  const KernelSet* best = Avx512VnniKernels();
  if (best == nullptr) best = AvxVnniKernels();
  if (best == nullptr) best = Avx2Kernels();
  if (best == nullptr) best = NeonI8mmKernels();
  if (best == nullptr) best = NeonDotKernels();
  if (best == nullptr) best = &ScalarKernels();
  const char* cap = std::getenv("REPRISE_KERNELS");
  if (cap == nullptr) return *best;
  const std::string_view name(cap);
  if (name == "scalar") return ScalarKernels();
  if (name == "avx2" && Avx2Kernels() != nullptr) return *Avx2Kernels();
  if (name == "avx-vnni" && AvxVnniKernels() != nullptr) return *AvxVnniKernels();
  if (name == "neon-dotprod" && NeonDotKernels() != nullptr) return *NeonDotKernels();
  if (name != best->name) {
    REPRISE_LOG(kWarning) << "REPRISE_KERNELS=" << name
                          << " names no kernel set this CPU runs (scalar, avx2, avx-vnni, "
                             "neon-dotprod, neon-i8mm); using "
                          << best->name;
  }
  return *best;
}

}  // namespace

const KernelSet& ScalarKernels() {
  static const KernelSet set = MakeScalarSet();
  return set;
}

#if defined(__x86_64__)

const KernelSet* Avx2Kernels() {
  static const KernelSet set = MakeAvx2Set();
  return GetCpuFeatures().has_avx2_fma_f16c() ? &set : nullptr;
}

const KernelSet* AvxVnniKernels() {
  static const KernelSet set = MakeAvxVnniSet();
  return GetCpuFeatures().has_avx_vnni_set() ? &set : nullptr;
}

const KernelSet* Avx512VnniKernels() {
  static const KernelSet set = MakeAvx512VnniSet();
  return GetCpuFeatures().has_avx512_vnni_set() ? &set : nullptr;
}

const KernelSet* NeonDotKernels() { return nullptr; }
const KernelSet* NeonI8mmKernels() { return nullptr; }

#elif defined(__aarch64__)

const KernelSet* Avx2Kernels() { return nullptr; }
const KernelSet* AvxVnniKernels() { return nullptr; }
const KernelSet* Avx512VnniKernels() { return nullptr; }

const KernelSet* NeonDotKernels() {
  static const KernelSet set = MakeNeonDotSet();
  return GetCpuFeatures().has_neon_dotprod ? &set : nullptr;
}

const KernelSet* NeonI8mmKernels() {
  static const KernelSet set = MakeNeonI8mmSet();
  return GetCpuFeatures().has_neon_i8mm_set() ? &set : nullptr;
}

#else

const KernelSet* Avx2Kernels() { return nullptr; }
const KernelSet* AvxVnniKernels() { return nullptr; }
const KernelSet* Avx512VnniKernels() { return nullptr; }
const KernelSet* NeonDotKernels() { return nullptr; }
const KernelSet* NeonI8mmKernels() { return nullptr; }

#endif

const KernelSet& BestKernels() {
  static const KernelSet& best = DetectBestKernels();
  return best;
}

}  // namespace reprise::kernels
