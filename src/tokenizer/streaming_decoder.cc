#include "tokenizer/streaming_decoder.h"

#include "tokenizer/text_encoding.h"

namespace reprise::tokenizer {

std::string StreamingDecoder::Push(TokenId id) {
  if (!tokenizer_->IsValid(id)) return {};
  std::string_view piece = tokenizer_->TokenPiece(id);
  if (tokenizer_->IsSpecial(id)) {
    if (options_.skip_special) return {};
  } else if (!piece.empty()) {
    // The same rule as Tokenizer::Decode: only the first text piece, and only when nothing
    // came before it.
    if (!strip_checked_ && options_.strip_leading_space && tokenizer_->adds_space_prefix() &&
        !has_output_ && piece.front() == ' ') {
      piece.remove_prefix(1);
    }
    strip_checked_ = true;
  }
  if (piece.empty()) return {};
  has_output_ = true;
  pending_.append(piece);
  const size_t held = IncompleteUtf8TailLength(pending_);
  std::string ready = pending_.substr(0, pending_.size() - held);
  pending_.erase(0, pending_.size() - held);
  return ready;
}

std::string StreamingDecoder::Flush() {
  std::string rest;
  rest.swap(pending_);
  return rest;
}

void StreamingDecoder::Reset() {
  pending_.clear();
  has_output_ = false;
  strip_checked_ = false;
}

}  // namespace reprise::tokenizer
