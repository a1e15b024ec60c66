// Okapi BM25 retrieval over a collection of text chunks: how the docqa and chat workloads
// pick the documents of each prompt, as a RAG system would.
//
// Retrieval terms (RetrievalTerms): the text is lowercased (ASCII letters only) and split on
// every byte that is not an ASCII letter or digit; bytes >= 0x80 count as letters, so UTF-8
// words stay whole. Terms in a small English stop-word list (IsStopWord) are dropped. There
// is no stemming.
//
// Scoring, for a chunk d and the distinct terms t of the query:
//   score(d) = sum_t idf(t) * tf(t,d) * (k1 + 1) / (tf(t,d) + k1 * (1 - b + b * |d| / avgdl))
//   idf(t)   = ln(1 + (N - n(t) + 0.5) / (n(t) + 0.5))
// with N chunks, n(t) of them holding t, |d| the chunk's term count and avgdl the mean of
// |d|. This idf (Lucene's) stays positive for terms in more than half the chunks, so a common
// term never lowers a score. k1 = 1.2 and b = 0.75 are the usual defaults (Robertson et al.;
// Lucene, Elasticsearch); chunk lengths here are bounded by the chunker, so full length
// normalisation (b near 1) is not needed and 0.75 is kept.
//
// Thread-compatible: Add needs exclusive access; concurrent TopK calls are safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace reprise::workload {

// The retrieval terms of `text`, in order, stop words removed.
std::vector<std::string> RetrievalTerms(std::string_view text);

// True for the stop words that RetrievalTerms drops. Requires: `term` lowercase.
bool IsStopWord(std::string_view term);

struct Bm25Params {
  double k1 = 1.2;
  double b = 0.75;
};

struct Bm25Hit {
  int chunk_index = 0;  // as returned by Add
  double score = 0;
};

class Bm25Index {
 public:
  explicit Bm25Index(Bm25Params params = {}) : params_(params) {}

  // Adds a chunk and returns its index (0, 1, 2, ... in the order of the calls).
  int Add(std::string_view chunk);

  // The at most k chunks with a positive score for `query`, best first; equal scores are
  // ordered by ascending chunk index. Requires: k >= 0.
  std::vector<Bm25Hit> TopK(std::string_view query, int k) const;

  int num_chunks() const { return static_cast<int>(chunk_lengths_.size()); }
  int num_terms() const { return static_cast<int>(postings_.size()); }

 private:
  struct Posting {
    int32_t chunk_index;
    int32_t term_frequency;
  };

  Bm25Params params_;
  std::unordered_map<std::string, int32_t> term_ids_;
  std::vector<std::vector<Posting>> postings_;  // [num_terms], by ascending chunk_index
  std::vector<int32_t> chunk_lengths_;          // [num_chunks], in retrieval terms
  int64_t total_length_ = 0;                    // sum of chunk_lengths_
};

}  // namespace reprise::workload
