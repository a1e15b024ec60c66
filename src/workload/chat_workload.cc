#include "workload/chat_workload.h"

#include <algorithm>
#include <charconv>
#include <cstdint>

#include "workload/bm25_index.h"
#include "workload/json_input.h"
#include "workload/prompt_fitting.h"
#include "workload/text_chunker.h"

namespace reprise::workload {
namespace {

constexpr int kAdversarialCategory = 5;

// n when `key` is "session_<n>" exactly, else -1.
int SessionNumber(std::string_view key) {
  constexpr std::string_view kPrefix = "session_";
  if (!key.starts_with(kPrefix)) return -1;
  key.remove_prefix(kPrefix.size());
  int number = -1;
  auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), number);
  if (error != std::errc() || end != key.data() + key.size() || key.empty()) return -1;
  return number;
}

// The sessions of a LoCoMo "conversation" object as chunking groups, in session order.
Result<std::vector<TextGroup>> ParseSessions(const nlohmann::json& conversation,
                                             const std::string& what) {
  std::vector<std::pair<int, const nlohmann::json*>> sessions;
  for (auto it = conversation.begin(); it != conversation.end(); ++it) {
    const int number = SessionNumber(it.key());
    if (number < 0) continue;
    if (!it->is_array()) {
      return CorruptError(what + ": field '" + it.key() + "' should be an array, is " +
                          it->type_name());
    }
    sessions.emplace_back(number, &*it);
  }
  std::sort(sessions.begin(), sessions.end());

  std::vector<TextGroup> groups;
  for (const auto& [number, turns] : sessions) {
    const std::string session_what = what + " session_" + std::to_string(number);
    TextGroup group;
    const std::string date_key = "session_" + std::to_string(number) + "_date_time";
    group.heading = "Session " + std::to_string(number);
    if (conversation.contains(date_key)) {
      REPRISE_ASSIGN_OR_RETURN(std::string date, JsonStringField(conversation, date_key, what));
      group.heading += " (" + date + ")";
    }
    group.heading += ":\n";
    for (size_t t = 0; t < turns->size(); ++t) {
      const nlohmann::json& turn = (*turns)[t];
      const std::string turn_what = session_what + " turn " + std::to_string(t);
      REPRISE_ASSIGN_OR_RETURN(std::string speaker, JsonStringField(turn, "speaker", turn_what));
      REPRISE_ASSIGN_OR_RETURN(std::string text, JsonStringField(turn, "text", turn_what));
      std::string line = speaker + ": " + text;
      if (turn.contains("blip_caption")) {
        REPRISE_ASSIGN_OR_RETURN(std::string caption,
                                 JsonStringField(turn, "blip_caption", turn_what));
        line += " [shares an image: " + caption + "]";
      }
      line += "\n";
      group.units.push_back(std::move(line));
    }
    groups.push_back(std::move(group));
  }
  return groups;
}

}  // namespace

Result<Workload> BuildChatWorkload(const ChatOptions& options) {
  const WorkloadOptions& common = options.common;
  REPRISE_RETURN_IF_ERROR(ValidateOptions(common));
  if (options.max_conversations < 0) {
    return InvalidArgumentError("chat: max_conversations must be >= 0 (0 = all), got " +
                                std::to_string(options.max_conversations));
  }
  const std::string path = ResolveDataPath(common, options.file);
  REPRISE_ASSIGN_OR_RETURN(nlohmann::json root, ReadJsonFile(path));
  if (!root.is_array()) {
    return CorruptError(path + ": should be an array of samples, is " + root.type_name());
  }
  if (root.empty()) return CorruptError(path + ": holds no samples");

  size_t num_conversations = root.size();
  if (options.max_conversations > 0) {
    num_conversations = std::min(num_conversations, static_cast<size_t>(options.max_conversations));
  }
  const size_t max_queries =
      common.num_queries > 0 ? static_cast<size_t>(common.num_queries) : SIZE_MAX;
  const ChunkingOptions chunking{.max_tokens = common.chunk_tokens, .allow_mixed_groups = true};

  std::vector<Request> requests;
  std::vector<Segment> collection;  // every conversation's chunks, in order
  BuilderCounts counts;
  size_t num_considered = 0;  // questions taken, including skipped ones
  for (size_t s = 0; s < num_conversations && num_considered < max_queries; ++s) {
    const nlohmann::json& sample = root[s];
    const std::string what = path + ": sample " + std::to_string(s);
    REPRISE_ASSIGN_OR_RETURN(std::string sample_id, JsonStringField(sample, "sample_id", what));
    REPRISE_ASSIGN_OR_RETURN(const nlohmann::json* conversation,
                             JsonObjectField(sample, "conversation", what));
    REPRISE_ASSIGN_OR_RETURN(const nlohmann::json* qa, JsonArrayField(sample, "qa", what));
    REPRISE_ASSIGN_OR_RETURN(std::vector<TextGroup> sessions,
                             ParseSessions(*conversation, what + " conversation"));
    REPRISE_ASSIGN_OR_RETURN(std::vector<TextChunk> chunks,
                             PackIntoChunks(sessions, chunking, common.count_tokens));

    Bm25Index index;
    const size_t first_chunk = collection.size();
    for (size_t c = 0; c < chunks.size(); ++c) {
      index.Add(chunks[c].text);
      collection.push_back({std::string(kRoleTurn), std::move(chunks[c].text),
                            "locomo:" + sample_id + ":" + std::to_string(c)});
    }

    for (size_t q = 0; q < qa->size() && num_considered < max_queries; ++q) {
      const std::string qa_what = what + " qa " + std::to_string(q);
      const nlohmann::json& item = (*qa)[q];
      REPRISE_ASSIGN_OR_RETURN(std::string question, JsonStringField(item, "question", qa_what));
      REPRISE_ASSIGN_OR_RETURN(int64_t category, JsonIntField(item, "category", qa_what));
      if (category == kAdversarialCategory && !options.include_adversarial) continue;
      ++num_considered;

      PromptParts parts;
      parts.id = "chat:" + sample_id + ":q" + std::to_string(q);
      parts.system = {std::string(kRoleSystem), std::string(kChatSystemPrompt), "system:chat"};
      for (const Bm25Hit& hit : index.TopK(question, common.top_chunks)) {
        parts.contexts.push_back(collection[first_chunk + static_cast<size_t>(hit.chunk_index)]);
      }
      parts.question = {std::string(kRoleQuestion), "Question: " + question + "\nAnswer:", ""};
      REPRISE_ASSIGN_OR_RETURN(parts.reference_answer, JsonScalarAsString(item, "answer", qa_what));
      FittedPrompt fitted =
          FitPrompt(std::move(parts), common.max_prompt_tokens, common.count_tokens);
      if (!fitted.request) {
        ++counts.num_skipped_requests;
        continue;
      }
      counts.num_dropped_segments += fitted.num_dropped_contexts;
      requests.push_back(std::move(*fitted.request));
    }
  }
  return FinishWorkload("chat", std::move(requests), std::move(collection), counts, common);
}

}  // namespace reprise::workload

