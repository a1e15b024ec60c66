#include "workload/bm25_index.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

#include "base/check.h"

namespace reprise::workload {
namespace {

// Sorted, so that IsStopWord can binary-search it (a test checks the order). Function words
// and the question words of the benchmark questions, which carry no topic.
constexpr std::array<std::string_view, 58> kStopWords = {
    "a",    "about", "after", "all",  "also",  "an",   "and",   "any",   "are",  "as",
    "at",   "be",    "been",  "but",  "by",    "can",  "did",   "do",    "does", "for",
    "from", "had",   "has",   "have", "he",    "her",  "his",   "how",   "i",    "if",
    "in",   "into",  "is",    "it",   "its",   "not",  "of",    "on",    "or",   "she",
    "so",   "than",  "that",  "the",  "their", "them", "there", "these", "they", "this",
    "to",   "was",   "we",    "were", "what",  "when", "which", "who"};

bool IsWordByte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80;
}

}  // namespace

bool IsStopWord(std::string_view term) {
  return std::binary_search(kStopWords.begin(), kStopWords.end(), term);
}

std::vector<std::string> RetrievalTerms(std::string_view text) {
  std::vector<std::string> terms;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && !IsWordByte(static_cast<unsigned char>(text[i]))) ++i;
    std::string term;
    while (i < text.size() && IsWordByte(static_cast<unsigned char>(text[i]))) {
      char c = text[i++];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      term += c;
    }
    if (!term.empty() && !IsStopWord(term)) terms.push_back(std::move(term));
  }
  return terms;
}

int Bm25Index::Add(std::string_view chunk) {
  const int32_t chunk_index = static_cast<int32_t>(chunk_lengths_.size());
  const std::vector<std::string> terms = RetrievalTerms(chunk);
  // std::map: postings are appended in a fixed order (not needed for scores, but keeps the
  // index layout deterministic).
  std::map<std::string_view, int32_t> frequencies;
  for (const std::string& term : terms) ++frequencies[term];
  for (const auto& [term, frequency] : frequencies) {
    auto [it, inserted] =
        term_ids_.try_emplace(std::string(term), static_cast<int32_t>(postings_.size()));
    if (inserted) postings_.emplace_back();
    postings_[static_cast<size_t>(it->second)].push_back({chunk_index, frequency});
  }
  chunk_lengths_.push_back(static_cast<int32_t>(terms.size()));
  total_length_ += static_cast<int64_t>(terms.size());
  return chunk_index;
}

std::vector<Bm25Hit> Bm25Index::TopK(std::string_view query, int k) const {
  REPRISE_CHECK(k >= 0) << "k " << k;
  std::vector<Bm25Hit> hits;
  if (k == 0 || chunk_lengths_.empty() || total_length_ == 0) return hits;

  // Distinct query terms in sorted order: each counts once, and the floating-point sums run
  // in the same order for every chunk, so equal chunks get bit-equal scores.
  std::vector<std::string> terms = RetrievalTerms(query);
  std::sort(terms.begin(), terms.end());
  terms.erase(std::unique(terms.begin(), terms.end()), terms.end());

  const double num_chunks = static_cast<double>(chunk_lengths_.size());
  const double avg_length = static_cast<double>(total_length_) / num_chunks;
  std::vector<double> scores(chunk_lengths_.size(), 0.0);  // [num_chunks]
  std::vector<int32_t> touched;
  for (const std::string& term : terms) {
    auto it = term_ids_.find(term);
    if (it == term_ids_.end()) continue;
    const std::vector<Posting>& postings = postings_[static_cast<size_t>(it->second)];
    const double df = static_cast<double>(postings.size());
    const double idf = std::log(1.0 + (num_chunks - df + 0.5) / (df + 0.5));
    for (const Posting& posting : postings) {
      const double tf = posting.term_frequency;
      const double length = chunk_lengths_[static_cast<size_t>(posting.chunk_index)];
      const double norm = params_.k1 * (1.0 - params_.b + params_.b * length / avg_length);
      double& score = scores[static_cast<size_t>(posting.chunk_index)];
      if (score == 0.0) touched.push_back(posting.chunk_index);
      score += idf * tf * (params_.k1 + 1.0) / (tf + norm);
    }
  }

  hits.reserve(touched.size());
  for (int32_t index : touched) hits.push_back({index, scores[static_cast<size_t>(index)]});
  auto better = [](const Bm25Hit& a, const Bm25Hit& b) {
    if (a.score != b.score) return a.score > b.score;
    return a.chunk_index < b.chunk_index;
  };
  const size_t keep = std::min(hits.size(), static_cast<size_t>(k));
  std::partial_sort(hits.begin(), hits.begin() + static_cast<std::ptrdiff_t>(keep), hits.end(),
                    better);
  hits.resize(keep);
  return hits;
}

}  // namespace reprise::workload
