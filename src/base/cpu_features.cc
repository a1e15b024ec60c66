#include "base/cpu_features.h"

#include <sched.h>

#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace reprise {
namespace {

#if defined(__x86_64__) || defined(__i386__)

// XCR0 through xgetbv; called only when cpuid reports OSXSAVE, so the instruction exists.
// Inline assembly because the _xgetbv intrinsic needs -mxsave on this translation unit.
uint64_t ReadXcr0() {
  uint32_t eax = 0;
  uint32_t edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

void DetectSimd(CpuFeatures& features) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) == 0) return;
  const unsigned max_leaf = eax;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return;
  const bool cpu_avx = (ecx & bit_AVX) != 0;
  const bool cpu_osxsave = (ecx & bit_OSXSAVE) != 0;
  const bool cpu_fma = (ecx & bit_FMA) != 0;
  const bool cpu_f16c = (ecx & bit_F16C) != 0;
  if (!cpu_avx || !cpu_osxsave) return;
  // Bits 1 (SSE state) and 2 (AVX upper halves) must both be enabled by the OS.
  constexpr uint64_t kYmmState = 0x6;
  if ((ReadXcr0() & kYmmState) != kYmmState) return;
  features.has_avx = true;
  features.has_fma = cpu_fma;
  features.has_f16c = cpu_f16c;
  if (max_leaf >= 7) {
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    features.has_avx2 = (ebx & bit_AVX2) != 0;
    // Bits 5-7 of XCR0: the opmask registers and both halves of the zmm state.
    constexpr uint64_t kZmmState = 0xe0;
    const bool os_zmm = (ReadXcr0() & kZmmState) == kZmmState;
    features.has_avx512 = os_zmm && (ebx & bit_AVX512F) != 0 && (ebx & bit_AVX512BW) != 0 &&
                          (ebx & bit_AVX512DQ) != 0 && (ebx & bit_AVX512VL) != 0;
    features.has_avx512_vnni = features.has_avx512 && (ecx & bit_AVX512VNNI) != 0;
    const unsigned max_subleaf = eax;
    if (max_subleaf >= 1) {
      __cpuid_count(7, 1, eax, ebx, ecx, edx);
      features.has_avx_vnni = (eax & bit_AVXVNNI) != 0;
    }
  }
}

#elif defined(__aarch64__) && defined(__linux__)

// HWCAP2_I8MM (Linux 5.10), spelled out for C libraries whose headers predate it.
constexpr unsigned long kHwcap2I8mm = 1ul << 13;

void DetectSimd(CpuFeatures& features) {
  const unsigned long hwcap = getauxval(AT_HWCAP);
  const unsigned long hwcap2 = getauxval(AT_HWCAP2);
  const bool asimd = (hwcap & HWCAP_ASIMD) != 0;
  features.has_neon_dotprod = asimd && (hwcap & HWCAP_ASIMDDP) != 0;
  features.has_neon_i8mm = asimd && (hwcap2 & kHwcap2I8mm) != 0;
}

#else

void DetectSimd(CpuFeatures&) {}

#endif

int CountUsableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  const int count = CPU_COUNT(&set);
  return count > 0 ? count : 1;
}

}  // namespace

CpuFeatures DetectCpuFeatures() {
  CpuFeatures features;
  DetectSimd(features);
  features.num_usable_cores = CountUsableCores();
  return features;
}

const CpuFeatures& GetCpuFeatures() {
  static const CpuFeatures features = DetectCpuFeatures();  // thread-safe static init
  return features;
}

}  // namespace reprise
