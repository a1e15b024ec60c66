#include "base/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace reprise {
namespace {

Result<int> ParsePositive(int x) {
  if (x <= 0) return InvalidArgumentError("not positive: " + std::to_string(x));
  return x;
}

Result<int> Doubled(int x) {
  REPRISE_ASSIGN_OR_RETURN(int v, ParsePositive(x));
  return v * 2;
}

Status CheckBoth(int a, int b) {
  REPRISE_RETURN_IF_ERROR(ParsePositive(a));
  REPRISE_RETURN_IF_ERROR(ParsePositive(b));
  return Status::Ok();
}

TEST(StatusTest, OkAndErrorsCarryCodeAndMessage) {
  EXPECT_TRUE(Status::Ok().ok());
  Status s = CorruptError("bad magic");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kCorrupt);
  EXPECT_EQ(s.ToString(), "Corrupt: bad magic");
  EXPECT_EQ(s.WithContext("model.gguf").ToString(), "Corrupt: model.gguf: bad magic");
  EXPECT_TRUE(Status::Ok().WithContext("x").ok());
}

TEST(StatusTest, ResultHoldsValueOrError) {
  Result<int> good = Doubled(4);
  ASSERT_TRUE(good.has_value());
  EXPECT_EQ(*good, 8);
  Result<int> bad = Doubled(-1);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.value_or(7), 7);
}

TEST(StatusTest, ReturnIfErrorStopsAtFirstFailure) {
  EXPECT_TRUE(CheckBoth(1, 2).ok());
  Status s = CheckBoth(1, -3);
  EXPECT_EQ(s.message(), "not positive: -3");
}

TEST(StatusTest, ResultOfMoveOnlyType) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(5);
  ASSERT_TRUE(r.ok());
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 5);
  Result<std::unique_ptr<int>> moved = Result<std::unique_ptr<int>>(NotFoundError("x"));
  Result<std::unique_ptr<int>> other = std::move(moved);
  EXPECT_EQ(other.error().code(), StatusCode::kNotFound);
}

TEST(StatusTest, ResultFromOkStatusIsInternalError) {
  Result<int> r(Status::Ok());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kInternal);
}

TEST(StatusDeathTest, ValueOfErrorAborts) {
  Result<int> r = NotFoundError("gone");
  EXPECT_DEATH((void)r.value(), "gone");
}

}  // namespace
}  // namespace reprise
