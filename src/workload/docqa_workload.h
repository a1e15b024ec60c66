// The docqa workload: retrieval-augmented question answering over HotpotQA paragraphs.
//
// The document collection is every paragraph of every item of the file (identical
// title + text kept once), in file order. A paragraph is its sentences joined with "" (they
// keep their leading spaces), cut at sentence boundaries into chunks of at most chunk_tokens
// tokens (a longer sentence is cut between words); each chunk reads "Title: <title>\n<text>\n"
// and has source_id "hotpot:<title>#<chunk index in the paragraph>" ("hotpot:<title>~<n>#..."
// for the n-th different text under one title, if any).
//
// Each item's question (file order, the first num_queries) retrieves the top_chunks chunks
// of the WHOLE collection with BM25, so chunks retrieved by several questions recur at
// different positions: the non-prefix reuse that docs/design.md §2 is about. Prompt:
//   system   "You are a helpful assistant. Answer the question using the documents.\n"
//   document the retrieved chunks, best first
//   question "Question: <question>\nAnswer:"
//
// With shuffled_pool > 0 ("docqa-shuffled"), retrieval is replaced by a small recurring set:
// the first shuffled_pool chunks of the collection form the pool, and each question's prompt
// holds top_chunks of them (at most half the pool) drawn in a new random order (seeded per
// query, reproducible). Every document recurs in most prompts, each time among other
// neighbours and at another offset: the trace of issue 17 (six plain-text requests over the
// same 12 HotpotQA paragraphs), where documents are seen only inside earlier prompts.
//
// With hot_pool > 0 ("docqa-hot"), each prompt holds half its documents (at least one, at
// most half the pool) drawn from a small recurring pool — the first hot_pool chunks of the
// collection, in a new random order per query — and the rest retrieved by BM25 from the
// collection outside the pool, which almost never recur: a few popular documents in a long
// tail of one-off ones, the trace that floods a cache without admission control.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "workload/workload.h"

namespace reprise::workload {

// Relative to WorkloadOptions::data_dir.
inline constexpr std::string_view kHotpotFullwikiFile =
    "workloads/hotpotqa/hotpotqa_fullwiki_500.jsonl";
inline constexpr std::string_view kHotpotDistractorFile =
    "workloads/hotpotqa/hotpotqa_distractor_100.jsonl";

inline constexpr std::string_view kDocQaSystemPrompt =
    "You are a helpful assistant. Answer the question using the documents.\n";

struct DocQaOptions {
  WorkloadOptions common;
  // The JSON Lines file ({id, question, answer, paragraphs: [{title, sentences[]}], ...} per
  // line), relative to data_dir or absolute: kHotpotFullwikiFile or kHotpotDistractorFile.
  std::string file = std::string(kHotpotFullwikiFile);
  int shuffled_pool = 0;  // > 0: draw each prompt's documents from this many (see above)
  int hot_pool = 0;       // > 0: half from this many recurring ones, half retrieved (above)
  // > 1 ("docqa-orders", 3): each question's top orders_of retrieved chunks in every order,
  // one prompt per permutation (ids "docqa:<id>#order<k>"): is the answer the same whatever
  // the order? num_queries counts questions.
  int orders_of = 0;
};

// Builds the docqa workload. Errors: InvalidArgument (options), NotFound (with the path),
// IoError, Corrupt (naming the file, line and field).
Result<Workload> BuildDocQaWorkload(const DocQaOptions& options);

}  // namespace reprise::workload
