#include "tools/request_recall_oracle.h"

#include <algorithm>
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
  const std::vector<uint8_t> mask = MaskThenAdd(request);
  return std::count(mask.begin(), mask.end(), uint8_t{1});
}

std::vector<uint8_t> RequestRecallOracle::MaskThenAdd(const GenerateRequest& request) {
  const std::vector<int32_t> prompt = tokenizer_->PromptTokens(request);
  std::vector<uint8_t> mask = oracle_.ReusableMask(prompt);
  oracle_.Add(prompt);
  return mask;
}

}  // namespace reprise::tools
