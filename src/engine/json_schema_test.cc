// The JSON-Schema subset (json_schema.h), its byte grammar (json_matcher.h) and the token mask
// (token_constraint.h): the validator against the official JSON-Schema Test Suite (Debian's
// json-schema-test-suite, draft 4, the supported keywords' files; skipped when absent), the
// grammar never accepting an invalid instance of it, random documents of the grammar always
// valid, refusals naming the keyword, and the mask over a real tokenizer.
#include "engine/json_schema.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine/json_matcher.h"
#include "engine/loaded_model.h"
#include "engine/sampler.h"
#include "engine/token_constraint.h"

namespace reprise::engine {
namespace {

using nlohmann::json;

std::string SuiteDir() {
  if (const char* dir = std::getenv("REPRISE_JSON_SCHEMA_TEST_SUITE")) return dir;
  return "/usr/share/json-schema-test-suite/tests/draft4";
}

bool Accepts(const JsonSchema& schema, std::string_view text) {
  JsonMatcher matcher(schema);
  return matcher.Advance(text) && matcher.is_accepting();
}

TEST(JsonSchemaSuiteTest, TheValidatorPassesTheOfficialSuiteForTheSupportedKeywords) {
  const std::string dir = SuiteDir();
  if (!std::filesystem::exists(dir)) {
    GTEST_SKIP() << "the JSON-Schema Test Suite is not at " << dir
                 << " (Debian package json-schema-test-suite, or set "
                    "REPRISE_JSON_SCHEMA_TEST_SUITE)";
  }
  int compiled = 0, refused = 0, tests = 0, grammar_accepted_valid = 0;
  for (const char* file :
       {"additionalProperties", "anyOf", "default", "enum", "items", "maxItems", "maxLength",
        "maximum", "minItems", "minLength", "minimum", "properties", "ref", "required", "type"}) {
    std::ifstream in(dir + "/" + file + ".json");
    ASSERT_TRUE(in) << file;
    const json groups = json::parse(in);
    int compiled_here = 0;
    for (const json& group : groups) {
      const std::string where = std::string(file) + ": " + group["description"].get<std::string>();
      Result<JsonSchema> schema = JsonSchema::Compile(group["schema"]);
      if (!schema.ok()) {
        // Outside the subset: refused with a reason, never compiled wrongly.
        const std::string& message = schema.error().message();
        EXPECT_TRUE(message.find("is not supported") != std::string::npos ||
                    message.find("does not resolve") != std::string::npos)
            << where << ": " << message;
        ++refused;
        continue;
      }
      ++compiled;
      ++compiled_here;
      for (const json& test : group["tests"]) {
        SCOPED_TRACE(where + ": " + test["description"].get<std::string>());
        ++tests;
        const bool valid = test["valid"];
        EXPECT_EQ(schema->Validate(test["data"]), valid);
        // The grammar is sound: never an invalid instance. (It generates compact JSON with
        // declared properties only, so some valid ones are outside it.)
        const std::string text = test["data"].dump();
        const bool accepted = Accepts(*schema, text);
        if (!valid) {
          EXPECT_FALSE(accepted) << text;
        }
        grammar_accepted_valid += valid && accepted;
      }
    }
    EXPECT_GT(compiled_here, 0) << file;
  }
  std::printf("suite: %d schemas compiled (%d tests), %d refused; the grammar accepts %d valid\n",
              compiled, tests, refused, grammar_accepted_valid);
  EXPECT_GT(tests, 140);
}

// Random documents of the grammar: random allowed bytes, stopping at random once complete.
std::vector<std::string> RandomDocuments(const JsonSchema& schema, int count, uint32_t seed) {
  std::mt19937 random(seed);
  std::vector<std::string> out;
  int attempts = 0;
  while (static_cast<int>(out.size()) < count && attempts++ < count * 20) {
    JsonMatcher matcher(schema);
    std::string text;
    bool complete = false;
    while (text.size() < 400) {
      if (matcher.is_finished() || (matcher.is_accepting() && random() % 4 == 0)) {
        complete = true;
        break;
      }
      std::vector<uint8_t> allowed;
      for (int b = 0; b < 256; ++b) {
        JsonMatcher next = matcher;
        if (next.Advance(static_cast<uint8_t>(b))) allowed.push_back(static_cast<uint8_t>(b));
      }
      if (allowed.empty()) {  // complete with nothing more possible (or a dead end: fails)
        complete = matcher.is_accepting();
        break;
      }
      // Closing bytes a little more often, so that documents end.
      uint8_t b = allowed[random() % allowed.size()];
      for (const uint8_t closing : {'"', '}', ']', ','}) {
        if (random() % 3 == 0 &&
            std::find(allowed.begin(), allowed.end(), closing) != allowed.end()) {
          b = closing;
        }
      }
      EXPECT_TRUE(matcher.Advance(b));
      text += static_cast<char>(b);
    }
    EXPECT_FALSE(!complete && text.size() < 400) << "a dead end after " << text;
    if (complete) out.push_back(text);
  }
  return out;
}

TEST(JsonMatcherTest, RandomDocumentsOfTheGrammarAreValid) {
  const char* schemas[] = {
      R"({"type": "object"})",
      R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
          "age": {"type": "integer", "minimum": 0, "maximum": 120},
          "score": {"type": "number", "minimum": -1.5, "exclusiveMaximum": 2.25},
          "tags": {"type": "array", "items": {"enum": ["a", "b", 3, null]}, "minItems": 1,
                   "maxItems": 3},
          "kind": {"const": "person"}, "ok": {"type": "boolean"}},
          "required": ["name", "age", "kind"], "additionalProperties": false})",
      R"({"$defs": {"node": {"type": "object", "properties": {"value": {"type": "integer"},
          "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}},
          "required": ["value", "next"], "additionalProperties": false}},
          "$ref": "#/$defs/node"})",
      R"({"type": ["string", "null"], "minLength": 2, "maxLength": 3})",
      R"({"type": "array", "items": {"type": "number", "minimum": 10, "maximum": 20}})",
      R"({"type": "integer", "exclusiveMinimum": -3, "maximum": 1000})",
  };
  uint32_t seed = 1;
  for (const char* text : schemas) {
    SCOPED_TRACE(text);
    Result<JsonSchema> schema = JsonSchema::Parse(text);
    ASSERT_TRUE(schema.ok()) << schema.error().ToString();
    const std::vector<std::string> documents = RandomDocuments(*schema, 60, seed++);
    EXPECT_GE(documents.size(), 40u);
    for (const std::string& document : documents) {
      const json parsed = json::parse(document, nullptr, false);
      ASSERT_FALSE(parsed.is_discarded()) << document;
      EXPECT_TRUE(schema->Validate(parsed)) << document;
    }
  }
}

