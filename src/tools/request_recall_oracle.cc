#include "tools/request_recall_oracle.h"

#include <utility>
#include <vector>

namespace reprise::tools {

Result<std::unique_ptr<RequestRecallOracle>> RequestRecallOracle::Open(
    const std::string& model_path, int window) {
  if (window < 1) return InvalidArgumentError("the recall window must be at least 1 token");
  REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<PromptTokenizer> tokenizer,
                           PromptTokenizer::Open(model_path));
  return std::unique_ptr<RequestRecallOracle>(
      new RequestRecallOracle(std::move(tokenizer), window));
}

int64_t RequestRecallOracle::CountThenAdd(const GenerateRequest& request) {
  const std::vector<int32_t> prompt = tokenizer_->PromptTokens(request);
  const int64_t reusable = oracle_.CountReusable(prompt);
  oracle_.Add(prompt);
  return reusable;
}

}  // namespace reprise::tools
