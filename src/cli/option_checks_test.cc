#include "cli/option_checks.h"

#include <gtest/gtest.h>

#include "engine/store_settings.h"

namespace reprise::cli {
namespace {

// The validator's message for `input`; "" when accepted.
std::string Check(const CLI::Validator& v, std::string input) { return v(input); }

TEST(OptionChecksTest, FiniteInRejectsNanAndInfinityByName) {
  const CLI::Validator v = FiniteIn(0.0, 100.0);
  EXPECT_EQ(Check(v, "0"), "");
  EXPECT_EQ(Check(v, "0.7"), "");
  EXPECT_EQ(Check(v, "100"), "");
  for (const char* bad : {"nan", "NaN", "-nan", "inf", "-inf", "infinity"}) {
    const std::string message = Check(v, bad);
    EXPECT_NE(message.find("finite"), std::string::npos) << bad << ": " << message;
  }
  EXPECT_NE(Check(v, "-0.5"), "");
  EXPECT_NE(Check(v, "100.5"), "");
  EXPECT_NE(Check(v, "abc"), "");
  EXPECT_NE(Check(v, ""), "");
}

TEST(OptionChecksTest, FiniteAboveExcludesTheLowerBound) {
  const CLI::Validator v = FiniteAbove(0.0, 1.0);
  EXPECT_NE(Check(v, "0"), "");
  EXPECT_NE(Check(v, "-0.1"), "");
  EXPECT_EQ(Check(v, "0.0001"), "");
  EXPECT_EQ(Check(v, "1"), "");
  EXPECT_NE(Check(v, "1.01"), "");
  EXPECT_NE(Check(v, "nan"), "");
  EXPECT_NE(Check(v, "0").find("(0, 1]"), std::string::npos) << Check(v, "0");
}

TEST(OptionChecksTest, IntegerInChecksBoundsAndSyntax) {
  const CLI::Validator v = IntegerIn(1, 100);
  EXPECT_EQ(Check(v, "1"), "");
  EXPECT_EQ(Check(v, "100"), "");
  EXPECT_NE(Check(v, "0"), "");
  EXPECT_NE(Check(v, "-1"), "");
  EXPECT_NE(Check(v, "101"), "");
  EXPECT_NE(Check(v, "1.5"), "");
  EXPECT_NE(Check(v, "x"), "");
  EXPECT_NE(Check(v, "99999999999999999999999"), "");  // saturates, then out of range
  EXPECT_NE(Check(v, "0").find("[1, 100]"), std::string::npos);
}

TEST(OptionChecksTest, BudgetMibStopsBeforeTheShiftOverflows) {
  const CLI::Validator v = BudgetMib();
  EXPECT_EQ(Check(v, "1"), "");
  EXPECT_EQ(Check(v, std::to_string(engine::kMaxBudgetMib)), "");
  EXPECT_NE(Check(v, std::to_string(engine::kMaxBudgetMib + 1)), "");
  EXPECT_NE(Check(v, "0"), "");
  // 2^44 MiB << 20 wraps to 0 in 64 bits; 2^44 + 1 MiB to exactly 1 MiB.
  EXPECT_NE(Check(v, "17592186044417"), "");
  EXPECT_NE(Check(v, "9223372036854775807"), "");
}

TEST(OptionChecksTest, ChunkIds) {
  EXPECT_EQ(Check(ChunkIdText(), "00000000000004d2"), "");
  EXPECT_NE(Check(ChunkIdText(), "zz").find("'zz'"), std::string::npos);
  EXPECT_NE(Check(ChunkIdText(), "10000000000000000"), "");
}

TEST(OptionChecksTest, NamespaceNames) {
  EXPECT_EQ(Check(NewNamespaceName(), "app"), "");
  EXPECT_NE(Check(NewNamespaceName(), ""), "");
  EXPECT_NE(Check(NewNamespaceName(), "\xff"), "");
  EXPECT_NE(Check(NewNamespaceName(), "a\nb"), "");
  EXPECT_EQ(Check(ExistingNamespaceName(), "app"), "");
  EXPECT_EQ(Check(ExistingNamespaceName(), "\xff"), "");  // old stores may hold it
  EXPECT_NE(Check(ExistingNamespaceName(), ""), "");
}

TEST(OptionChecksTest, FoldersMustBeNamed) {
  EXPECT_EQ(Check(NonEmptyFolder(), "/tmp/store"), "");
  EXPECT_NE(Check(NonEmptyFolder(), "").find("must not be empty"), std::string::npos);
}

TEST(BudgetMibToBytesTest, ConvertsInRangeAndRejectsTheRest) {
  Result<int64_t> one = engine::BudgetMibToBytes(1, "--disk-mb");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, int64_t{1} << 20);
  Result<int64_t> max = engine::BudgetMibToBytes(engine::kMaxBudgetMib, "--disk-mb");
  ASSERT_TRUE(max.ok());
  EXPECT_EQ(*max, int64_t{16} << 40);
  for (int64_t bad :
       {int64_t{0}, int64_t{-1}, engine::kMaxBudgetMib + 1, (int64_t{1} << 44) + 1, INT64_MAX}) {
    Result<int64_t> r = engine::BudgetMibToBytes(bad, "--disk-mb");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.error().ToString().find("--disk-mb"), std::string::npos) << r.error().ToString();
  }
}

}  // namespace
}  // namespace reprise::cli
