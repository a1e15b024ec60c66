// ReadModelInfo and InspectModelFile (reprise/engine.h): what a model file holds, from its GGUF
// header, hyper-parameters and tokenizer, without packing or compiling anything.
#include <memory>
#include <string>

#include "engine/loaded_model.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"
#include "reprise/engine.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/vocab.h"

namespace reprise {

Result<ModelInfo> InspectModelFile(const std::string& path) {
  REPRISE_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::Open(path));
  ModelInfo info;
  info.file_bytes = file.file_size_bytes();
  info.gguf_version = file.version();
  info.num_metadata = file.metadata().size();
  info.num_tensors = file.tensors().size();
  info.architecture = std::string(file.GetStringOr("general.architecture", "?").value_or("?"));
  info.name = std::string(file.GetStringOr("general.name", "").value_or(""));
  for (const gguf::TensorInfo& t : file.tensors()) {
    ++info.tensor_types[std::string(DTypeName(t.dtype))];
    info.num_parameters += t.num_elements;
  }
  Result<model::ModelConfig> config = model::ModelConfig::FromGguf(file);
  if (config.ok()) {
    info.config_summary = config->Summary();
    info.architecture = std::string(model::ArchitectureName(config->arch));
    info.context_length = config->context_length;
    info.vocab_size = config->vocab_size;
    info.num_layers = config->num_layers;
  } else {
    info.config_error = config.error().ToString();
  }
  Result<tokenizer::Vocab> vocab = tokenizer::ReadVocabFromGguf(file);
  if (vocab.ok()) {
    info.tokenizer_tokens = vocab->tokens.size();
    info.tokenizer = vocab->kind == tokenizer::VocabKind::kSpm
                         ? "SPM (llama)"
                         : "BPE (gpt2, pre " + (vocab->pre.empty() ? "default" : vocab->pre) + ")";
    info.chat_format = std::string(tokenizer::ChatFormatName(tokenizer::DetectChatFormat(*vocab)));
  } else {
    info.tokenizer_error = vocab.error().ToString();
  }
  return info;
}

Result<ModelInfo> ReadModelInfo(const std::string& path) {
  // Loading checks everything a run needs (tensors, shapes, tokenizer): its errors first.
  REPRISE_RETURN_IF_ERROR(engine::LoadedModel::Load(path));
  return InspectModelFile(path);
}

}  // namespace reprise
