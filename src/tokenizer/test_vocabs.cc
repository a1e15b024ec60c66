#include "tokenizer/test_vocabs.h"

#include <map>
#include <memory>
#include <sstream>

#include "base/check.h"
#include "base/file_util.h"
#include "gguf/gguf_file.h"
#include "support/shared_data.h"

namespace reprise::tokenizer::testing {
namespace {

std::unique_ptr<Tokenizer> MustCreate(Result<Vocab> vocab) {
  REPRISE_CHECK(vocab.ok()) << vocab.status().ToString();
  auto tokenizer = Tokenizer::Create(std::move(vocab).value());
  REPRISE_CHECK(tokenizer.ok()) << tokenizer.status().ToString();
  return std::move(tokenizer).value();
}

}  // namespace

const Tokenizer& SharedTiktokenTokenizer(TiktokenFamily family) {
  static std::map<TiktokenFamily, std::unique_ptr<Tokenizer>> cache;
  auto& slot = cache[family];
  if (!slot) {
    const char* relative = family == TiktokenFamily::kLlama3
                               ? "models/tokenizers/llama3/tokenizer.model"
                               : "models/tokenizers/qwen/qwen.tiktoken";
    auto path = testing_support::SharedDataFile(relative);
    REPRISE_CHECK(path.has_value()) << relative << " is missing";
    slot = MustCreate(VocabFromTiktoken(*path, family));
  }
  return *slot;
}

const Tokenizer& SharedStoriesTokenizer() {
  static std::unique_ptr<Tokenizer> tokenizer;
  if (!tokenizer) {
    auto path = testing_support::SharedDataFile("models/stories260K/stories260K.gguf");
    REPRISE_CHECK(path.has_value()) << "stories260K.gguf is missing";
    auto file = gguf::GgufFile::Open(*path);
    REPRISE_CHECK(file.ok()) << file.status().ToString();
    tokenizer = MustCreate(ReadVocabFromGguf(*file));
  }
  return *tokenizer;
}

Result<std::vector<VocabTestCase>> ReadLlamaCppVocabTests(const std::string& inp_path,
                                                          const std::string& out_path) {
  REPRISE_ASSIGN_OR_RETURN(std::string inp, ReadFileToString(inp_path));
  REPRISE_ASSIGN_OR_RETURN(std::string out, ReadFileToString(out_path));
  const std::string separator = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  size_t pos = 0;
  while (pos < inp.size()) {
    const size_t next = inp.find(separator, pos);
    if (next == std::string::npos) {
      texts.push_back(inp.substr(pos));
      break;
    }
    texts.push_back(inp.substr(pos, next - pos));
    pos = next + separator.size();
  }
  std::vector<VocabTestCase> cases;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    if (cases.size() >= texts.size()) return CorruptError("more id lines than texts");
    VocabTestCase test_case;
    test_case.text = texts[cases.size()];
    std::istringstream numbers(line);
    TokenId id = 0;
    while (numbers >> id) test_case.ids.push_back(id);
    cases.push_back(std::move(test_case));
  }
  if (cases.size() != texts.size()) {
    return CorruptError(std::to_string(texts.size()) + " texts but " +
                        std::to_string(cases.size()) + " id lines");
  }
  return cases;
}

}  // namespace reprise::tokenizer::testing
