#include "server/api_keys.h"

#include <gtest/gtest.h>

namespace reprise::server {
namespace {

TEST(ApiKeysTest, WithoutKeysEveryRequestIsInTheDefaultNamespace) {
  Result<ApiKeys> keys = ApiKeys::Create({}, "default");
  ASSERT_TRUE(keys.ok());
  EXPECT_FALSE(keys->enabled());
  EXPECT_EQ(keys->NamespaceOf(""), "default");
  EXPECT_EQ(keys->NamespaceOf("Bearer anything"), "default");
}

TEST(ApiKeysTest, KeysMapToTheirNamespaces) {
  Result<ApiKeys> keys = ApiKeys::Create({"k1:app1", "k2:app2", "k3"}, "shared");
  ASSERT_TRUE(keys.ok());
  EXPECT_TRUE(keys->enabled());
  EXPECT_EQ(keys->NamespaceOf("Bearer k1"), "app1");
  EXPECT_EQ(keys->NamespaceOf("Bearer k2"), "app2");
  EXPECT_EQ(keys->NamespaceOf("Bearer k3"), "shared");
  EXPECT_EQ(keys->NamespaceOf("Bearer k4"), std::nullopt);
  EXPECT_EQ(keys->NamespaceOf("Bearer k"), std::nullopt);
  EXPECT_EQ(keys->NamespaceOf("k1"), std::nullopt);
  EXPECT_EQ(keys->NamespaceOf(""), std::nullopt);
}

TEST(ApiKeysTest, RefusesBadSpecs) {
  EXPECT_FALSE(ApiKeys::Create({""}, "d").ok());
  EXPECT_FALSE(ApiKeys::Create({":ns"}, "d").ok());
  EXPECT_FALSE(ApiKeys::Create({"k:"}, "d").ok());
  EXPECT_FALSE(ApiKeys::Create({"k:a", "k:b"}, "d").ok());
}

}  // namespace
}  // namespace reprise::server