namespace reprise::workload {

Result<Workload> BuildChatWindowWorkload(const ChatOptions& options) {
  const WorkloadOptions& common = options.common;
  REPRISE_RETURN_IF_ERROR(ValidateOptions(common));
  if (common.max_prompt_tokens <= 0) {
    return InvalidArgumentError("chat-window: needs a prompt budget (max_prompt_tokens > 0): "
                                "the window is what fits in it");
  }
  const std::string path = ResolveDataPath(common, options.file);
  REPRISE_ASSIGN_OR_RETURN(nlohmann::json root, ReadJsonFile(path));
  if (!root.is_array() || root.empty()) {
    return CorruptError(path + ": should be a non-empty array of samples");
  }
  size_t num_conversations = root.size();
  if (options.max_conversations > 0) {
    num_conversations = std::min(num_conversations, static_cast<size_t>(options.max_conversations));
  }
  const size_t max_requests =
      common.num_queries > 0 ? static_cast<size_t>(common.num_queries) : SIZE_MAX;
  const Segment system{std::string(kRoleSystem), std::string(kChatWindowSystemPrompt),
                       "system:chat-window"};
  const Segment question{std::string(kRoleQuestion), "Next line:\n", ""};
  const int fixed_tokens =
      common.count_tokens(system.text) + common.count_tokens(question.text);

  std::vector<Request> requests;
  std::vector<Segment> collection;
  BuilderCounts counts;
  for (size_t s = 0; s < num_conversations && requests.size() < max_requests; ++s) {
    const nlohmann::json& sample = root[s];
    const std::string what = path + ": sample " + std::to_string(s);
    REPRISE_ASSIGN_OR_RETURN(std::string sample_id, JsonStringField(sample, "sample_id", what));
    REPRISE_ASSIGN_OR_RETURN(const nlohmann::json* conversation,
                             JsonObjectField(sample, "conversation", what));
    REPRISE_ASSIGN_OR_RETURN(std::vector<TextGroup> sessions,
                             ParseSessions(*conversation, what + " conversation"));
    // Every turn a segment of its own, as a chat app sends each message; a session's first
    // turn carries the session's heading.
    std::vector<Segment> turns;
    std::vector<int> turn_tokens;
    for (const TextGroup& session : sessions) {
      for (size_t u = 0; u < session.units.size(); ++u) {
        std::string text = u == 0 ? session.heading + session.units[u] : session.units[u];
        turn_tokens.push_back(common.count_tokens(text));
        turns.push_back({std::string(kRoleTurn), std::move(text),
                         "locomo:" + sample_id + ":turn" + std::to_string(turns.size())});
      }
    }
    const int budget = common.max_prompt_tokens - fixed_tokens;
    // The window ends at `end` (exclusive) and holds the latest turns that fit the budget;
    // the first request is the first time the window is full, then every kChatWindowStep
    // turns the window moves on, dropping the oldest turns.
    size_t begin = 0;
    int tokens = 0;
    bool full = false;  // the window has dropped a turn: from now on it moves
    for (size_t end = 0; end < turns.size() && requests.size() < max_requests; ++end) {
      tokens += turn_tokens[end];
      while (tokens > budget && begin <= end) {
        tokens -= turn_tokens[begin++];
        full = true;
      }
      if (begin > end) {  // one turn alone is over the budget
        ++counts.num_skipped_requests;
        tokens = 0;
        begin = end + 1;
        continue;
      }
      if (!full || (end + 1) % kChatWindowStep != 0) continue;
      Request request;
      request.id = "chat-window:" + sample_id + ":t" + std::to_string(end);
      request.segments.push_back(system);
      for (size_t t = begin; t <= end; ++t) request.segments.push_back(turns[t]);
      request.segments.push_back(question);
      if (end + 1 < turns.size()) {
        request.reference_answer = turns[end + 1].text;
      }
      requests.push_back(std::move(request));
    }
    for (Segment& turn : turns) collection.push_back(std::move(turn));
  }
  return FinishWorkload("chat-window", std::move(requests), std::move(collection), counts,
                        common);
}

}  // namespace reprise::workload
