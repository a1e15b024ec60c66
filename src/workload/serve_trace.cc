#include "workload/serve_trace.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <random>
#include <unordered_map>
#include <unordered_set>

#include "workload/agent_tool_trace.h"
#include "workload/chat_workload.h"
#include "workload/docqa_workload.h"
#include "workload/json_input.h"
#include "workload/prompt_fitting.h"
#include "workload/skills_workload.h"

namespace reprise::workload {
namespace {

constexpr std::array<std::string_view, 5> kNames = {"docqa", "chat-session", "agent",
                                                    "docqa-shuffled", "agent-tools"};

// Skills are kept whole (the agent loads a SKILL.md entire), so the chunker must never cut.
constexpr int kWholeTextTokens = 1 << 30;

Status ValidateTraceOptions(const ServeTraceOptions& options) {
  if (!options.count_tokens) return InvalidArgumentError("serve trace: count_tokens is not set");
  if (options.num_requests < 0) {
    return InvalidArgumentError("serve trace: num_requests must be >= 0, got " +
                                std::to_string(options.num_requests));
  }
  if (options.max_prompt_tokens < 0) {
    return InvalidArgumentError("serve trace: max_prompt_tokens must be >= 0, got " +
                                std::to_string(options.max_prompt_tokens));
  }
  if (options.max_skills_per_task < 1) {
    return InvalidArgumentError("serve trace: max_skills_per_task must be >= 1, got " +
                                std::to_string(options.max_skills_per_task));
  }
  if (!(options.skill_zipf_exponent >= 0)) {
    return InvalidArgumentError("serve trace: skill_zipf_exponent must be >= 0");
  }
  return Status::Ok();
}

WorkloadOptions CommonOptions(const ServeTraceOptions& options) {
  WorkloadOptions common;
  common.data_dir = options.data_dir;
  common.num_queries = options.num_requests;
  common.top_chunks = options.top_documents;
  common.chunk_tokens = options.chunk_tokens;
  common.max_prompt_tokens = options.max_prompt_tokens;
  common.count_tokens = options.count_tokens;
  return common;
}

TraceText ToTraceText(const Segment& segment) { return {segment.source_id, segment.text}; }

// A docqa question as a query request: its system segment, documents and question.
TraceRequest QueryOf(const Request& request) {
  TraceRequest query;
  query.id = request.id;
  query.phase = kPhaseQuery;
  for (const Segment& segment : request.segments) {
    if (segment.role == kRoleSystem) {
      query.system = segment.text;
    } else if (segment.role == kRoleDocument) {
      query.documents.push_back(ToTraceText(segment));
    } else {
      query.user = segment.text;
    }
  }
  return query;
}

// The order of the questions: first those that share a retrieved document with another one,
// each group of connected questions together (in the order of its first member, members in
// file order), then the rest in file order. HotpotQA's questions rarely retrieve the same
// paragraph (39 of 1,961 with top-4 over the 500), so file order would hide the reuse across
// questions; grouped, the first questions behave like a user asking related questions.
std::vector<size_t> RelatedQuestionsFirst(const std::vector<Request>& requests) {
  std::unordered_map<std::string, std::vector<size_t>> askers;  // document id -> questions
  for (size_t q = 0; q < requests.size(); ++q) {
    for (const Segment& segment : requests[q].segments) {
      if (segment.role == kRoleDocument) askers[segment.source_id].push_back(q);
    }
  }
  std::vector<size_t> order;
  std::vector<bool> placed(requests.size(), false);
  for (size_t first = 0; first < requests.size(); ++first) {
    if (placed[first]) continue;
    std::vector<size_t> group = {first};
    placed[first] = true;
    for (size_t g = 0; g < group.size(); ++g) {
      for (const Segment& segment : requests[group[g]].segments) {
        if (segment.role != kRoleDocument) continue;
        for (size_t other : askers[segment.source_id]) {
          if (!placed[other]) {
            placed[other] = true;
            group.push_back(other);
          }
        }
      }
    }
    if (group.size() < 2) {
      placed[first] = false;  // a loner: placed after the groups
      continue;
    }
    std::sort(group.begin(), group.end());
    order.insert(order.end(), group.begin(), group.end());
  }
  for (size_t q = 0; q < requests.size(); ++q) {
    if (!placed[q]) order.push_back(q);
  }
  return order;
}

Result<ServeTrace> BuildDocQaTrace(const ServeTraceOptions& options) {
  DocQaOptions docqa;
  docqa.common = CommonOptions(options);
  docqa.common.num_queries = 0;  // all: the related ones are picked first
  REPRISE_ASSIGN_OR_RETURN(Workload all, BuildDocQaWorkload(docqa));
  std::vector<Request> questions;
  for (size_t q : RelatedQuestionsFirst(all.requests)) {
    if (options.num_requests > 0 && questions.size() == static_cast<size_t>(options.num_requests)) {
      break;
    }
    questions.push_back(std::move(all.requests[q]));
  }

  ServeTrace trace{"docqa", {}};
  std::unordered_set<std::string> indexed;
  for (const Request& request : questions) {
    for (const Segment& segment : request.segments) {
      if (segment.role != kRoleDocument || !indexed.insert(segment.source_id).second) continue;
      TraceRequest index;
      index.id = "index:" + segment.source_id;
      index.phase = kPhaseIndex;
      index.system = kDocQaSystemPrompt;
      index.documents.push_back(ToTraceText(segment));
      index.user = kDocQaIndexUserMessage;
      index.max_tokens = 1;
      trace.requests.push_back(std::move(index));
    }
  }
  for (const Request& request : questions) {
    trace.requests.push_back(QueryOf(request));
  }
  return trace;
}

// The docqa-shuffled workload's questions as they are, without an index phase: each
// document reaches the server only inside a question's prompt.
Result<ServeTrace> BuildDocQaShuffledTrace(const ServeTraceOptions& options) {
  DocQaOptions docqa;
  docqa.common = CommonOptions(options);
  docqa.common.top_chunks = 6;
  docqa.common.chunk_tokens = 512;
  docqa.file = std::string(kHotpotDistractorFile);
  docqa.shuffled_pool = 12;
  REPRISE_ASSIGN_OR_RETURN(Workload workload, BuildDocQaWorkload(docqa));
  ServeTrace trace{"docqa-shuffled", {}};
  for (const Request& request : workload.requests) {
    trace.requests.push_back(QueryOf(request));
  }
  return trace;
}

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

// Appends one request per user message of a LoCoMo sample, until `limit` requests in all. The
// sample's first speaker is the user; consecutive turns of one side make one message, one line
// each; a session's first turn is led by its header line.
Status AppendConversation(const nlohmann::json& sample, const std::string& what, size_t limit,
                          std::vector<TraceRequest>* requests) {
  REPRISE_ASSIGN_OR_RETURN(std::string sample_id, JsonStringField(sample, "sample_id", what));
  REPRISE_ASSIGN_OR_RETURN(const nlohmann::json* conversation,
                           JsonObjectField(sample, "conversation", what));
  std::string speakers;
  for (std::string_view key : {"speaker_a", "speaker_b"}) {
    if (!conversation->contains(key)) continue;
    REPRISE_ASSIGN_OR_RETURN(std::string name, JsonStringField(*conversation, key, what));
    speakers += (speakers.empty() ? "" : " and ") + name;
  }
  std::string system(kChatSessionSystemPrompt);
  if (!speakers.empty()) system += "The conversation is between " + speakers + ".\n";

  std::vector<std::pair<int, const nlohmann::json*>> sessions;
  for (auto it = conversation->begin(); it != conversation->end(); ++it) {
    const int number = SessionNumber(it.key());
    if (number < 0) continue;
    if (!it->is_array()) {
      return CorruptError(what + ": field '" + it.key() + "' should be an array, is " +
                          it->type_name());
    }
    sessions.emplace_back(number, &*it);
  }
  std::sort(sessions.begin(), sessions.end());

  // The messages, alternating sides: the user's carry the id of their first turn.
  struct Message {
    bool is_user = false;
    std::string id;
    std::string text;
  };
  std::vector<Message> messages;
  std::string user_speaker;
  for (const auto& [number, turns] : sessions) {
    const std::string session_key = "session_" + std::to_string(number);
    std::string header = "[Session " + std::to_string(number);
    if (conversation->contains(session_key + "_date_time")) {
      REPRISE_ASSIGN_OR_RETURN(std::string date,
                               JsonStringField(*conversation, session_key + "_date_time", what));
      header += ", " + date;
    }
    header += "]\n";
    for (size_t t = 0; t < turns->size(); ++t) {
      const nlohmann::json& turn = (*turns)[t];
      const std::string turn_what = what + " " + session_key + " turn " + std::to_string(t);
      REPRISE_ASSIGN_OR_RETURN(std::string speaker, JsonStringField(turn, "speaker", turn_what));
      REPRISE_ASSIGN_OR_RETURN(std::string text, JsonStringField(turn, "text", turn_what));
      std::string line = (t == 0 ? header : std::string()) + speaker + ": " + text;
      if (turn.contains("blip_caption")) {
        REPRISE_ASSIGN_OR_RETURN(std::string caption,
                                 JsonStringField(turn, "blip_caption", turn_what));
        line += " [shares an image: " + caption + "]";
      }
      if (user_speaker.empty()) user_speaker = speaker;
      const bool is_user = speaker == user_speaker;
      if (!messages.empty() && messages.back().is_user == is_user) {
        messages.back().text += "\n" + line;
      } else {
        messages.push_back(
            {is_user,
             "chat:" + sample_id + ":s" + std::to_string(number) + ":t" + std::to_string(t),
             std::move(line)});
      }
    }
  }
  for (size_t m = 0; m < messages.size() && requests->size() < limit; ++m) {
    if (!messages[m].is_user) continue;
    TraceRequest request;
    request.id = messages[m].id;
    request.phase = kPhaseQuery;
    request.system = system;
    request.conversation_id = "locomo:" + sample_id;
    request.user = messages[m].text;
    // The conversation's last message has no answer: nothing is sent after it.
    request.reply = m + 1 < messages.size() ? messages[m + 1].text : std::string();
    requests->push_back(std::move(request));
  }
  return Status::Ok();
}

Result<ServeTrace> BuildChatSessionTrace(const ServeTraceOptions& options) {
  const WorkloadOptions common = CommonOptions(options);
  const std::string path = ResolveDataPath(common, kLocomoFile);
  REPRISE_ASSIGN_OR_RETURN(nlohmann::json root, ReadJsonFile(path));
  if (!root.is_array()) {
    return CorruptError(path + ": should be an array of samples, is " + root.type_name());
  }
  const size_t limit =
      options.num_requests > 0 ? static_cast<size_t>(options.num_requests) : SIZE_MAX;
  ServeTrace trace{"chat-session", {}};
  for (size_t s = 0; s < root.size() && trace.requests.size() < limit; ++s) {
    REPRISE_RETURN_IF_ERROR(AppendConversation(root[s], path + ": sample " + std::to_string(s),
                                               limit, &trace.requests));
  }
  if (trace.requests.empty()) return CorruptError(path + ": holds no turns");
  return trace;
}

// A uniform double in [0, 1) from the top 53 bits: std::mt19937_64's output is fixed by the
// standard, the distributions' algorithms are not, so the trace is the same on every library.
double UniformDouble(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

// The ranks 0..n-1 in a seeded random order (Fisher-Yates on UniformDouble).
std::vector<int> SeededPermutation(int n, std::mt19937_64& rng) {
  std::vector<int> order(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  for (int i = n - 1; i > 0; --i) {
    const int j = std::min(i, static_cast<int>(UniformDouble(rng) * (i + 1)));
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  }
  return order;
}

// Draws `count` distinct ranks in [0, n) with P(r) ~ 1/(r+1)^exponent. Requires count <= n.
std::vector<int> DrawZipf(int n, int count, double exponent, std::mt19937_64& rng) {
  std::vector<double> cumulative(static_cast<size_t>(n));
  double total = 0;
  for (int r = 0; r < n; ++r) {
    total += 1.0 / std::pow(r + 1.0, exponent);
    cumulative[static_cast<size_t>(r)] = total;
  }
  std::vector<int> drawn;
  while (static_cast<int>(drawn.size()) < count) {
    const double u = UniformDouble(rng) * total;
    int r = static_cast<int>(std::upper_bound(cumulative.begin(), cumulative.end(), u) -
                             cumulative.begin());
    r = std::min(r, n - 1);
    if (std::find(drawn.begin(), drawn.end(), r) == drawn.end()) drawn.push_back(r);
  }
  return drawn;
}

Result<ServeTrace> BuildAgentTrace(const ServeTraceOptions& options) {
  SkillsOptions skills;
  skills.common = CommonOptions(options);
  skills.common.num_queries = 0;        // every task: the trace cycles over them
  skills.common.max_prompt_tokens = 0;  // fitted below, around the drawn skills
  skills.common.chunk_tokens = kWholeTextTokens;
  skills.max_catalog_skills = options.max_catalog_skills;
  REPRISE_ASSIGN_OR_RETURN(Workload workload, BuildSkillsWorkload(skills));

  // The collection holds each skill whole ("skill:<key>#0"), in catalogue (key) order; the
  // catalogue lists its first max_catalog_skills.
  std::vector<const Segment*> catalogue;
  for (const Segment& segment : workload.collection) {
    if (options.max_catalog_skills > 0 &&
        static_cast<int>(catalogue.size()) == options.max_catalog_skills) {
      break;
    }
    catalogue.push_back(&segment);
  }
  if (catalogue.empty() || workload.requests.empty()) {
    return CorruptError("agent trace: the skills file holds no skills or no tasks");
  }
  const int num_skills = static_cast<int>(catalogue.size());
  std::mt19937_64 rng(options.seed);
  const std::vector<int> ranking = SeededPermutation(num_skills, rng);

  const size_t num_tasks = workload.requests.size();
  const size_t num_requests =
      options.num_requests > 0 ? static_cast<size_t>(options.num_requests) : num_tasks;
  ServeTrace trace{"agent", {}};
  for (size_t i = 0; i < num_requests; ++i) {
    const Request& task = workload.requests[i % num_tasks];
    int own_skills = 0;
    for (const Segment& segment : task.segments) own_skills += segment.role == kRoleSkill;
    const int count = std::min({std::max(own_skills, 1), options.max_skills_per_task, num_skills});

    PromptParts parts;
    parts.id = "agent:" + task.id.substr(task.id.find(':') + 1);
    if (i >= num_tasks) parts.id += "#" + std::to_string(i / num_tasks);
    parts.system = task.segments.front();
    for (int rank : DrawZipf(num_skills, count, options.skill_zipf_exponent, rng)) {
      parts.contexts.push_back(*catalogue[static_cast<size_t>(ranking[static_cast<size_t>(rank)])]);
    }
    parts.question = task.segments.back();
    FittedPrompt fitted = FitPrompt(std::move(parts), options.max_prompt_tokens,
                                    options.count_tokens);
    if (!fitted.request) continue;  // catalogue + task alone exceed the budget

    TraceRequest request;
    request.id = fitted.request->id;
    request.phase = kPhaseQuery;
    for (const Segment& segment : fitted.request->segments) {
      if (segment.role == kRoleSystem) {
        request.system = segment.text;
      } else if (segment.role == kRoleSkill) {
        // "skill:<key>#0" -> "<key>": the id an app would give the skill.
        std::string key = segment.source_id.substr(6, segment.source_id.rfind('#') - 6);
        request.skills.push_back({std::move(key), segment.text});
      } else {
        request.user = segment.text;
      }
    }
    trace.requests.push_back(std::move(request));
  }
  if (trace.requests.empty()) {
    return InvalidArgumentError(
        "agent trace: the skill catalogue and each task exceed max_prompt_tokens " +
        std::to_string(options.max_prompt_tokens) + " (a larger context or fewer catalogue "
        "skills makes them fit)");
  }
  return trace;
}

}  // namespace

std::span<const std::string_view> ServeTraceNames() { return kNames; }

Result<ServeTraceKind> ParseServeTraceKind(std::string_view name) {
  if (name == kNames[0]) return ServeTraceKind::kDocQa;
  if (name == kNames[1]) return ServeTraceKind::kChatSession;
  if (name == kNames[2]) return ServeTraceKind::kAgent;
  if (name == kNames[3]) return ServeTraceKind::kDocQaShuffled;
  if (name == kNames[4]) return ServeTraceKind::kAgentTools;
  return InvalidArgumentError("unknown trace '" + std::string(name) +
                              "' (known: docqa, chat-session, agent, docqa-shuffled, agent-tools)");
}

Result<ServeTrace> BuildServeTrace(ServeTraceKind kind, const ServeTraceOptions& options) {
  REPRISE_RETURN_IF_ERROR(ValidateTraceOptions(options));
  switch (kind) {
    case ServeTraceKind::kDocQa:
      return BuildDocQaTrace(options);
    case ServeTraceKind::kChatSession:
      return BuildChatSessionTrace(options);
    case ServeTraceKind::kAgent:
      return BuildAgentTrace(options);
    case ServeTraceKind::kDocQaShuffled:
      return BuildDocQaShuffledTrace(options);
    case ServeTraceKind::kAgentTools:
      return BuildAgentToolTrace(options);
  }
  return InvalidArgumentError("unknown trace kind");
}

int EstimateTokens(std::string_view text) {
  int64_t words = 0;
  bool in_word = false;
  for (char c : text) {
    const bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
    if (!space && !in_word) ++words;
    in_word = !space;
  }
  return static_cast<int>(std::min<int64_t>((words * 4 + 2) / 3, INT32_MAX));
}

ChatWindow::ChatWindow(int max_prompt_tokens, CountTokensFn count_tokens)
    : max_prompt_tokens_(max_prompt_tokens), count_tokens_(std::move(count_tokens)) {}

std::vector<TraceMessage> ChatWindow::Messages(const TraceRequest& request) {
  std::vector<TraceMessage> messages;
  if (!request.system.empty()) messages.push_back({"system", request.system});
  if (!request.conversation_id.empty()) {
    if (request.conversation_id != conversation_id_) {
      conversation_id_ = request.conversation_id;
      history_.clear();
    }
    if (max_prompt_tokens_ > 0) {
      int64_t total = count_tokens_(request.system) + count_tokens_(request.user);
      for (const TraceMessage& message : history_) total += count_tokens_(message.content);
      // Whole exchanges go, so the history still starts with a user turn.
      while (!history_.empty() && total > max_prompt_tokens_) {
        do {
          total -= count_tokens_(history_.front().content);
          history_.pop_front();
          ++num_dropped_messages_;
        } while (!history_.empty() && history_.front().role != "user");
      }
    }
    messages.insert(messages.end(), history_.begin(), history_.end());
  }
  messages.push_back({"user", request.user});
  messages.insert(messages.end(), request.transcript.begin(), request.transcript.end());
  return messages;
}

void ChatWindow::AddReply(const TraceRequest& request, std::string server_reply) {
  if (request.conversation_id.empty()) return;
  if (request.conversation_id != conversation_id_) {
    conversation_id_ = request.conversation_id;
    history_.clear();
  }
  history_.push_back({"user", request.user});
  history_.push_back({"assistant", request.reply ? *request.reply : std::move(server_reply)});
}

}  // namespace reprise::workload
