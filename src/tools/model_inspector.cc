#include "tools/model_inspector.h"

#include <nlohmann/json.hpp>

#include "gguf/gguf_file.h"
#include "model/model_config.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/vocab.h"

namespace reprise::tools {

Result<ModelReport> InspectModel(const std::string& path) {
  REPRISE_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::Open(path));
  ModelReport r;
  r.path = path;
  r.file_bytes = file.file_size_bytes();
  r.gguf_version = file.version();
  r.num_metadata = file.metadata().size();
  r.num_tensors = file.tensors().size();
  r.architecture = std::string(file.GetStringOr("general.architecture", "?").value_or("?"));
  r.name = std::string(file.GetStringOr("general.name", "").value_or(""));
  for (const gguf::TensorInfo& t : file.tensors()) {
    ++r.tensor_type_counts[std::string(DTypeName(t.dtype))];
    r.num_parameters += t.num_elements;
  }
  Result<model::ModelConfig> config = model::ModelConfig::FromGguf(file);
  if (config.ok()) {
    r.config_summary = config->Summary();
  } else {
    r.config_error = config.error().ToString();
  }
  Result<tokenizer::Vocab> vocab = tokenizer::ReadVocabFromGguf(file);
  if (vocab.ok()) {
    r.tokenizer_size = vocab->tokens.size();
    r.tokenizer_kind = vocab->kind == tokenizer::VocabKind::kSpm
                           ? "SPM (llama)"
                           : "BPE (gpt2, pre " + (vocab->pre.empty() ? "default" : vocab->pre) + ")";
    r.chat_format = std::string(tokenizer::ChatFormatName(tokenizer::DetectChatFormat(*vocab)));
  } else {
    r.tokenizer_error = vocab.error().ToString();
  }
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
