#include "base/cpu_features.h"

#include <gtest/gtest.h>
#include <sched.h>

namespace reprise {
namespace {

TEST(CpuFeaturesTest, FlagsAreConsistent) {
  const CpuFeatures features = DetectCpuFeatures();
  if (features.has_avx2 || features.has_fma || features.has_f16c) {
    EXPECT_TRUE(features.has_avx);
  }
  EXPECT_EQ(features.has_avx2_fma_f16c(),
            features.has_avx2 && features.has_fma && features.has_f16c);
  EXPECT_EQ(features.has_neon_i8mm_set(), features.has_neon_dotprod && features.has_neon_i8mm);
#if !defined(__aarch64__)
  EXPECT_FALSE(features.has_neon_dotprod || features.has_neon_i8mm);
#endif
}

TEST(CpuFeaturesTest, CountsTheAffinityMask) {
  const CpuFeatures features = DetectCpuFeatures();
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_EQ(features.num_usable_cores, CPU_COUNT(&set));
  EXPECT_GE(features.num_usable_cores, 1);
}

TEST(CpuFeaturesTest, CachedCopyMatchesDetection) {
  const CpuFeatures& cached = GetCpuFeatures();
  const CpuFeatures fresh = DetectCpuFeatures();
  EXPECT_EQ(cached.has_avx2, fresh.has_avx2);
  EXPECT_EQ(cached.has_fma, fresh.has_fma);
  EXPECT_EQ(cached.has_f16c, fresh.has_f16c);
  EXPECT_EQ(cached.has_avx512_vnni, fresh.has_avx512_vnni);
  EXPECT_EQ(cached.has_neon_dotprod, fresh.has_neon_dotprod);
  EXPECT_EQ(cached.has_neon_i8mm, fresh.has_neon_i8mm);
  EXPECT_EQ(&cached, &GetCpuFeatures());
}

#if defined(__x86_64__)
// Every machine this project targets has them (PERF.md); the check documents the assumption
// and catches a broken xgetbv test, which would silently force the scalar kernels.
TEST(CpuFeaturesTest, DetectsAvx2WhereTheCompilerSeesIt) {
  __builtin_cpu_init();
  const bool builtin = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  EXPECT_EQ(DetectCpuFeatures().has_avx2 && DetectCpuFeatures().has_fma, builtin);
}

// The same for the AVX-512 VNNI kernels' set (GCC's and Clang's checks include the OS's zmm
// state, as ours does).
TEST(CpuFeaturesTest, DetectsAvx512VnniWhereTheCompilerSeesIt) {
  __builtin_cpu_init();
  const bool builtin = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                       __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                       __builtin_cpu_supports("avx512vnni");
  EXPECT_EQ(DetectCpuFeatures().has_avx512_vnni, builtin);
  EXPECT_TRUE(!DetectCpuFeatures().has_avx512_vnni || DetectCpuFeatures().has_avx512);
  EXPECT_EQ(DetectCpuFeatures().has_avx_vnni, __builtin_cpu_supports("avxvnni") != 0);
}
#endif

}  // namespace
}  // namespace reprise