TEST(JsonMatcherTest, RequiredPropertiesAndRangesAreEnforcedByteByByte) {
  Result<JsonSchema> schema = JsonSchema::Parse(
      R"({"type": "object", "properties": {"a": {"type": "integer", "maximum": 10},
          "b": {"type": "string"}}, "required": ["a"], "additionalProperties": false})");
  ASSERT_TRUE(schema.ok());
  EXPECT_TRUE(Accepts(*schema, R"({"a":10})"));
  EXPECT_TRUE(Accepts(*schema, R"({"b":"x","a":-4})"));
  EXPECT_FALSE(Accepts(*schema, R"({"b":"x"})"));  // a is required
  EXPECT_FALSE(Accepts(*schema, R"({"a":11})"));   // above the maximum
  EXPECT_FALSE(Accepts(*schema, R"({"a":1,"a":2})"));
  EXPECT_FALSE(Accepts(*schema, R"({"c":1})"));
  JsonMatcher matcher(*schema);
  ASSERT_TRUE(matcher.Advance(R"({"a":1)"));
  EXPECT_FALSE(matcher.Advance('1'));  // 11 and more are all above 10
  EXPECT_TRUE(matcher.Advance('0'));
  EXPECT_TRUE(matcher.Advance('}'));
  EXPECT_TRUE(matcher.is_finished());
  EXPECT_FALSE(matcher.Advance(' '));
}

// Every 1-4 byte sequence a lead byte allows is
// exactly the well-formed UTF-8 of RFC 3629 (no overlongs, no surrogates, nothing past
// U+10FFFF), checked by decoding.
TEST(JsonMatcherTest, Utf8LeadBytesAllowExactlyWellFormedCharacters) {
  int leads = 0;
  for (int byte = 0; byte < 256; ++byte) {
    const std::optional<Utf8Lead> lead = ClassifyUtf8Lead(static_cast<uint8_t>(byte));
    const bool continuation = byte >= 0x80 && byte <= 0xBF;
    if (continuation || byte == 0xC0 || byte == 0xC1 || byte >= 0xF5) {
      EXPECT_FALSE(lead.has_value()) << byte;
      continue;
    }
    ASSERT_TRUE(lead.has_value()) << byte;
    ++leads;
    const int n = lead->num_continuation;
    EXPECT_EQ(n, byte < 0x80 ? 0 : byte < 0xE0 ? 1 : byte < 0xF0 ? 2 : 3) << byte;
    if (n == 0) continue;
    // The first continuation byte's range: exactly the values that decode to a code point of
    // this length that is not a surrogate and not past U+10FFFF.
    for (int c = 0x80; c <= 0xBF; ++c) {
      const uint32_t low_bits = n == 1 ? 6 : n == 2 ? 12 : 18;
      const uint32_t lead_bits = static_cast<uint32_t>(byte) & (n == 1   ? 0x1F
                                                                : n == 2 ? 0x0F
                                                                         : 0x07);
      const uint32_t smallest =
          (lead_bits << low_bits) | ((static_cast<uint32_t>(c) & 0x3F) << (low_bits - 6));
      const uint32_t largest = smallest | ((1u << (low_bits - 6)) - 1);
      const uint32_t min_code = n == 1 ? 0x80 : n == 2 ? 0x800 : 0x10000;
      const bool valid = largest >= min_code && smallest <= 0x10FFFF &&
                         !(smallest >= 0xD800 && smallest <= 0xDFFF);
      EXPECT_EQ(c >= lead->first_lo && c <= lead->first_hi, valid) << byte << " " << c;
    }
  }
  EXPECT_EQ(leads, 128 + 30 + 16 + 5);
}

