#include "engine/json_schema.h"

#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <utility>

namespace reprise::engine {
namespace {

using nlohmann::json;

const std::set<std::string_view>& Annotations() {
  static const std::set<std::string_view> names = {
      "title", "description", "default",  "examples", "format",     "$schema",
      "$id",   "id",          "$comment", "$defs",    "definitions"};
  return names;
}

const std::set<std::string_view>& ConstraintKeywords() {
  static const std::set<std::string_view> names = {"type",
                                                   "properties",
                                                   "required",
                                                   "additionalProperties",
                                                   "items",
                                                   "minItems",
                                                   "maxItems",
                                                   "minLength",
                                                   "maxLength",
                                                   "minimum",
                                                   "maximum",
                                                   "exclusiveMinimum",
                                                   "exclusiveMaximum",
                                                   "enum",
                                                   "const"};
  return names;
}

Status Unsupported(std::string_view keyword, std::string_view where, std::string_view why = "") {
  return InvalidArgumentError("'" + std::string(keyword) + "' is not supported" +
                              (why.empty() ? "" : " " + std::string(why)) + " (at " +
                              std::string(where) + ")");
}

Result<uint8_t> TypeBit(const json& name, std::string_view where) {
  if (!name.is_string())
    return InvalidArgumentError("'type' must name types (at " + std::string(where) + ")");
  const std::string& n = name.get_ref<const std::string&>();
  if (n == "null") return uint8_t{kTypeNull};
  if (n == "boolean") return uint8_t{kTypeBoolean};
  if (n == "object") return uint8_t{kTypeObject};
  if (n == "array") return uint8_t{kTypeArray};
  if (n == "number") return uint8_t{kTypeNumber};
  if (n == "integer") return uint8_t{kTypeInteger};
  if (n == "string") return uint8_t{kTypeString};
  return InvalidArgumentError("'type' \"" + n + "\" is not a JSON type (at " + std::string(where) +
                              ")");
}

Result<int64_t> CountKeyword(const json& schema, const char* keyword, std::string_view where) {
  const json& v = schema[keyword];
  if (!v.is_number_integer() ||
      (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0)) {
    return InvalidArgumentError("'" + std::string(keyword) +
                                "' must be a non-negative integer (at " + std::string(where) + ")");
  }
  return v.is_number_unsigned()
             ? static_cast<int64_t>(std::min<uint64_t>(v.get<uint64_t>(), INT64_MAX))
             : v.get<int64_t>();
}

// "%25" -> "%" in a $ref's pointer.
std::string PercentDecode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() &&
        std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

bool IsInteger(const json& v) {
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  return std::isfinite(d) && d == std::floor(d);
}

}  // namespace

bool SchemaNode::is_any() const {
  return types == kTypeAll && properties.empty() && additional_properties &&
         required_undeclared.empty() && items < 0 && min_items == 0 && max_items < 0 &&
         min_length == 0 && max_length < 0 && !minimum && !maximum && !has_values && any_of.empty();
}

int64_t CodePoints(std::string_view text) {
  int64_t n = 0;
  for (const char c : text) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  }
  return n;
}

// Compiles one schema document (recursively, bounded) into JsonSchema's nodes.
class SchemaCompiler {
 public:
  explicit SchemaCompiler(const json& document) : document_(document) {}

