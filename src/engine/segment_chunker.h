// SegmentChunker: cuts a prompt segment's tokens into the chunks the cache stores and the
// planner matches (docs/design.md §1 "chunks"; issue 17):
//  - kFixed: chunks of chunk_tokens from the segment's start (a passage pasted at another
//    offset is cut elsewhere: it is found by sub-chunk matching only);
//  - kContent: content-defined boundaries (reuse/content_defined_chunking.h) at paragraph and
//    sentence ends, at most chunk_tokens, so that the same passage yields the same chunks,
//    found whole by their content hash, wherever it is pasted.
// Which tokens end a paragraph or a sentence is read off the vocabulary once: a token whose
// text ends with a line break, and control tokens (a chat template's markers), end a
// paragraph; one ending with '.', '!' or '?' (or one of those and a closing quote or bracket)
// ends a sentence. Immutable after Create; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "reuse/content_defined_chunking.h"
#include "tokenizer/tokenizer.h"
#include "reprise/types.h"

namespace reprise::engine {

class SegmentChunker {
 public:
  // Errors: InvalidArgument when chunk_tokens < 1.
  static Result<SegmentChunker> Create(const tokenizer::Tokenizer& tokenizer, ChunkingMode mode,
                                       int chunk_tokens);

  // The end offsets of the chunks of `ids`, ascending; the last is ids.size().
  std::vector<int> Cuts(std::span<const int32_t> ids) const;

  ChunkingMode mode() const { return mode_; }

 private:
  SegmentChunker() = default;

  ChunkingMode mode_ = ChunkingMode::kFixed;
  reuse::ContentChunkingOptions options_;
  std::vector<reuse::TokenBreak> break_of_token_;  // [vocabulary], kContent only
};

}  // namespace reprise::engine