TEST(JsonSchemaTest, KeywordsOutsideTheSubsetAreRefusedByName) {
  for (const auto& [schema, keyword] : std::vector<std::pair<std::string, std::string>>{
           {R"({"type": "string", "pattern": "^a+$"})", "'pattern' is not supported"},
           {R"({"allOf": [{"type": "string"}]})", "'allOf' is not supported"},
           {R"({"type": "object", "additionalProperties": {"type": "string"}})",
            "'additionalProperties' is not supported"},
           {R"({"items": [{"type": "string"}]})", "'items' is not supported"},
           {R"({"$ref": "http://example.com/schema"})", "'$ref' is not supported"},
           {R"({"$ref": "#/$defs/missing"})", "does not resolve"},
           {R"({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"})",
            "only refers to itself"},
           {R"({"type": "strin"})", "not a JSON type"},
           {R"({"anyOf": [{"type": "string"}], "maxLength": 3})", "'anyOf' is not supported"},
           {R"({"minLength": -1})", "non-negative"},
           {"[1]", "must be an object"},
           {"{", "not valid JSON"},
       }) {
    Result<JsonSchema> compiled = JsonSchema::Parse(schema);
    ASSERT_FALSE(compiled.ok()) << schema;
    EXPECT_EQ(compiled.error().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(compiled.error().message().find(keyword), std::string::npos)
        << schema << " -> " << compiled.error().message();
  }
  std::string deep = R"({"type": "string"})";
  for (int i = 0; i < 40; ++i) deep = R"({"type": "array", "items": )" + deep + "}";
  Result<JsonSchema> too_deep = JsonSchema::Parse(deep);
  ASSERT_FALSE(too_deep.ok());
  EXPECT_NE(too_deep.error().message().find("nests deeper"), std::string::npos);
}

TEST(TokenConstraintTest, MaskedSamplingOverARealTokenizerGivesValidDocuments) {
  const std::string model_path = std::string(REPRISE_SOURCE_DIR) + "/data/demo/stories260K.gguf";
  Result<std::unique_ptr<LoadedModel>> model = LoadedModel::Load(model_path);
  ASSERT_TRUE(model.ok()) << model.error().ToString();
  const tokenizer::Tokenizer& tok = (*model)->tokenizer();
  const TokenTrie trie(tok);
  EXPECT_FALSE(trie.plain().empty());
  Result<JsonSchema> schema = JsonSchema::Parse(
      R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
          "n": {"type": "integer", "minimum": 1, "maximum": 99},
          "pets": {"type": "array", "items": {"enum": ["cat", "dog"]}, "maxItems": 3}},
          "required": ["name", "n", "pets"], "additionalProperties": false})");
  ASSERT_TRUE(schema.ok());
  JsonConstraint constraint(std::move(schema).value(), trie);
  std::mt19937 random(3);
  std::normal_distribution<float> noise(0.0f, 2.0f);
  for (int run = 0; run < 5; ++run) {
    constraint.Reset();
    Result<Sampler> sampler = Sampler::Create({1.0f, 0, 1.0f, static_cast<uint64_t>(run)});
    ASSERT_TRUE(sampler.ok());
    std::string text;
    std::vector<float> logits(tok.num_tokens()), masked;
    for (int step = 0; step < 200 && !constraint.is_finished(); ++step) {
      for (float& x : logits) x = noise(random);  // a random model's logits
      ASSERT_TRUE(constraint.Mask(logits, masked)) << text;
      const int32_t token = sampler->Sample(masked);
      if (tok.IsEndOfGeneration(token)) break;
      constraint.Accept(token, tok.TokenPiece(token));
      text += tok.TokenPiece(token);
    }
    const json parsed = json::parse(text, nullptr, false);
    ASSERT_FALSE(parsed.is_discarded()) << text;
    EXPECT_TRUE(constraint.schema().Validate(parsed)) << text;
  }
}

}  // namespace
}  // namespace reprise::engine
