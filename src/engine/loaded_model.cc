#include "engine/loaded_model.h"

#include <xxhash.h>

#include "base/logging.h"
#include "base/memory_usage.h"

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
  // Header, metadata, tensor directory and every tensor's bytes: two models that differ in any
  // weight never share stored KV. XXH3 runs at memory speed, a small cost beside packing the
  // same bytes (docs/benchmarks.md has the figure).
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  const std::span<const uint8_t> bytes = m->file_->bytes();
  XXH3_64bits_update(state, bytes.data(), std::min<size_t>(bytes.size(), m->file_->data_offset()));
  for (const gguf::TensorInfo& t : m->file_->tensors()) {
    XXH3_64bits_update(state, t.data.data(), t.data.size());
  }
  m->fingerprint_ = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  REPRISE_LOG(kDebug) << "model loaded (tokenizer ready): resident " << CurrentRssMb() << " MiB";
  return m;
}

}  // namespace reprise::engine