  Result<int> Compile(const json& schema, const std::string& path, int depth) {
    if (depth > kMaxSchemaDepth) {
      return InvalidArgumentError("the schema nests deeper than " +
                                  std::to_string(kMaxSchemaDepth) + " levels (at " + path + ")");
    }
    if (schema.is_boolean()) {
      const int index = NewNode();
      if (index < 0) return TooMany();
      if (!schema.get<bool>()) {
        return Unsupported("false", path, "as a schema (nothing is valid)");
      }
      return index;
    }
    if (!schema.is_object())
      return InvalidArgumentError("a schema must be an object (at " + path + ")");
    if (auto ref = schema.find("$ref"); ref != schema.end()) return CompileRef(*ref, path, depth);
    if (auto it = memo_.find(&schema); it != memo_.end()) return it->second;
    const int index = NewNode();
    if (index < 0) return TooMany();
    memo_[&schema] = index;
    SchemaNode node;
    bool has_constraint = false;
    for (const auto& [key, value] : schema.items()) {
      if (Annotations().contains(key)) continue;
      if (key == "anyOf") continue;
      if (!ConstraintKeywords().contains(key)) return Unsupported(key, path);
      has_constraint = true;
    }
    if (auto any_of = schema.find("anyOf"); any_of != schema.end()) {
      if (has_constraint) {
        return Unsupported("anyOf", path, "beside other constraints (put them in each branch)");
      }
      if (!any_of->is_array() || any_of->empty()) {
        return InvalidArgumentError("'anyOf' must be a non-empty array (at " + path + ")");
      }
      for (size_t i = 0; i < any_of->size(); ++i) {
        REPRISE_ASSIGN_OR_RETURN(
            const int alternative,
            Compile((*any_of)[i], path + "/anyOf/" + std::to_string(i), depth + 1));
        node.any_of.push_back(alternative);
      }
      nodes_[static_cast<size_t>(index)] = std::move(node);
      return index;
    }
    if (auto type = schema.find("type"); type != schema.end()) {
      node.types = 0;
      if (type->is_array()) {
        if (type->empty())
          return InvalidArgumentError("'type' must not be empty (at " + path + ")");
        for (const json& t : *type) {
          REPRISE_ASSIGN_OR_RETURN(const uint8_t bit, TypeBit(t, path));
          node.types |= bit;
        }
      } else {
        REPRISE_ASSIGN_OR_RETURN(node.types, TypeBit(*type, path));
      }
      if (node.types & kTypeNumber) node.types &= static_cast<uint8_t>(~kTypeInteger);
    }
    if (auto properties = schema.find("properties"); properties != schema.end()) {
      if (!properties->is_object())
        return InvalidArgumentError("'properties' must be an object (at " + path + ")");
      if (properties->size() > kMaxProperties) {
        return InvalidArgumentError("more than " + std::to_string(kMaxProperties) +
                                    " properties in one object (at " + path + ")");
      }
      for (const auto& [name, sub] : properties->items()) {
        SchemaNode::Property p;
        p.name = name;
        const std::string quoted = json(name).dump(-1, ' ', false, json::error_handler_t::replace);
        p.escaped = quoted.substr(1, quoted.size() - 2);
        REPRISE_ASSIGN_OR_RETURN(p.node, Compile(sub, path + "/properties/" + name, depth + 1));
        node.properties.push_back(std::move(p));
      }
    }
    if (auto required = schema.find("required"); required != schema.end()) {
      if (!required->is_array())
        return InvalidArgumentError("'required' must be an array (at " + path + ")");
      for (const json& name : *required) {
        if (!name.is_string())
          return InvalidArgumentError("'required' must list names (at " + path + ")");
        bool declared = false;
        for (SchemaNode::Property& p : node.properties) {
          if (p.name == name.get_ref<const std::string&>()) declared = p.required = true;
        }
        if (!declared) node.required_undeclared.push_back(name.get<std::string>());
      }
    }
    if (auto additional = schema.find("additionalProperties"); additional != schema.end()) {
      if (!additional->is_boolean()) {
        return Unsupported("additionalProperties", path, "as a schema (only true or false)");
      }
      node.additional_properties = additional->get<bool>();
    }
    if (auto items = schema.find("items"); items != schema.end()) {
      if (items->is_array()) return Unsupported("items", path, "as a list of schemas");
      REPRISE_ASSIGN_OR_RETURN(node.items, Compile(*items, path + "/items", depth + 1));
    }
    if (schema.contains("minItems")) {
      REPRISE_ASSIGN_OR_RETURN(node.min_items, CountKeyword(schema, "minItems", path));
    }
    if (schema.contains("maxItems")) {
      REPRISE_ASSIGN_OR_RETURN(node.max_items, CountKeyword(schema, "maxItems", path));
    }
    if (schema.contains("minLength")) {
      REPRISE_ASSIGN_OR_RETURN(node.min_length, CountKeyword(schema, "minLength", path));
    }
    if (schema.contains("maxLength")) {
      REPRISE_ASSIGN_OR_RETURN(node.max_length, CountKeyword(schema, "maxLength", path));
    }
    for (const char* keyword : {"minimum", "maximum"}) {
      if (auto v = schema.find(keyword); v != schema.end()) {
        if (!v->is_number())
          return InvalidArgumentError("'" + std::string(keyword) + "' must be a number (at " +
                                      path + ")");
        (keyword[1] == 'i' ? node.minimum : node.maximum) = v->get<double>();
      }
    }
    for (const char* keyword : {"exclusiveMinimum", "exclusiveMaximum"}) {
      auto v = schema.find(keyword);
      if (v == schema.end()) continue;
      const bool is_min = keyword[10] == 'i';  // exclusiveM[i]nimum
      if (v->is_boolean()) {                   // draft 4: modifies minimum / maximum
        (is_min ? node.exclusive_minimum : node.exclusive_maximum) = v->get<bool>();
      } else if (v->is_number()) {  // later drafts: a bound of its own
        std::optional<double>& bound = is_min ? node.minimum : node.maximum;
        const double x = v->get<double>();
        const bool tighter = !bound || (is_min ? x >= *bound : x <= *bound);
        if (tighter) {
          bound = x;
          (is_min ? node.exclusive_minimum : node.exclusive_maximum) = true;
        }
      } else {
        return InvalidArgumentError("'" + std::string(keyword) + "' must be a number (at " + path +
                                    ")");
      }
    }
    if (auto values = schema.find("enum"); values != schema.end()) {
      if (!values->is_array())
        return InvalidArgumentError("'enum' must be an array (at " + path + ")");
      if (values->size() > static_cast<size_t>(kMaxEnumValues)) {
        return InvalidArgumentError("'enum' lists more than " + std::to_string(kMaxEnumValues) +
                                    " values (at " + path + ")");
      }
      node.has_values = true;
      for (const json& v : *values) node.values.push_back(v);
    }
    if (auto value = schema.find("const"); value != schema.end()) {
      if (node.has_values) return Unsupported("const", path, "beside enum");
      node.has_values = true;
      node.values.push_back(*value);
    }
    nodes_[static_cast<size_t>(index)] = std::move(node);
    return index;
  }

