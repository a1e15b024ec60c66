#include "tools/model_inspector.h"

#include <nlohmann/json.hpp>

namespace reprise::tools {

Result<ModelReport> InspectModel(const std::string& path) {
  REPRISE_ASSIGN_OR_RETURN(ModelInfo info, InspectModelFile(path));
  return ModelReport{path, std::move(info)};
}

std::string ModelReport::ToText() const {
  std::string s;
  auto line = [&](const std::string& key, const std::string& value) {
    s += key;
    s.append(key.size() < 14 ? 14 - key.size() : 1, ' ');
    s += value + "\n";
  };
  char size[64];
  std::snprintf(size, sizeof(size), "%.1f MiB (%llu bytes)", info.file_bytes / 1048576.0,
                static_cast<unsigned long long>(info.file_bytes));
  line("file", path);
  line("size", size);
  line("gguf", "version " + std::to_string(info.gguf_version) + ", " +
                   std::to_string(info.num_metadata) + " metadata keys, " +
                   std::to_string(info.num_tensors) + " tensors");
  line("architecture", info.architecture + (info.name.empty() ? "" : " (" + info.name + ")"));
  line("config",
       info.config_error.empty() ? info.config_summary : "cannot run: " + info.config_error);
  std::string types;
  for (const auto& [type, count] : info.tensor_types) {
    types += (types.empty() ? "" : ", ") + type + " x" + std::to_string(count);
  }
  line("tensor types", types);
  char params[64];
  std::snprintf(params, sizeof(params), "%.2f M", info.num_parameters / 1e6);
  line("parameters", params);
  line("tokenizer", info.tokenizer_error.empty()
                        ? info.tokenizer + ", " + std::to_string(info.tokenizer_tokens) + " tokens"
                        : "unusable: " + info.tokenizer_error);
  if (!info.chat_format.empty()) line("chat format", info.chat_format);
  return s;
}

std::string ModelReport::ToJson() const {
  nlohmann::json j;
  j["path"] = path;
  j["file_bytes"] = info.file_bytes;
  j["gguf_version"] = info.gguf_version;
  j["architecture"] = info.architecture;
  j["name"] = info.name;
  j["config"] = info.config_summary;
  if (!info.config_error.empty()) j["config_error"] = info.config_error;
  j["num_parameters"] = info.num_parameters;
  j["num_tensors"] = info.num_tensors;
  j["tensor_types"] = info.tensor_types;
  j["tokenizer"] = info.tokenizer;
  j["tokenizer_size"] = info.tokenizer_tokens;
  if (!info.tokenizer_error.empty()) j["tokenizer_error"] = info.tokenizer_error;
  j["chat_format"] = info.chat_format;
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace reprise::tools
