#include "engine/segment_chunker.h"

#include <algorithm>

namespace reprise::engine {
namespace {

reuse::TokenBreak BreakOf(const tokenizer::Tokenizer& tok, tokenizer::TokenId id) {
  if (tok.IsSpecial(id)) return reuse::TokenBreak::kParagraph;
  std::string_view piece = tok.TokenPiece(id);
  if (piece.empty()) return reuse::TokenBreak::kNone;
  if (piece.back() == '\n') return reuse::TokenBreak::kParagraph;
  while (!piece.empty() && (piece.back() == '"' || piece.back() == '\'' || piece.back() == ')' ||
                            piece.back() == ']')) {
    piece.remove_suffix(1);
  }
  if (!piece.empty() && (piece.back() == '.' || piece.back() == '!' || piece.back() == '?')) {
    return reuse::TokenBreak::kSentence;
  }
  return reuse::TokenBreak::kNone;
}

}  // namespace

Result<SegmentChunker> SegmentChunker::Create(const tokenizer::Tokenizer& tokenizer,
                                              ChunkingMode mode, int chunk_tokens) {
  if (chunk_tokens < 1) return InvalidArgumentError("chunk size must be >= 1");
  SegmentChunker c;
  c.mode_ = mode;
  c.options_.max_tokens = chunk_tokens;
  c.options_.min_tokens = std::min(c.options_.min_tokens, chunk_tokens);
  if (mode == ChunkingMode::kContent) {
    c.break_of_token_.resize(tokenizer.num_tokens());
    for (size_t id = 0; id < c.break_of_token_.size(); ++id) {
      c.break_of_token_[id] = BreakOf(tokenizer, static_cast<tokenizer::TokenId>(id));
    }
  }
  return c;
}

std::vector<int> SegmentChunker::Cuts(std::span<const int32_t> ids) const {
  std::vector<int> cuts;
  if (mode_ == ChunkingMode::kFixed) {
    const size_t step = static_cast<size_t>(options_.max_tokens);
    for (size_t b = 0; b < ids.size(); b += step) {
      cuts.push_back(static_cast<int>(std::min(ids.size(), b + step)));
    }
    return cuts;
  }
  std::vector<reuse::TokenBreak> breaks(ids.size(), reuse::TokenBreak::kNone);
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    if (id >= 0 && static_cast<size_t>(id) < break_of_token_.size()) {
      breaks[i] = break_of_token_[static_cast<size_t>(id)];
    }
  }
  return reuse::ContentDefinedCuts(ids, breaks, options_);
}

}  // namespace reprise::engine