  Result<int> CompileRef(const json& ref, const std::string& path, int depth) {
    if (!ref.is_string()) return InvalidArgumentError("'$ref' must be a string (at " + path + ")");
    const std::string& target = ref.get_ref<const std::string&>();
    if (target.empty() || target[0] != '#') {
      return Unsupported("$ref", path,
                         "to \"" + target + "\" (only local references: #/$defs/...)");
    }
    const json* resolved = nullptr;
    try {
      const json::json_pointer pointer(PercentDecode(target.substr(1)));
      if (document_.contains(pointer)) resolved = &document_.at(pointer);
    } catch (const std::exception&) {
      resolved = nullptr;
    }
    if (resolved == nullptr) {
      return InvalidArgumentError("'$ref' \"" + target + "\" does not resolve (at " + path + ")");
    }
    // A schema compiled already, or being compiled (a recursive structure), is that node.
    if (auto it = memo_.find(resolved); it != memo_.end()) return it->second;
    if (following_.contains(target)) {
      return InvalidArgumentError("'$ref' \"" + target + "\" only refers to itself (at " + path +
                                  ")");
    }
    following_.insert(target);
    Result<int> index = Compile(*resolved, target, depth + 1);
    following_.erase(target);
    return index;
  }

  std::vector<SchemaNode> TakeNodes() { return std::move(nodes_); }

 private:
  int NewNode() {
    if (nodes_.size() >= static_cast<size_t>(kMaxSchemaNodes)) return -1;
    nodes_.emplace_back();
    return static_cast<int>(nodes_.size()) - 1;
  }
  Status TooMany() {
    return InvalidArgumentError("the schema has more than " + std::to_string(kMaxSchemaNodes) +
                                " subschemas");
  }

  const json& document_;
  std::vector<SchemaNode> nodes_;
  std::map<const json*, int> memo_;  // each schema object compiled once (a $ref cycle ends)
  std::set<std::string> following_;  // $refs being resolved right now, without a node between
};

