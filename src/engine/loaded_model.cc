#include "engine/loaded_model.h"

namespace reprise::engine {

Result<std::unique_ptr<LoadedModel>> LoadedModel::Load(const std::string& path) {
  std::unique_ptr<LoadedModel> m(new LoadedModel());
  m->path_ = path;
  REPRISE_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::Open(path));
  m->file_ = std::make_unique<gguf::GgufFile>(std::move(file));
  Result<model::ModelConfig> config = model::ModelConfig::FromGguf(*m->file_);
  if (!config.ok()) return config.error().WithContext(path);
  m->config_ = std::move(config).value();
  Result<tokenizer::Vocab> vocab = tokenizer::ReadVocabFromGguf(*m->file_);
  if (!vocab.ok()) return vocab.error().WithContext(path);
  m->chat_format_ = tokenizer::DetectChatFormat(*vocab);
  if (vocab->tokens.size() > static_cast<size_t>(m->config_.vocab_size)) {
    return CorruptError(path + ": the tokenizer has " + std::to_string(vocab->tokens.size()) +
                        " tokens but the embedding only " +
                        std::to_string(m->config_.vocab_size) + " rows");
  }
  Result<std::unique_ptr<tokenizer::Tokenizer>> tok =
      tokenizer::Tokenizer::Create(std::move(vocab).value());
  if (!tok.ok()) return tok.error().WithContext(path);
  m->tokenizer_ = std::move(tok).value();
  return m;
}

}  // namespace reprise::engine
