#include "tokenizer/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <initializer_list>

namespace reprise::tokenizer {
namespace {

// The models' own patterns use `(?i:'s|...)`; PCRE2's caseless mode would also fold
// characters such as U+017F (long s) to 's', so the contractions are spelled out by case, as
// llama.cpp does.
constexpr std::string_view kContractions =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))";

// Llama 3 (tiktoken cl100k-style): letters with one leading non-letter, 1-3 digit groups.
const std::string& Llama3Pattern() {
  static const std::string pattern =
      std::string(kContractions) +
      R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  return pattern;
}

// Qwen2 / Qwen2.5 / Qwen3: as Llama 3, but single digits.
const std::string& Qwen2Pattern() {
  static const std::string pattern =
      std::string(kContractions) +
      R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  return pattern;
}

// GPT-2's original pattern.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";

struct PreTokenizerSpec {
  std::vector<std::string> patterns;
  bool ignore_merges = false;
};

bool NameIn(std::string_view name, std::initializer_list<std::string_view> names) {
  for (std::string_view candidate : names) {
    if (name == candidate) return true;
  }
  return false;
}

Result<PreTokenizerSpec> SpecFor(std::string_view pre) {
  if (NameIn(pre, {"llama3", "llama-v3", "llama-bpe"})) {
    return PreTokenizerSpec{{Llama3Pattern()}, true};
  }
  if (NameIn(pre, {"qwen2", "deepseek-r1-qwen"})) {
    return PreTokenizerSpec{{Qwen2Pattern()}, false};
  }
  if (NameIn(pre, {"gpt2", "gpt-2", "phi-2"})) {
    return PreTokenizerSpec{{std::string(kGpt2Pattern)}, false};
  }
  if (NameIn(pre, {"smollm", "starcoder", "refact"})) {
    // Digits are split one by one before the GPT-2 pattern runs.
    return PreTokenizerSpec{{R"(\p{N})", std::string(kGpt2Pattern)}, false};
  }
  if (NameIn(pre, {"", "default"})) {
    // llama.cpp's fallback for BPE vocabularies that name no pre-tokenizer.
    return PreTokenizerSpec{
        {R"([\p{P}\$\+<=>\^~\|]+)", std::string(kGpt2Pattern), R"(\p{N}+)", "[0-9][0-9][0-9]"},
        false};
  }
  return UnimplementedError("BPE pre-tokenizer '" + std::string(pre) +
                            "' is not supported (supported: llama3, llama-bpe, qwen2, gpt2, "
                            "smollm, default)");
}

}  // namespace

// One compiled PCRE2 pattern; owns the pcre2_code.
class PreTokenizer::Pattern {
 public:
  static Result<std::unique_ptr<Pattern>> Compile(const std::string& source) {
    int error_code = 0;
    PCRE2_SIZE error_offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(source.data()), source.size(),
                                     PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error_code,
                                     &error_offset, nullptr);
    if (code == nullptr) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error_code, message, sizeof(message));
      return InternalError("pre-tokenizer pattern does not compile at offset " +
                           std::to_string(error_offset) + ": " +
                           reinterpret_cast<const char*>(message));
    }
    // Without JIT (unsupported platform) the interpreter gives the same matches, slower.
    const bool has_jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
    return std::make_unique<Pattern>(code, has_jit);
  }

  Pattern(pcre2_code* code, bool has_jit) : code_(code), has_jit_(has_jit) {}

  Pattern(const Pattern&) = delete;
  Pattern& operator=(const Pattern&) = delete;
  ~Pattern() { pcre2_code_free(code_); }

  // Splits each word of `in` into matches and the gaps between them, appending to `out`.
  void Split(const std::vector<std::string_view>& in, std::vector<std::string_view>& out) const {
    pcre2_match_data* match_data = pcre2_match_data_create_from_pattern(code_, nullptr);
    if (match_data == nullptr) {  // out of memory: leave the words unsplit
      out.insert(out.end(), in.begin(), in.end());
      return;
    }
    for (std::string_view word : in) SplitWord(word, match_data, out);
    pcre2_match_data_free(match_data);
  }

 private:
  void SplitWord(std::string_view word, pcre2_match_data* match_data,
                 std::vector<std::string_view>& out) const {
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(word.data());
    size_t emitted = 0;  // bytes of `word` already in `out`
    size_t search_from = 0;
    while (search_from < word.size()) {
      int rc = pcre2_match(code_, subject, word.size(), search_from, 0, match_data, nullptr);
      if (rc < 0 && rc != PCRE2_ERROR_NOMATCH && has_jit_) {
        // The JIT stack can run out on pathological input; the interpreter uses the heap.
        rc = pcre2_match(code_, subject, word.size(), search_from, PCRE2_NO_JIT, match_data,
                         nullptr);
      }
      if (rc < 0) break;  // no further match (or a resource limit): the rest is one gap
      const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match_data);
      const size_t begin = ovector[0];
      size_t end = ovector[1];
      if (end <= begin) {
        // None of our patterns matches the empty string; step over a character anyway so
        // that a pattern which does cannot loop forever.
        search_from = begin + 1;
        while (search_from < word.size() &&
               (static_cast<uint8_t>(word[search_from]) & 0xC0) == 0x80) {
          ++search_from;
        }
        continue;
      }
      if (begin > emitted) out.push_back(word.substr(emitted, begin - emitted));
      out.push_back(word.substr(begin, end - begin));
      emitted = end;
      search_from = end;
    }
    if (emitted < word.size()) out.push_back(word.substr(emitted));
  }

  pcre2_code* code_;
  bool has_jit_;
};

Result<PreTokenizer> PreTokenizer::Create(std::string_view pre) {
  REPRISE_ASSIGN_OR_RETURN(PreTokenizerSpec spec, SpecFor(pre));
  PreTokenizer result;
  result.ignore_merges_ = spec.ignore_merges;
  for (const std::string& source : spec.patterns) {
    REPRISE_ASSIGN_OR_RETURN(auto pattern, Pattern::Compile(source));
    result.patterns_.push_back(std::move(pattern));
  }
  return result;
}

PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;
PreTokenizer::~PreTokenizer() = default;

void PreTokenizer::Split(std::string_view text, std::vector<std::string_view>& words) const {
  if (text.empty()) return;
  std::vector<std::string_view> current{text};
  std::vector<std::string_view> next;
  for (const auto& pattern : patterns_) {
    next.clear();
    pattern->Split(current, next);
    current.swap(next);
  }
  words.insert(words.end(), current.begin(), current.end());
}

}  // namespace reprise::tokenizer
