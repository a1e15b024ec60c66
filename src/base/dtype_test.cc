#include "base/dtype.h"

#include <gtest/gtest.h>

namespace reprise {
namespace {

TEST(DTypeTest, KnownLayouts) {
  EXPECT_EQ(GetDTypeInfo(DType::kQ8_0).block_bytes, 34u);
  EXPECT_EQ(GetDTypeInfo(DType::kQ4_0).block_bytes, 18u);
  EXPECT_EQ(GetDTypeInfo(DType::kQ4_K).block_elements, 256u);
  EXPECT_EQ(GetDTypeInfo(DType::kQ4_K).block_bytes, 144u);
  EXPECT_EQ(GetDTypeInfo(DType::kQ5_K).block_bytes, 176u);
  EXPECT_EQ(GetDTypeInfo(DType::kQ6_K).block_bytes, 210u);
  EXPECT_EQ(GetDTypeInfo(DType::kBF16).block_bytes, 2u);
}

TEST(DTypeTest, LookupRejectsUnusedIds) {
  EXPECT_TRUE(LookupDType(0).has_value());
  EXPECT_FALSE(LookupDType(4).has_value());   // removed Q4_2
  EXPECT_FALSE(LookupDType(31).has_value());  // removed Q4_0_4_4
  EXPECT_FALSE(LookupDType(1000).has_value());
}

TEST(DTypeTest, ParseNames) {
  EXPECT_EQ(ParseDTypeName("Q8_0"), DType::kQ8_0);
  EXPECT_EQ(ParseDTypeName("q4_k"), DType::kQ4_K);
  EXPECT_EQ(ParseDTypeName("f16"), DType::kF16);
  EXPECT_FALSE(ParseDTypeName("q9_9").has_value());
}

}  // namespace
}  // namespace reprise
