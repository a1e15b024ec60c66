#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <array>
#include <limits>

#include "base/check.h"
#include "tokenizer/bpe_encoder.h"
#include "tokenizer/spm_encoder.h"
#include "tokenizer/text_encoding.h"

namespace reprise::tokenizer {
namespace {

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

// Texts of tokens that end a turn or a document in common vocabularies (the ones llama.cpp
// recognises by text when the GGUF does not list them).
constexpr std::array<std::string_view, 9> kEndOfGenerationTexts = {
    "<|eot_id|>", "<|im_end|>",      "<|end|>", "<end_of_turn>",     "<|endoftext|>",
    "<|eom_id|>", "<|end_of_text|>", "<EOT>",   "<end_of_utterance>"};
// Candidates for the end-of-turn token, in order of preference.
constexpr std::array<std::string_view, 5> kEndOfTurnTexts = {"<|eot_id|>", "<|im_end|>", "<|end|>",
                                                             "<end_of_turn>", "<|endoftext|>"};

bool IsSpecialType(TokenType type) {
  return type == TokenType::kControl || type == TokenType::kUnknown;
}

// "<0x41>" -> 0x41; -1 when `text` is not a byte token's text.
int ParseByteToken(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  int value = 0;
  for (char c : text.substr(3, 2)) {
    value <<= 4;
    if (c >= '0' && c <= '9') {
      value |= c - '0';
    } else if (c >= 'A' && c <= 'F') {
      value |= c - 'A' + 10;
    } else if (c >= 'a' && c <= 'f') {
      value |= c - 'a' + 10;
    } else {
      return -1;
    }
  }
  return value;
}

std::string ReplaceAll(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(text.size());
  size_t start = 0;
  while (true) {
    const size_t found = text.find(from, start);
    if (found == std::string_view::npos) break;
    out.append(text.substr(start, found - start));
    out.append(to);
    start = found + from.size();
  }
  out.append(text.substr(start));
  return out;
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::Create(Vocab vocab) {
  REPRISE_RETURN_IF_ERROR(vocab.Validate());
  // The encoders keep pointers into vocab_, so the Tokenizer is built in place and never
  // moves.
  std::unique_ptr<Tokenizer> tokenizer(new Tokenizer(std::move(vocab)));
  if (tokenizer->vocab_.kind == VocabKind::kSpm) {
    REPRISE_ASSIGN_OR_RETURN(SpmEncoder spm, SpmEncoder::Create(tokenizer->vocab_));
    tokenizer->spm_ = std::make_unique<SpmEncoder>(std::move(spm));
  } else {
    REPRISE_ASSIGN_OR_RETURN(BpeEncoder bpe, BpeEncoder::Create(tokenizer->vocab_));
    tokenizer->bpe_ = std::make_unique<BpeEncoder>(std::move(bpe));
  }
  tokenizer->BuildPieces();
  tokenizer->FindSpecialTokens();
  return tokenizer;
}

Tokenizer::Tokenizer(Vocab vocab) : vocab_(std::move(vocab)) {}

Tokenizer::~Tokenizer() = default;

void Tokenizer::BuildPieces() {
  const bool is_spm = vocab_.kind == VocabKind::kSpm;
  pieces_.resize(vocab_.num_tokens());
  for (size_t i = 0; i < vocab_.num_tokens(); ++i) {
    const std::string& text = vocab_.tokens[i];
    const TokenType type = vocab_.type_of(static_cast<TokenId>(i));
    std::string& piece = pieces_[i];
    switch (type) {
      case TokenType::kControl:
      case TokenType::kUnknown:
      case TokenType::kUserDefined:
        piece = text;
        break;
      case TokenType::kUnused:
        break;
      case TokenType::kByte: {
        const int byte = ParseByteToken(text);
        piece = byte >= 0 ? std::string(1, static_cast<char>(byte)) : text;
        break;
      }
      case TokenType::kNormal:
      case TokenType::kUndefined:
        // Untyped SPM vocabularies still spell their byte tokens <0xXX>.
        if (is_spm && vocab_.token_types.empty() && ParseByteToken(text) >= 0) {
          piece = std::string(1, static_cast<char>(ParseByteToken(text)));
        } else {
          piece = is_spm ? ReplaceAll(text, kSpmSpace, " ") : Gpt2TextToBytes(text);
        }
        break;
    }
  }
}

void Tokenizer::FindSpecialTokens() {
  std::vector<std::optional<TokenId>> end_of_turn_by_text(kEndOfTurnTexts.size());
  std::optional<TokenId> eom_by_text;
  for (size_t i = 0; i < vocab_.num_tokens(); ++i) {
    const auto id = static_cast<TokenId>(i);
    const std::string& text = vocab_.tokens[i];
    const TokenType type = vocab_.type_of(id);
    if ((IsSpecialType(type) || type == TokenType::kUserDefined) && !text.empty()) {
      special_candidates_.push_back(id);
    }
    if (text.empty() || text.front() != '<') continue;
    if (std::find(kEndOfGenerationTexts.begin(), kEndOfGenerationTexts.end(), text) !=
        kEndOfGenerationTexts.end()) {
      end_of_generation_ids_.push_back(id);
    }
    for (size_t k = 0; k < kEndOfTurnTexts.size(); ++k) {
      if (text == kEndOfTurnTexts[k] && !end_of_turn_by_text[k]) end_of_turn_by_text[k] = id;
    }
    if (text == "<|eom_id|>" && !eom_by_text) eom_by_text = id;
  }
  // Longest first, so that "<|im_start|>" is not cut by a shorter special inside it.
  std::stable_sort(
      special_candidates_.begin(), special_candidates_.end(),
      [&](TokenId a, TokenId b) { return vocab_.tokens[a].size() > vocab_.tokens[b].size(); });
  eot_id_ = vocab_.eot_id;
  for (size_t k = 0; k < end_of_turn_by_text.size() && !eot_id_; ++k) {
    eot_id_ = end_of_turn_by_text[k];
  }
  const std::optional<TokenId> eom = vocab_.eom_id ? vocab_.eom_id : eom_by_text;
  for (const auto& id : {vocab_.eos_id, eot_id_, eom}) {
    if (id) end_of_generation_ids_.push_back(*id);
  }
  std::sort(end_of_generation_ids_.begin(), end_of_generation_ids_.end());
  end_of_generation_ids_.erase(
      std::unique(end_of_generation_ids_.begin(), end_of_generation_ids_.end()),
      end_of_generation_ids_.end());
}

void Tokenizer::SplitSpecialTokens(std::string_view text, const EncodeOptions& options,
                                   std::vector<Fragment>& fragments) const {
  fragments.clear();
  if (text.empty()) return;
  fragments.push_back(Fragment{-1, 0, text.size()});
  // Whether [begin, begin + length) overlaps a literal range.
  const auto is_literal = [&](size_t begin, size_t length) {
    for (const TextRange& range : options.literal_ranges) {
      if (range.length > 0 && begin < range.offset + range.length &&
          range.offset < begin + length) {
        return true;
      }
    }
    return false;
  };
  std::vector<Fragment> next;
  for (TokenId id : special_candidates_) {
    const bool is_user_defined = vocab_.type_of(id) == TokenType::kUserDefined;
    if (!options.parse_special && !is_user_defined) continue;
    const std::string_view special = vocab_.tokens[id];
    if (text.find(special) == std::string_view::npos) continue;
    // User-defined tokens are recognised in any text, so in literal ranges too.
    const bool check_literal = !is_user_defined && !options.literal_ranges.empty();
    next.clear();
    for (const Fragment& fragment : fragments) {
      if (fragment.token >= 0) {
        next.push_back(fragment);
        continue;
      }
      size_t start = fragment.offset;  // the text not yet emitted begins here
      size_t search = start;
      const size_t end = fragment.offset + fragment.length;
      while (search < end) {
        const size_t found = text.substr(0, end).find(special, search);
        if (found == std::string_view::npos) break;
        if (check_literal && is_literal(found, special.size())) {
          search = found + 1;
          continue;
        }
        if (found > start) next.push_back(Fragment{-1, start, found - start});
        next.push_back(Fragment{id, found, special.size()});
        start = search = found + special.size();
      }
      if (start < end) next.push_back(Fragment{-1, start, end - start});
    }
    fragments.swap(next);
  }
}

void Tokenizer::EncodeText(std::string_view text, bool after_special,
                           std::vector<TokenId>& out) const {
  if (bpe_) {
    bpe_->Encode(text, out);
    return;
  }
  std::string normalized;
  if (vocab_.add_space_prefix && after_special) normalized.append(kSpmSpace);
  normalized.append(ReplaceAll(text, " ", kSpmSpace));
  spm_->Encode(normalized, out);
}

std::vector<TokenId> Tokenizer::Encode(std::string_view text, const EncodeOptions& options) const {
  REPRISE_CHECK(text.size() < static_cast<size_t>(std::numeric_limits<int32_t>::max()))
      << "text of " << text.size() << " bytes is too long to encode at once";
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 2);
  if (options.add_special && vocab_.add_bos && vocab_.bos_id) out.push_back(*vocab_.bos_id);
  std::vector<Fragment> fragments;
  SplitSpecialTokens(text, options, fragments);
  bool after_special = true;  // the start of the text counts as following a special token
  for (const Fragment& fragment : fragments) {
    if (fragment.token >= 0) {
      out.push_back(fragment.token);
      after_special = true;
    } else {
      EncodeText(text.substr(fragment.offset, fragment.length), after_special, out);
      after_special = false;
    }
  }
  if (options.add_special && vocab_.add_eos && vocab_.eos_id) out.push_back(*vocab_.eos_id);
  return out;
}

std::string Tokenizer::Decode(std::span<const TokenId> ids, const DecodeOptions& options) const {
  std::string out;
  bool strip_pending = options.strip_leading_space && adds_space_prefix();
  for (TokenId id : ids) {
    if (!IsValid(id)) continue;
    const std::string& piece = pieces_[id];
    if (IsSpecial(id)) {
      if (!options.skip_special) out += piece;
      continue;
    }
    if (piece.empty()) continue;
    if (strip_pending && out.empty() && piece.front() == ' ') {
      out.append(piece, 1);
    } else {
      out += piece;
    }
    strip_pending = false;
  }
  return out;
}

std::string_view Tokenizer::TokenText(TokenId id) const {
  return IsValid(id) ? std::string_view(vocab_.tokens[id]) : std::string_view();
}

const std::string& Tokenizer::TokenPiece(TokenId id) const {
  static const std::string kEmpty;
  return IsValid(id) ? pieces_[id] : kEmpty;
}

bool Tokenizer::IsSpecial(TokenId id) const {
  return IsValid(id) && IsSpecialType(vocab_.type_of(id));
}

bool Tokenizer::IsEndOfGeneration(TokenId id) const {
  return std::binary_search(end_of_generation_ids_.begin(), end_of_generation_ids_.end(), id);
}

}  // namespace reprise::tokenizer
