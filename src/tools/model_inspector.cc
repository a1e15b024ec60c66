#include "tools/model_inspector.h"

#include <nlohmann/json.hpp>

#include "reprise/engine.h"

namespace reprise::tools {

Result<ModelReport> InspectModel(const std::string& path) {
  REPRISE_ASSIGN_OR_RETURN(const ModelInfo info, InspectModelFile(path));
  ModelReport r;
  r.path = path;
  r.file_bytes = info.file_bytes;
  r.gguf_version = info.gguf_version;
  r.num_metadata = info.num_metadata;
  r.num_tensors = info.num_tensors;
  r.architecture = info.architecture;
  r.name = info.name;
  r.tensor_type_counts = info.tensor_types;
  r.num_parameters = info.num_parameters;
  r.config_summary = info.config_summary;
  r.config_error = info.config_error;
  r.tokenizer_kind = info.tokenizer;
  r.tokenizer_size = info.tokenizer_tokens;
  r.tokenizer_error = info.tokenizer_error;
  r.chat_format = info.chat_format;
  return r;
}

std::string ModelReport::ToText() const {
  std::string s;
  auto line = [&](const std::string& key, const std::string& value) {
    s += key;
    s.append(key.size() < 14 ? 14 - key.size() : 1, ' ');
    s += value + "\n";
  };
  char size[64];
  std::snprintf(size, sizeof(size), "%.1f MiB (%llu bytes)", file_bytes / 1048576.0,
                static_cast<unsigned long long>(file_bytes));
  line("file", path);
  line("size", size);
  line("gguf", "version " + std::to_string(gguf_version) + ", " + std::to_string(num_metadata) +
                   " metadata keys, " + std::to_string(num_tensors) + " tensors");
  line("architecture", architecture + (name.empty() ? "" : " (" + name + ")"));
  line("config", config_error.empty() ? config_summary : "cannot run: " + config_error);
  std::string types;
  for (const auto& [type, count] : tensor_type_counts) {
    types += (types.empty() ? "" : ", ") + type + " x" + std::to_string(count);
  }
  line("tensor types", types);
  char params[64];
  std::snprintf(params, sizeof(params), "%.2f M", num_parameters / 1e6);
  line("parameters", params);
  line("tokenizer", tokenizer_error.empty()
                        ? tokenizer_kind + ", " + std::to_string(tokenizer_size) + " tokens"
                        : "unusable: " + tokenizer_error);
  if (!chat_format.empty()) line("chat format", chat_format);
  return s;
}

std::string ModelReport::ToJson() const {
  nlohmann::json j;
  j["path"] = path;
  j["file_bytes"] = file_bytes;
  j["gguf_version"] = gguf_version;
  j["architecture"] = architecture;
  j["name"] = name;
  j["config"] = config_summary;
  if (!config_error.empty()) j["config_error"] = config_error;
  j["num_parameters"] = num_parameters;
  j["num_tensors"] = num_tensors;
  j["tensor_types"] = tensor_type_counts;
  j["tokenizer"] = tokenizer_kind;
  j["tokenizer_size"] = tokenizer_size;
  if (!tokenizer_error.empty()) j["tokenizer_error"] = tokenizer_error;
  j["chat_format"] = chat_format;
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace reprise::tools
