// A JSON-Schema subset compiled for constrained decoding (OpenAI's response_format
// json_schema): the schema as a graph of nodes that a JsonMatcher (json_matcher.h) walks byte
// by byte, and a validator of parsed instances against it (what the generated text must pass).
//
// Supported keywords: type (a name or a list), properties, required, additionalProperties
// (true or false), items (one schema), minItems, maxItems, minLength, maxLength, minimum,
// maximum, exclusiveMinimum, exclusiveMaximum (draft 4 booleans or later drafts' numbers),
// enum, const, anyOf, $ref to "#", "#/$defs/<name>" or "#/definitions/<name>", and the
// annotations title, description, default, examples, format, $schema, $id, $comment. Any
// other keyword is refused with InvalidArgument naming it (e.g. "'pattern' is not supported").
// anyOf and enum/const are taken alone or beside annotations (a schema that mixes them with
// other constraints is refused: the grammar could not honour both).
//
// What the grammar generates is a subset of the valid instances: compact JSON (no
// whitespace), declared properties only (in any order), no \u escapes in strings, numbers of
// at most 15 integer and 15 fraction digits (no exponent under a minimum or maximum).
// Nesting is bounded: kMaxSchemaDepth levels of schema objects, kMaxJsonDepth of generated
// values.
//
// Immutable after Compile; thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace reprise::engine {

inline constexpr int kMaxSchemaDepth = 32;    // nested schema objects, compiled
inline constexpr int kMaxJsonDepth = 24;      // nested values, generated or validated
inline constexpr int kMaxSchemaNodes = 4096;  // schemas in one document
inline constexpr int kMaxProperties = 64;     // declared properties of one object
inline constexpr int kMaxEnumValues = 1024;   // values of one enum

// JSON types as a bit set.
enum JsonType : uint8_t {
  kTypeNull = 1,
  kTypeBoolean = 2,
  kTypeObject = 4,
  kTypeArray = 8,
  kTypeNumber = 16,   // any number (an integer is a number too)
  kTypeInteger = 32,  // only integers (when kTypeNumber is not set)
  kTypeString = 64,
  kTypeAll = 127,
};

struct SchemaNode {
  uint8_t types = kTypeAll;
  // Objects.
  struct Property {
    std::string name;
    std::string escaped;  // the name as compact JSON writes it between its quotes
    int node = -1;
    bool required = false;
  };
  std::vector<Property> properties;
  bool additional_properties = true;  // validation only: the grammar adds no undeclared ones
  std::vector<std::string> required_undeclared;  // required names without a schema
  // Arrays.
  int items = -1;  // -1: any value
  int64_t min_items = 0;
  int64_t max_items = -1;  // -1: no limit
  // Strings (in Unicode code points).
  int64_t min_length = 0;
  int64_t max_length = -1;
  // Numbers.
  std::optional<double> minimum, maximum;
  bool exclusive_minimum = false, exclusive_maximum = false;
  // enum / const: the allowed values, and their compact JSON texts (what is generated).
  bool has_values = false;
  std::vector<nlohmann::json> values;
  std::vector<std::string> value_texts;
  // anyOf: the alternatives (the node is one of them).
  std::vector<int> any_of;
  bool is_any() const;  // no constraint at all
};

class JsonSchema {
 public:
  // Errors: InvalidArgument (not valid JSON, not a schema, a keyword outside the subset
  // named, nesting past kMaxSchemaDepth, a $ref that does not resolve or only loops).
  static Result<JsonSchema> Compile(const nlohmann::json& schema);
  static Result<JsonSchema> Parse(std::string_view schema_text);

  // Whether `instance` is valid against the schema.
  bool Validate(const nlohmann::json& instance) const;

  int root() const { return root_; }
  const SchemaNode& node(int index) const { return nodes_[static_cast<size_t>(index)]; }

 private:
  JsonSchema() = default;
  bool ValidateAt(int node, const nlohmann::json& instance, int depth) const;
  friend class SchemaCompiler;
  std::vector<SchemaNode> nodes_;
  int root_ = 0;
};

// The number of Unicode code points in valid UTF-8 `text`.
int64_t CodePoints(std::string_view text);

}  // namespace reprise::engine
