#include "store/pool_text_index.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "store/text_query.h"

namespace reprise::store {

void PoolTextIndex::Add(const PoolKey& key, std::string_view text) {
  Remove(key);
  if (text.empty()) return;
  std::vector<std::string> words = SplitQueryWords(text);
  for (const std::string& word : words) postings_[word].insert(key);
  words_of_.emplace(key, std::move(words));
}

void PoolTextIndex::Remove(const PoolKey& key) {
  auto it = words_of_.find(key);
  if (it == words_of_.end()) return;
  for (const std::string& word : it->second) {
    auto posting = postings_.find(word);
    if (posting == postings_.end()) continue;
    posting->second.erase(key);
    if (posting->second.empty()) postings_.erase(posting);
  }
  words_of_.erase(it);
}

std::vector<kv::ChunkId> PoolTextIndex::Search(std::string_view name_space, std::string_view query,
                                               int max_results) const {
  std::vector<kv::ChunkId> out;
  if (max_results <= 0 || words_of_.empty()) return out;
  const double n = static_cast<double>(words_of_.size());
  std::map<kv::ChunkId, double> score_of;  // ordered: ties below break by id
  for (const std::string& word : SplitQueryWords(query)) {
    auto posting = postings_.find(word);
    if (posting == postings_.end()) continue;
    const double df = static_cast<double>(posting->second.size());
    const double idf = std::log(1.0 + (n - df + 0.5) / (df + 0.5));
    for (const PoolKey& key : posting->second) {
      if (key.name_space == name_space) score_of[key.value] += idf;
    }
  }
  std::vector<std::pair<double, kv::ChunkId>> ranked;
  ranked.reserve(score_of.size());
  for (const auto& [id, score] : score_of) ranked.emplace_back(score, id);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [score, id] : ranked) {
    out.push_back(id);
    if (out.size() == static_cast<size_t>(max_results)) break;
  }
  return out;
}

}  // namespace reprise::store
