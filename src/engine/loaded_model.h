// LoadedModel: a model file opened for inference — the mapped GGUF, its configuration, its
// tokenizer and its chat format. Everything a backend needs to build its state from.
//
// Immutable after Load(); thread-safe for reading. Backends borrow it and must not outlive it.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace reprise::engine {

class LoadedModel {
 public:
  // Errors: those of GgufFile::Open, ModelConfig::FromGguf, ReadVocabFromGguf and
  // Tokenizer::Create, with the path as context.
  static Result<std::unique_ptr<LoadedModel>> Load(const std::string& path);

  const gguf::GgufFile& file() const { return *file_; }
  const model::ModelConfig& config() const { return config_; }
  const tokenizer::Tokenizer& tokenizer() const { return *tokenizer_; }
  tokenizer::ChatFormat chat_format() const { return chat_format_; }
  const std::string& path() const { return path_; }
  // A 64-bit identity of the model's contents (metadata, tensor directory and every tensor's
  // bytes): KV computed by another model never matches.
  uint64_t fingerprint() const { return fingerprint_; }

 private:
  LoadedModel() = default;
  std::string path_;
  std::unique_ptr<gguf::GgufFile> file_;
  model::ModelConfig config_;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
  tokenizer::ChatFormat chat_format_ = tokenizer::ChatFormat::kPlain;
  uint64_t fingerprint_ = 0;
};

}  // namespace reprise::engine
