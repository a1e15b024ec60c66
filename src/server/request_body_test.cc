#include "server/request_body.h"

#include <gtest/gtest.h>

#include "server/server_test_support.h"

namespace reprise::server {
namespace {

using test_support::Compress;

std::string Gzip(const std::string& text) { return Compress(text, 15 + 16); }

int StatusOf(const std::optional<HttpError>& error) { return error ? error->http_status : 0; }

TEST(RequestBodyTest, IdentityAndNoEncodingLeaveTheBody) {
  for (const char* encoding : {"", "identity", "IDENTITY"}) {
    std::string body = "{\"a\": 1}";
    EXPECT_EQ(StatusOf(DecodeContentEncoding(encoding, body, 1024)), 0) << encoding;
    EXPECT_EQ(body, "{\"a\": 1}");
  }
}

TEST(RequestBodyTest, GzipAndDeflateInflate) {
  const std::string text(100000, 'x');
  for (const auto& [encoding, coded] : {std::pair<std::string, std::string>{"gzip", Gzip(text)},
                                        {"x-gzip", Gzip(text)},
                                        {"GZip", Gzip(text)},
                                        {"deflate", Compress(text, 15)},
                                        {"identity, gzip", Gzip(text)}}) {
    std::string body = coded;
    EXPECT_EQ(StatusOf(DecodeContentEncoding(encoding, body, 1 << 20)), 0) << encoding;
    EXPECT_EQ(body, text) << encoding;
  }
  // gzip members one after the other make one body.
  std::string two = Gzip("first ") + Gzip("second");
  EXPECT_EQ(StatusOf(DecodeContentEncoding("gzip", two, 1024)), 0);
  EXPECT_EQ(two, "first second");
}

TEST(RequestBodyTest, TheLimitAppliesToTheInflatedSize) {
  std::string bomb = Gzip(std::string(64 << 20, 'a'));  // 64 MiB in about 64 KB
  ASSERT_LT(bomb.size(), 1u << 20);
  const std::optional<HttpError> error = DecodeContentEncoding("gzip", bomb, 1 << 20);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->http_status, 413);
  EXPECT_NE(error->body.find("inflates to more than"), std::string::npos) << error->body;
  // Exactly at the limit is taken.
  std::string fits = Gzip(std::string(4096, 'b'));
  EXPECT_EQ(StatusOf(DecodeContentEncoding("gzip", fits, 4096)), 0);
  EXPECT_EQ(fits.size(), 4096u);
  std::string over = Gzip(std::string(4097, 'b'));
  EXPECT_EQ(StatusOf(DecodeContentEncoding("gzip", over, 4096)), 413);
}

TEST(RequestBodyTest, BadDataIs400) {
  const std::string good = Gzip("hello world");
  std::string truncated = good.substr(0, good.size() - 6);
  std::string garbage = "not gzip at all";
  std::string empty;
  std::string trailing = Compress("hello", 15) + "junk";
  std::string raw_deflate = Compress("hello", -15);
  EXPECT_EQ(StatusOf(DecodeContentEncoding("gzip", truncated, 1024)), 400);
  EXPECT_EQ(StatusOf(DecodeContentEncoding("gzip", garbage, 1024)), 400);
  EXPECT_EQ(StatusOf(DecodeContentEncoding("gzip", empty, 1024)), 400);
  EXPECT_EQ(StatusOf(DecodeContentEncoding("deflate", trailing, 1024)), 400);
  EXPECT_EQ(StatusOf(DecodeContentEncoding("deflate", raw_deflate, 1024)), 400);
}

TEST(RequestBodyTest, OtherCodingsAre415) {
  for (const char* encoding : {"br", "compress", "zstd", "gzip, gzip", "gzip, br", "gzip;q=1"}) {
    std::string body = Gzip("x");
    const std::optional<HttpError> error = DecodeContentEncoding(encoding, body, 1024);
    EXPECT_EQ(StatusOf(error), 415) << encoding;
    if (error) {
      EXPECT_NE(error->body.find("Content-Encoding"), std::string::npos) << encoding;
    }
  }
}

}  // namespace
}  // namespace reprise::server
