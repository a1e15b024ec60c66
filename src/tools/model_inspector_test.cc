#include "tools/model_inspector.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace reprise::tools {
namespace {

// Counts past 2^31 printed as negative numbers when they were ints.
TEST(ModelReportTest, PrintsLargeCountsUnsigned) {
  ModelReport r;
  r.info.tokenizer = "BPE (gpt2, pre default)";
  r.info.tokenizer_tokens = 3'000'000'000ull;
  r.info.num_tensors = 5'000'000'000ull;
  r.info.tensor_types["f16"] = 4'294'967'296ull;
  const std::string text = r.ToText();
  EXPECT_NE(text.find("3000000000 tokens"), std::string::npos) << text;
  EXPECT_NE(text.find("5000000000 tensors"), std::string::npos) << text;
  EXPECT_NE(text.find("f16 x4294967296"), std::string::npos) << text;
  EXPECT_EQ(text.find('-'), std::string::npos) << text;
  nlohmann::json j = nlohmann::json::parse(r.ToJson());
  EXPECT_EQ(j["tokenizer_size"].get<uint64_t>(), 3'000'000'000ull);
  EXPECT_EQ(j["num_tensors"].get<uint64_t>(), 5'000'000'000ull);
}

// nlohmann's default dump threw on invalid UTF-8 (from the file's strings or its path).
TEST(ModelReportTest, JsonReplacesInvalidUtf8) {
  ModelReport r;
  r.path = "/models/\xff\xfe.gguf";
  r.info.name = "bad \xc3";
  r.info.architecture = "\x80";
  nlohmann::json j = nlohmann::json::parse(r.ToJson());
  EXPECT_EQ(j["path"], "/models/\xef\xbf\xbd\xef\xbf\xbd.gguf");
  EXPECT_EQ(j["name"], "bad \xef\xbf\xbd");
  EXPECT_EQ(j["architecture"], "\xef\xbf\xbd");
}

}  // namespace
}  // namespace reprise::tools
