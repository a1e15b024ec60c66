#include "tools/request_recall_oracle.h"

#include <utility>
#include <vector>

#include "engine/request_segments.h"

namespace reprise::tools {

using engine::BuildRequestSegments;
using engine::EncodePrompt;
using engine::LoadedModel;
using engine::PromptSegment;

Result<std::unique_ptr<RequestRecallOracle>> RequestRecallOracle::Open(
    const std::string& model_path, int window) {
  if (window < 1) return InvalidArgumentError("the recall window must be at least 1 token");
  REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<LoadedModel> model, LoadedModel::Load(model_path));
  return std::unique_ptr<RequestRecallOracle>(new RequestRecallOracle(std::move(model), window));
}

int64_t RequestRecallOracle::CountThenAdd(const GenerateRequest& request) {
  const std::vector<PromptSegment> segments = BuildRequestSegments(request, model_->chat_format());
  const std::vector<int32_t> prompt = EncodePrompt(model_->tokenizer(), segments);
  const int64_t reusable = oracle_.CountReusable(prompt);
  oracle_.Add(prompt);
  return reusable;
}

}  // namespace reprise::tools
