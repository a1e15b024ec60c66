// Constrained decoding through the public API (GenerateRequest::json_schema) on the demo
// kit's stories260K, a model that never saw JSON: at temperature 1, every reply parses and
// validates; a schema outside the subset is refused naming its keyword.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "engine/json_schema.h"
#include "reprise/engine.h"

namespace reprise {
namespace {

const std::string kModel = std::string(REPRISE_SOURCE_DIR) + "/data/demo/stories260K.gguf";

constexpr const char* kSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 16},
    "age": {"type": "integer", "minimum": 0, "maximum": 120},
    "pets": {"type": "array", "items": {"enum": ["cat", "dog", "bird"]}, "maxItems": 3},
    "owner": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/person"}]}
  },
  "required": ["name", "age", "pets", "owner"],
  "additionalProperties": false,
  "$defs": {"person": {"type": "object", "properties": {"name": {"type": "string",
            "maxLength": 8}}, "required": ["name"], "additionalProperties": false}}
})";

std::unique_ptr<Engine> MakeEngine() {
  EngineOptions options;
  options.model_path = kModel;
  options.context_tokens = 512;
  options.num_threads = 2;
  options.cache_mb = 64;
  Result<std::unique_ptr<Engine>> engine = Engine::Create(options);
  if (!engine.ok()) ADD_FAILURE() << engine.error().ToString();
  return engine.ok() ? std::move(engine).value() : nullptr;
}

TEST(ConstrainedGenerationTest, FiveOfFiveAnswersAtTemperatureOneValidate) {
  std::unique_ptr<Engine> engine = MakeEngine();
  ASSERT_NE(engine, nullptr);
  Result<engine::JsonSchema> schema = engine::JsonSchema::Parse(kSchema);
  ASSERT_TRUE(schema.ok());
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    GenerateRequest request;
    request.messages = {{"user", "Describe a person as JSON."}};
    request.temperature = 1.0f;
    request.top_k = 0;
    request.top_p = 1.0f;
    request.seed = seed;
    request.max_new_tokens = 400;
    request.json_schema = kSchema;
    request.return_logprobs = true;
    Result<GenerateResult> result = engine->Generate(request);
    ASSERT_TRUE(result.ok()) << result.error().ToString();
    EXPECT_EQ(result->stop_reason, "end of generation") << result->text;
    const nlohmann::json reply = nlohmann::json::parse(result->text, nullptr, false);
    ASSERT_FALSE(reply.is_discarded()) << result->text;
    EXPECT_TRUE(schema->Validate(reply)) << result->text;
    // Log-probabilities stay the model's own (before the mask): one per token.
    EXPECT_EQ(result->logprobs.size(), result->generated_tokens.size());
  }
}

TEST(ConstrainedGenerationTest, EveryChoiceIsHeldToTheSchema) {
  std::unique_ptr<Engine> engine = MakeEngine();
  ASSERT_NE(engine, nullptr);
  GenerateRequest request;
  request.prompt = "Once upon a time";
  request.temperature = 1.0f;
  request.seed = 9;
  request.max_new_tokens = 200;
  request.num_choices = 3;
  request.json_schema = R"({"type": "array", "items": {"type": "integer", "minimum": -5,
                           "maximum": 5}, "minItems": 2, "maxItems": 4})";
  Result<GenerateResult> result = engine->Generate(request);
  ASSERT_TRUE(result.ok()) << result.error().ToString();
  ASSERT_EQ(result->more_choices.size(), 2u);
  std::vector<std::string> texts = {result->text};
  for (const GeneratedChoice& c : result->more_choices) texts.push_back(c.text);
  for (const std::string& text : texts) {
    const nlohmann::json reply = nlohmann::json::parse(text, nullptr, false);
    ASSERT_TRUE(reply.is_array()) << text;
    EXPECT_GE(reply.size(), 2u);
    EXPECT_LE(reply.size(), 4u);
    for (const auto& x : reply) {
      EXPECT_TRUE(x.is_number_integer() && x.get<int>() >= -5 && x.get<int>() <= 5) << text;
    }
  }
}

TEST(ConstrainedGenerationTest, ASchemaOutsideTheSubsetIsRefusedNamingTheKeyword) {
  std::unique_ptr<Engine> engine = MakeEngine();
  ASSERT_NE(engine, nullptr);
  GenerateRequest request;
  request.prompt = "x";
  request.json_schema = R"({"type": "string", "pattern": "^a"})";
  Result<GenerateResult> result = engine->Generate(request);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(result.error().message().find("'pattern' is not supported"), std::string::npos)
      << result.error().message();
}

}  // namespace
}  // namespace reprise
