#include "workload/docqa_workload.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "base/random.h"
#include "workload/bm25_index.h"
#include "workload/json_input.h"
#include "workload/prompt_fitting.h"
#include "workload/text_chunker.h"

namespace reprise::workload {
namespace {

struct Paragraph {
  std::string title;
  std::vector<std::string> sentences;
};

struct Item {
  std::string id;
  std::string question;
  std::string answer;
  std::vector<Paragraph> paragraphs;
};

Result<Item> ParseItem(const nlohmann::json& value, const std::string& what) {
  Item item;
  REPRISE_ASSIGN_OR_RETURN(item.id, JsonStringField(value, "id", what));
  REPRISE_ASSIGN_OR_RETURN(item.question, JsonStringField(value, "question", what));
  REPRISE_ASSIGN_OR_RETURN(item.answer, JsonScalarAsString(value, "answer", what));
  REPRISE_ASSIGN_OR_RETURN(const nlohmann::json* paragraphs,
                           JsonArrayField(value, "paragraphs", what));
  for (size_t p = 0; p < paragraphs->size(); ++p) {
    const std::string paragraph_what = what + " paragraph " + std::to_string(p);
    Paragraph paragraph;
    REPRISE_ASSIGN_OR_RETURN(paragraph.title,
                             JsonStringField((*paragraphs)[p], "title", paragraph_what));
    REPRISE_ASSIGN_OR_RETURN(const nlohmann::json* sentences,
                             JsonArrayField((*paragraphs)[p], "sentences", paragraph_what));
    for (const nlohmann::json& sentence : *sentences) {
      if (!sentence.is_string()) {
        return CorruptError(paragraph_what + ": a sentence is not a string but " +
                            sentence.type_name());
      }
      paragraph.sentences.push_back(sentence.get_ref<const std::string&>());
    }
    item.paragraphs.push_back(std::move(paragraph));
  }
  return item;
}

struct Collection {
  std::vector<Segment> chunks;  // role "document", index = Bm25Index chunk index
  Bm25Index index;
};

// Adds every distinct paragraph of `items`, chunked, to the collection.
Status BuildCollection(const std::vector<Item>& items, const WorkloadOptions& options,
                       Collection* collection) {
  std::unordered_set<std::string> seen;               // title + '\x1f' + text
  std::unordered_map<std::string, int> num_variants;  // title -> distinct texts so far
  ChunkingOptions chunking{.max_tokens = options.chunk_tokens, .suffix = "\n"};
  for (const Item& item : items) {
    for (const Paragraph& paragraph : item.paragraphs) {
      std::string text;
      for (const std::string& sentence : paragraph.sentences) text += sentence;
      if (text.empty()) continue;
      if (!seen.insert(paragraph.title + '\x1f' + text).second) continue;
      const int variant = num_variants[paragraph.title]++;
      std::string id_base = "hotpot:" + paragraph.title;
      if (variant > 0) id_base += "~" + std::to_string(variant);

      const TextGroup group{"Title: " + paragraph.title + "\n", paragraph.sentences};
      REPRISE_ASSIGN_OR_RETURN(std::vector<TextChunk> chunks,
                               PackIntoChunks({&group, 1}, chunking, options.count_tokens));
      for (size_t c = 0; c < chunks.size(); ++c) {
        collection->index.Add(chunks[c].text);
        collection->chunks.push_back({std::string(kRoleDocument), std::move(chunks[c].text),
                                      id_base + "#" + std::to_string(c)});
      }
    }
  }
  return Status::Ok();
}

// `drawn` of the indices [0, pool) in a random order: a partial Fisher-Yates shuffle seeded
// by `seed` (reproducible per query).
std::vector<size_t> DrawFromPool(size_t pool, size_t drawn, uint64_t seed) {
  std::vector<size_t> order(pool);
  for (size_t i = 0; i < pool; ++i) order[i] = i;
  Random random(seed);
  for (size_t i = 0; i < drawn; ++i) std::swap(order[i], order[i + random.NextBelow(pool - i)]);
  order.resize(drawn);
  return order;
}

}  // namespace

Result<Workload> BuildDocQaWorkload(const DocQaOptions& options) {
  const WorkloadOptions& common = options.common;
  REPRISE_RETURN_IF_ERROR(ValidateOptions(common));
  const std::string path = ResolveDataPath(common, options.file);
  REPRISE_ASSIGN_OR_RETURN(std::vector<nlohmann::json> lines, ReadJsonLinesFile(path));
  std::vector<Item> items;
  items.reserve(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    REPRISE_ASSIGN_OR_RETURN(Item item,
                             ParseItem(lines[i], path + ": item " + std::to_string(i + 1)));
    items.push_back(std::move(item));
  }

  if (items.empty()) return CorruptError(path + ": holds no items");
  if (options.shuffled_pool < 0 || options.shuffled_pool == 1) {
    return InvalidArgumentError("the shuffled pool needs at least 2 documents");
  }
  if (options.orders_of < 0 || options.orders_of == 1 || options.orders_of > 5 ||
      (options.orders_of > 0 && (options.hot_pool > 0 || options.shuffled_pool > 0))) {
    return InvalidArgumentError("orders_of must be 2 to 5, without a pool");
  }
  if (options.hot_pool < 0 || options.hot_pool == 1 ||
      (options.hot_pool > 0 && options.shuffled_pool > 0)) {
    return InvalidArgumentError("the hot pool needs at least 2 documents and no shuffled pool");
  }
  Collection collection;
  REPRISE_RETURN_IF_ERROR(BuildCollection(items, common, &collection));
  const size_t pool =
      std::min(collection.chunks.size(), static_cast<size_t>(options.shuffled_pool));
  const size_t hot = std::min(collection.chunks.size(), static_cast<size_t>(options.hot_pool));
  const size_t drawn =
      pool > 0 ? std::min(pool / 2, static_cast<size_t>(std::max(1, common.top_chunks)))
               : std::min(hot / 2, static_cast<size_t>(std::max(1, common.top_chunks / 2)));

  std::vector<Request> requests;
  BuilderCounts counts;
  size_t num_queries = items.size();
  if (common.num_queries > 0) {
    num_queries = std::min(num_queries, static_cast<size_t>(common.num_queries));
  }
  for (size_t q = 0; q < num_queries && options.orders_of > 1; ++q) {
    const Item& item = items[q];
    std::vector<size_t> chosen;
    for (const Bm25Hit& hit : collection.index.TopK(item.question, options.orders_of)) {
      chosen.push_back(static_cast<size_t>(hit.chunk_index));
    }
    std::sort(chosen.begin(), chosen.end());
    int k = 0;
    do {
      PromptParts parts;
      parts.id = "docqa:" + item.id + "#order" + std::to_string(k++);
      parts.system = {std::string(kRoleSystem), std::string(kDocQaSystemPrompt), "system:docqa"};
      for (size_t c : chosen) parts.contexts.push_back(collection.chunks[c]);
      parts.question = {std::string(kRoleQuestion), "Question: " + item.question + "\nAnswer:", ""};
      parts.reference_answer = item.answer;
      FittedPrompt fitted =
          FitPrompt(std::move(parts), common.max_prompt_tokens, common.count_tokens);
      if (!fitted.request || fitted.num_dropped_contexts > 0) {
        ++counts.num_skipped_requests;  // an order that does not fit whole is no comparison
        continue;
      }
      requests.push_back(std::move(*fitted.request));
    } while (std::next_permutation(chosen.begin(), chosen.end()));
  }
  for (size_t q = 0; q < num_queries && options.orders_of <= 1; ++q) {
    const Item& item = items[q];
    PromptParts parts;
    parts.id = "docqa:" + item.id;
    parts.system = {std::string(kRoleSystem), std::string(kDocQaSystemPrompt), "system:docqa"};
    if (pool > 0) {
      for (size_t c : DrawFromPool(pool, drawn, 0x5eed0000u + q)) {
        parts.contexts.push_back(collection.chunks[c]);
      }
    } else if (hot > 0) {
      for (size_t c : DrawFromPool(hot, drawn, 0x407a0000u + q)) {
        parts.contexts.push_back(collection.chunks[c]);
      }
      const size_t wanted = static_cast<size_t>(std::max(common.top_chunks, 1));
      for (const Bm25Hit& hit :
           collection.index.TopK(item.question, common.top_chunks + static_cast<int>(hot))) {
        if (parts.contexts.size() >= wanted) break;
        if (static_cast<size_t>(hit.chunk_index) < hot) continue;  // in the hot pool
        parts.contexts.push_back(collection.chunks[static_cast<size_t>(hit.chunk_index)]);
      }
    } else {
      for (const Bm25Hit& hit : collection.index.TopK(item.question, common.top_chunks)) {
        parts.contexts.push_back(collection.chunks[static_cast<size_t>(hit.chunk_index)]);
      }
    }
    parts.question = {std::string(kRoleQuestion), "Question: " + item.question + "\nAnswer:", ""};
    parts.reference_answer = item.answer;
    FittedPrompt fitted =
        FitPrompt(std::move(parts), common.max_prompt_tokens, common.count_tokens);
    if (!fitted.request) {
      ++counts.num_skipped_requests;
      continue;
    }
    counts.num_dropped_segments += fitted.num_dropped_contexts;
    requests.push_back(std::move(*fitted.request));
  }
  if (pool > 0) collection.chunks.resize(pool);
  return FinishWorkload(pool > 0                ? "docqa-shuffled"
                        : hot > 0               ? "docqa-hot"
                        : options.orders_of > 1 ? "docqa-orders"
                                                : "docqa",
                        std::move(requests), std::move(collection.chunks), counts, common);
}

}  // namespace reprise::workload