Result<JsonSchema> JsonSchema::Compile(const json& schema) {
  SchemaCompiler compiler(schema);
  REPRISE_ASSIGN_OR_RETURN(const int root, compiler.Compile(schema, "#", 0));
  JsonSchema out;
  out.nodes_ = compiler.TakeNodes();
  out.root_ = root;
  // The literals the grammar generates: each enum value valid against the node's other
  // constraints, as compact JSON.
  for (size_t i = 0; i < out.nodes_.size(); ++i) {
    SchemaNode& node = out.nodes_[i];
    if (!node.has_values) continue;
    node.has_values = false;
    for (const json& v : node.values) {
      if (out.ValidateAt(static_cast<int>(i), v, 0)) {
        node.value_texts.push_back(v.dump(-1, ' ', false, json::error_handler_t::replace));
      }
    }
    node.has_values = true;
  }
  return out;
}

Result<JsonSchema> JsonSchema::Parse(std::string_view schema_text) {
  json schema = json::parse(schema_text.begin(), schema_text.end(), nullptr, false);
  if (schema.is_discarded()) return InvalidArgumentError("the schema is not valid JSON");
  return Compile(schema);
}

bool JsonSchema::Validate(const json& instance) const { return ValidateAt(root_, instance, 0); }

bool JsonSchema::ValidateAt(int index, const json& v, int depth) const {
  // $ref cycles that consume no instance depth are bounded by this too.
  if (depth > 4 * kMaxJsonDepth + kMaxSchemaDepth) return false;
  const SchemaNode& node = nodes_[static_cast<size_t>(index)];
  if (!node.any_of.empty()) {
    for (const int alternative : node.any_of) {
      if (ValidateAt(alternative, v, depth + 1)) return true;
    }
    return false;
  }
  if (node.has_values) {
    bool found = false;
    for (const json& allowed : node.values) found = found || allowed == v;
    if (!found) return false;
  }
  uint8_t type = 0;
  switch (v.type()) {
    case json::value_t::null:
      type = kTypeNull;
      break;
    case json::value_t::boolean:
      type = kTypeBoolean;
      break;
    case json::value_t::object:
      type = kTypeObject;
      break;
    case json::value_t::array:
      type = kTypeArray;
      break;
    case json::value_t::string:
      type = kTypeString;
      break;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      type = kTypeNumber;
      break;
    default:
      return false;
  }
  if (type == kTypeNumber) {
    const bool integer_ok = (node.types & kTypeInteger) && IsInteger(v);
    if (!(node.types & kTypeNumber) && !integer_ok) return false;
    const double x = v.get<double>();
    if (node.minimum && (node.exclusive_minimum ? x <= *node.minimum : x < *node.minimum))
      return false;
    if (node.maximum && (node.exclusive_maximum ? x >= *node.maximum : x > *node.maximum))
      return false;
    return true;
  }
  if (!(node.types & type)) return false;
  if (type == kTypeString) {
    const int64_t n = CodePoints(v.get_ref<const std::string&>());
    return n >= node.min_length && (node.max_length < 0 || n <= node.max_length);
  }
  if (type == kTypeArray) {
    const int64_t n = static_cast<int64_t>(v.size());
    if (n < node.min_items || (node.max_items >= 0 && n > node.max_items)) return false;
    if (node.items >= 0) {
      for (const json& item : v) {
        if (!ValidateAt(node.items, item, depth + 1)) return false;
      }
    }
    return true;
  }
  if (type == kTypeObject) {
    for (const std::string& name : node.required_undeclared) {
      if (!v.contains(name)) return false;
    }
    for (const SchemaNode::Property& p : node.properties) {
      auto it = v.find(p.name);
      if (it == v.end()) {
        if (p.required) return false;
        continue;
      }
      if (!ValidateAt(p.node, *it, depth + 1)) return false;
    }
    if (!node.additional_properties) {
      for (const auto& [key, value] : v.items()) {
        bool declared = false;
        for (const SchemaNode::Property& p : node.properties) declared = declared || p.name == key;
        if (!declared) return false;
      }
    }
  }
  return true;
}

}  // namespace reprise::engine
