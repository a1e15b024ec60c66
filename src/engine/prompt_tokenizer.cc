// reprise::PromptTokenizer (reprise/engine.h): a request's prompt tokens from the model file's
// tokenizer and chat format, as the engine builds them (engine/request_segments.h).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/loaded_model.h"
#include "engine/request_segments.h"
#include "reprise/engine.h"

namespace reprise {

PromptTokenizer::PromptTokenizer(std::unique_ptr<engine::LoadedModel> model)
    : model_(std::move(model)) {}
PromptTokenizer::~PromptTokenizer() = default;

Result<std::unique_ptr<PromptTokenizer>> PromptTokenizer::Open(const std::string& model_path) {
  REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<engine::LoadedModel> model,
                           engine::LoadedModel::Load(model_path));
  return std::unique_ptr<PromptTokenizer>(new PromptTokenizer(std::move(model)));
}

std::vector<int32_t> PromptTokenizer::PromptTokens(const GenerateRequest& request) const {
  const std::vector<engine::PromptSegment> segments =
      engine::BuildRequestSegments(request, model_->chat_format());
  return engine::EncodePrompt(model_->tokenizer(), segments);
}

}  // namespace reprise
