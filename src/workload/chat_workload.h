// The chat workload: questions about long chat histories (LoCoMo), each answered from the
// history chunks that BM25 retrieves for it.
//
// Per conversation, the dialogue is a list of lines "<speaker>: <text>\n" (a turn that shares
// an image adds " [shares an image: <caption>]" from LoCoMo's blip_caption), grouped by
// session. The lines are cut at turn boundaries into chunks of at most chunk_tokens tokens; a
// chunk may run on from one session into the next, and every chunk part of a session starts
// with the session's header line "Session <n> (<date_time>):\n", so a session cut in two
// repeats its date and every chunk keeps its dates. source_id: "locomo:<sample_id>:<chunk>".
//
// Queries: conversations in file order (the first max_conversations), and within each its
// "qa" list in order, skipping category 5 (adversarial / unanswerable) unless
// include_adversarial; the first num_queries in all. Each question retrieves top_chunks
// chunks of its own conversation with BM25. Prompt:
//   system "You are a helpful assistant. Answer the question using the conversation
//          excerpts.\n"
//   turn   the retrieved chunks, best first
//   question "Question: <question>\nAnswer:"
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "workload/workload.h"

namespace reprise::workload {

inline constexpr std::string_view kLocomoFile = "workloads/locomo/locomo10.json";

inline constexpr std::string_view kChatSystemPrompt =
    "You are a helpful assistant. Answer the question using the conversation excerpts.\n";

struct ChatOptions {
  WorkloadOptions common;
  std::string file = std::string(kLocomoFile);  // relative to data_dir, or absolute
  int max_conversations = 0;                    // 0 = all
  bool include_adversarial = false;             // keep category-5 questions
};

inline constexpr std::string_view kChatWindowSystemPrompt =
    "You are a helpful assistant. Continue the conversation.\n";
inline constexpr int kChatWindowStep = 2;  // turns between two requests of chat-window

// Builds the chat workload. A category-5 question's reference answer is "" (LoCoMo gives
// only an adversarial answer). Errors: InvalidArgument (options), NotFound (with the path),
// IoError, Corrupt (naming the file, sample and field).
Result<Workload> BuildChatWorkload(const ChatOptions& options);

}  // namespace reprise::workload

namespace reprise::workload {

// The sliding-window chat workload ("chat-window"): each LoCoMo conversation replayed as a
// chat app does once its history is longer than the context: every request holds the system
// prompt, the latest turns that fit common.max_prompt_tokens (required), each turn a segment
// of its own ("<speaker>: <text>\n", a session's first turn led by its heading), and the
// question "Next line:\n". Requests start once the window is full and come every
// kChatWindowStep turns, so each drops the oldest turns of the one before and adds new ones:
// everything kept has moved to an earlier position (non-prefix reuse). The reference answer
// is the turn that follows. Errors as BuildChatWorkload's, and InvalidArgument without a
// prompt budget.
Result<Workload> BuildChatWindowWorkload(const ChatOptions& options);

}  // namespace reprise::workload
