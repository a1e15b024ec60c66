// ValidateNamespaceName: length, UTF-8 and control-character rules.
#include "store/namespace_name.h"

#include <gtest/gtest.h>

#include <string>

namespace reprise::store {
namespace {

TEST(NamespaceNameTest, AcceptsOrdinaryAndUnicodeNames) {
  EXPECT_TRUE(ValidateNamespaceName("app").ok());
  EXPECT_TRUE(ValidateNamespaceName("team-7/api key_2.v1").ok());
  EXPECT_TRUE(ValidateNamespaceName("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80").ok());
  EXPECT_TRUE(ValidateNamespaceName(std::string(kMaxNamespaceNameBytes, 'x')).ok());
}

TEST(NamespaceNameTest, RejectsEmptyLongInvalidUtf8AndControlCharacters) {
  for (const std::string& bad : {
           std::string(),
           std::string(kMaxNamespaceNameBytes + 1, 'x'),
           std::string("a\0b", 3),
           std::string("tab\there"),
           std::string("new\nline"),
           std::string("del\x7f"),
           std::string("c1 \xc2\x85"),        // U+0085, a C1 control
           std::string("lone \x80"),          // continuation byte without a lead
           std::string("cut \xe6\x97"),       // truncated sequence
           std::string("overlong \xc0\xaf"),  // '/' in two bytes
           std::string("surrogate \xed\xa0\x80"),
           std::string("too big \xf4\x90\x80\x80"),
           std::string("\xff"),
       }) {
    const Status status = ValidateNamespaceName(bad);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << "accepted: " << bad;
  }
}

}  // namespace
}  // namespace reprise::store
