// CpuFeatures: what the processor this process runs on can execute, detected once.
//
// kernels/ picks its SIMD or scalar kernel table from these flags, and the thread pool sizes
// itself from the number of usable cores. Detection uses cpuid, checks with xgetbv that the
// operating system saves the 256-bit registers (AVX state) on context switches, and counts
// the cores this process may run on (sched_getaffinity, so taskset and cgroup cpusets are
// honoured). On AArch64 Linux and Android the kernel's auxiliary vector says which ARM
// extensions the CPU has. On other architectures every SIMD flag is false.
#pragma once

namespace reprise {

struct CpuFeatures {
  bool has_avx = false;   // AVX instructions and OS support for the ymm state
  bool has_avx2 = false;  // implies has_avx
  bool has_fma = false;   // FMA3, implies has_avx
  bool has_f16c = false;  // half-float conversions, implies has_avx
  // AVX-512 Foundation, Byte/Word, Doubleword/Quadword and Vector Length extensions, with OS
  // support for the zmm and mask state; and AVX-512 VNNI (vpdpbusd) on top of them.
  bool has_avx_vnni = false;  // AVX-VNNI (VEX vpdpbusd on ymm), implies has_avx
  bool has_avx512 = false;
  bool has_avx512_vnni = false;  // implies has_avx512
  // ARM (AArch64): Advanced SIMD with the dot-product instructions (sdot/udot, Armv8.2-A
  // DotProd: every phone core since Cortex-A55/A75, Apple M1), from the kernel's HWCAP bits.
  bool has_neon_dotprod = false;
  // ... and the int8 matrix-multiply instructions (smmla/ummla, Armv8.6-A I8MM: Cortex-A710/X2
  // and later cores, Snapdragon 8 Gen 1 and later), from HWCAP2.
  bool has_neon_i8mm = false;
  int num_usable_cores = 1;  // cores in this process's affinity mask, at least 1

  // The set the AVX2 kernels of kernels/ are compiled for (-mavx2 -mfma -mf16c).
  bool has_avx2_fma_f16c() const { return has_avx2 && has_fma && has_f16c; }
  // The set the AVX-VNNI kernels are compiled for (the AVX2 set and -mavxvnni).
  bool has_avx_vnni_set() const { return has_avx2_fma_f16c() && has_avx_vnni; }
  // The set the AVX-512 VNNI kernels are compiled for (the AVX2 set, -mavx512f/bw/dq/vl/vnni).
  bool has_avx512_vnni_set() const { return has_avx2_fma_f16c() && has_avx512_vnni; }
  // The set the NEON I8MM kernels are compiled for (-march=armv8.2-a+dotprod+i8mm).
  bool has_neon_i8mm_set() const { return has_neon_dotprod && has_neon_i8mm; }
};

// Runs the detection now (a few cpuid instructions and one system call).
CpuFeatures DetectCpuFeatures();

// The features detected on first use, then cached. Thread-safe.
const CpuFeatures& GetCpuFeatures();

}  // namespace reprise
