#include "cli/store_names.h"

#include <gtest/gtest.h>

#include "store/namespace_name.h"

namespace reprise::cli {
namespace {

TEST(ParseChunkIdTest, ReadsHexAsTyped) {
  EXPECT_EQ(*ParseChunkId("1234"), 0x1234u);
  EXPECT_EQ(*ParseChunkId("0x1234"), 0x1234u);
  EXPECT_EQ(*ParseChunkId("00000000000004d2"), 0x4d2u);
  EXPECT_EQ(*ParseChunkId("FFFFFFFFFFFFFFFF"), UINT64_MAX);
  EXPECT_EQ(FormatChunkId(0x1234), "0000000000001234");
}

TEST(ParseChunkIdTest, RejectsWhatStoullWouldThrowOnOrMisread) {
  for (const char* bad : {"", "zz", "0x", "12 34", "-1", "+1", "1234g",
                          "10000000000000000" /* 65 bits */, "0x10000000000000000"}) {
    Result<uint64_t> r = ParseChunkId(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.error().ToString().find(std::string("'") + bad + "'"), std::string::npos)
        << r.error().ToString();
  }
}

TEST(EscapeNameTest, KeepsPrintableUtf8AndEscapesTheRest) {
  EXPECT_EQ(EscapeName("app-1"), "app-1");
  EXPECT_EQ(EscapeName("caf\xc3\xa9 \xe6\x97\xa5"), "caf\xc3\xa9 \xe6\x97\xa5");
  EXPECT_EQ(EscapeName("a\nb"), "a\\nb");
  EXPECT_EQ(EscapeName("a\tb\r"), "a\\tb\\r");
  EXPECT_EQ(EscapeName("\xff"), "\\xff");
  EXPECT_EQ(EscapeName(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(EscapeName("back\\slash"), "back\\\\slash");
  EXPECT_EQ(EscapeName("\x1b[31m"), "\\x1b[31m");            // no terminal escapes
  EXPECT_EQ(EscapeName("\xc0\x80"), "\\xc0\\x80");           // overlong NUL
  EXPECT_EQ(EscapeName("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // surrogate
  EXPECT_EQ(EscapeName("\xc2\x85"), "\\xc2\\x85");           // C1 control (NEL)
  EXPECT_EQ(EscapeName("\xe6\x97"), "\\xe6\\x97");           // cut sequence
}

TEST(CheckNamespaceNameTest, NonEmptyPrintableBounded) {
  EXPECT_TRUE(CheckNamespaceName("default").ok());
  EXPECT_TRUE(CheckNamespaceName("caf\xc3\xa9").ok());
  EXPECT_TRUE(CheckNamespaceName(std::string(store::kMaxNamespaceNameBytes, 'a')).ok());
  for (const std::string& bad :
       {std::string(), std::string("\xff"), std::string("a\nb"), std::string("a\0b", 3),
        std::string(store::kMaxNamespaceNameBytes + 1, 'a')}) {
    Status s = CheckNamespaceName(bad);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << EscapeName(bad);
  }
  EXPECT_NE(CheckNamespaceName("").ToString().find("empty"), std::string::npos);
  EXPECT_NE(CheckNamespaceName("a\nb").ToString().find("'a\\nb'"), std::string::npos)
      << CheckNamespaceName("a\nb").ToString();
}

}  // namespace
}  // namespace reprise::cli
