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

TEST(ApiKeysTest, TheBearerSchemeIsCaseInsensitiveAndMayBeFollowedByTabs) {
  Result<ApiKeys> keys = ApiKeys::Create({"k1:app1"}, "shared");
  ASSERT_TRUE(keys.ok());
  for (const char* header : {"Bearer k1", "bearer k1", "BEARER k1", "bEaReR k1", "Bearer\tk1",
                             "Bearer \t k1", "  Bearer k1  ", "Bearer k1\t"}) {
    EXPECT_EQ(keys->NamespaceOf(header), "app1") << header;
  }
  for (const char* header : {"Bearerk1", "Basic k1", "Bearer", "Bearer ", "Bear k1", "k1 Bearer",
                             "Bearer k1 k1", "Bearer\nk1"}) {
    EXPECT_EQ(keys->NamespaceOf(header), std::nullopt) << header;
  }
  EXPECT_EQ(BearerToken("Bearer\t abc \t"), "abc");
  EXPECT_EQ(BearerToken("Token abc"), std::nullopt);
}

TEST(ApiKeysTest, RefusesBadSpecs) {
  EXPECT_FALSE(ApiKeys::Create({""}, "d").ok());
  EXPECT_FALSE(ApiKeys::Create({":ns"}, "d").ok());
  EXPECT_FALSE(ApiKeys::Create({"k:"}, "d").ok());
  EXPECT_FALSE(ApiKeys::Create({"k:a", "k:b"}, "d").ok());
}

}  // namespace
}  // namespace reprise::server
