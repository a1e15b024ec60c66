#include "base/float16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace reprise {
namespace {

TEST(Float16Test, RoundTripsEveryHalf) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = F16ToF32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(F16ToF32(F32ToF16(f))));
      continue;
    }
    EXPECT_EQ(F32ToF16(f), h) << "half " << h;
  }
}

TEST(Float16Test, KnownValues) {
  EXPECT_EQ(F32ToF16(1.0f), 0x3c00);
  EXPECT_EQ(F32ToF16(-2.0f), 0xc000);
  EXPECT_EQ(F32ToF16(65504.0f), 0x7bff);
  EXPECT_EQ(F32ToF16(1e6f), 0x7c00);  // overflow to inf
  EXPECT_EQ(F32ToF16(5.9604645e-8f), 0x0001);  // smallest subnormal
  EXPECT_EQ(F16ToF32(0x3555), 0.333251953125f);
  // Halfway between 1 and the next half (1 + 2^-10) rounds to even (1).
  EXPECT_EQ(F32ToF16(1.0f + 0x1.0p-11f), 0x3c00);
  EXPECT_EQ(F32ToF16(1.0f + 0x1.8p-11f), 0x3c01);
}

TEST(Float16Test, BFloat16) {
  EXPECT_EQ(BF16ToF32(F32ToBF16(1.5f)), 1.5f);
  EXPECT_EQ(F32ToBF16(1.0f), 0x3f80);
  EXPECT_EQ(BF16ToF32(0xc040), -3.0f);
  EXPECT_TRUE(std::isnan(BF16ToF32(F32ToBF16(std::numeric_limits<float>::quiet_NaN()))));
}

}  // namespace
}  // namespace reprise
