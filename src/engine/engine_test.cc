// The public C++ API (reprise/engine.h), driven as an app would: sessions and namespaces,
// two engines on one store, cancellation, concurrent requests. On the demo kit's trained
// stories260K (in the repository), so that generated text is real and long.
#include "reprise/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/temp_dir.h"

namespace reprise {
namespace {

const std::string kModel = std::string(REPRISE_SOURCE_DIR) + "/data/demo/stories260K.gguf";

// A document long enough to be cached as chunks, different for each `seed`.
std::string Document(int seed) {
  static const char* kWords[] = {"Lily", "played", "with", "her", "ball",   "in",
                                 "the",  "park",   "Tom",  "saw", "a",      "big",
                                 "tree", "and",    "a",    "cat", "jumped", "happy"};
  std::string out;
  uint32_t x = static_cast<uint32_t>(seed) * 2654435761u + 11;
  for (int i = 0; i < 160; ++i) {
    x = x * 1664525u + 1013904223u;
    out += (i ? " " : "") + std::string(kWords[(x >> 8) % 18]);
    if (i % 12 == 11) out += ".";
  }
  return out + ".\n";
}

GenerateRequest DocumentRequest(const std::string& name_space, int max_new_tokens = 4) {
  GenerateRequest r;
  r.segments = {
      {"document", Document(1)}, {"document", Document(2)}, {"question", "Once upon a time"}};
  r.max_new_tokens = max_new_tokens;
  r.name_space = name_space;
  return r;
}

EngineOptions Options(ReuseMethod reuse) {
  EngineOptions o;
  o.model_path = kModel;
  o.context_tokens = 1024;
  o.num_threads = 2;
  o.reuse = reuse;
  o.cache_mb = 64;
  return o;
}

// What a moved request's report says, for comparing two engines.
struct PrefillCounts {
  int recomputed = 0;
  int stable = 0;
  int found = 0;  // reused at a new position, recomputed or not
};

class EngineApiTest : public ::testing::TestWithParam<bool> {  // with a store or not
 protected:
  EngineOptions OptionsHere(ReuseMethod reuse) {
    EngineOptions o = Options(reuse);
    if (GetParam()) o.store_dir = dir_.path() + "/store";
    return o;
  }
  testing_support::TempDir dir_;
};

TEST_P(EngineApiTest, TwoSessionsInDifferentNamespacesNeverShareAChunk) {
  Result<std::unique_ptr<Engine>> engine = Engine::Create(OptionsHere(ReuseMethod::kBlend));
  ASSERT_TRUE(engine.ok()) << engine.error().ToString();
  Result<std::unique_ptr<Session>> alice = (*engine)->OpenSession({"alice"});
  Result<std::unique_ptr<Session>> bob = (*engine)->OpenSession({"bob"});
  ASSERT_TRUE(alice.ok() && bob.ok());
  GenerateRequest request = DocumentRequest("");  // the session's namespace

  Result<GenerateResult> first = (*alice)->Generate(request);
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  EXPECT_EQ(first->name_space, "alice");
  EXPECT_EQ(first->reuse.tokens_prefix + first->reuse.tokens_reused, 0);

  // The same prompt in bob's namespace finds nothing of alice's.
  Result<GenerateResult> other = (*bob)->Generate(request);
  ASSERT_TRUE(other.ok()) << other.error().ToString();
  EXPECT_EQ(other->name_space, "bob");
  EXPECT_EQ(
      other->reuse.tokens_prefix + other->reuse.tokens_reused + other->reuse.tokens_recomputed, 0);
  EXPECT_EQ(other->reuse.chunks_from_memory + other->reuse.chunks_from_flash, 0);
  // Nor through the engine's slots, naming bob's or a third namespace per request.
  request.name_space = "carol";
  Result<GenerateResult> third = (*engine)->Generate(request);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->reuse.tokens_prefix, 0);

  // In alice's namespace the whole prompt but its last token is an exact prefix, from any
  // session: alice's own, or an engine slot naming "alice".
  request.name_space = "";
  Result<GenerateResult> again = (*alice)->Generate(request);
  ASSERT_TRUE(again.ok());
  EXPECT_GT(again->reuse.tokens_prefix, static_cast<int>(again->prompt_tokens.size()) / 2);
  EXPECT_GT(again->reuse.chunks_from_memory, 0);
  request.name_space = "alice";
  Result<GenerateResult> slot = (*engine)->Generate(request);
  ASSERT_TRUE(slot.ok());
  EXPECT_EQ(slot->reuse.tokens_prefix, again->reuse.tokens_prefix);
  // Reuse changes nothing of the answer of an exact prefix.
  EXPECT_EQ(again->generated_tokens, first->generated_tokens);
  EXPECT_EQ(slot->generated_tokens, first->generated_tokens);
}

TEST_P(EngineApiTest, CancellationStopsAGeneration) {
  Result<std::unique_ptr<Engine>> engine = Engine::Create(OptionsHere(ReuseMethod::kPrefix));
  ASSERT_TRUE(engine.ok()) << engine.error().ToString();
  std::atomic<bool> cancel{false};
  GenerateRequest request = DocumentRequest("", 400);
  request.cancel = &cancel;
  int pieces = 0;
  Result<GenerateResult> stopped = (*engine)->Generate(request, [&](std::string_view) {
    if (++pieces == 3) cancel = true;
    return true;
  });
  ASSERT_TRUE(stopped.ok()) << stopped.error().ToString();
  EXPECT_EQ(stopped->stop_reason, "cancelled");
  EXPECT_LE(stopped->generated_tokens.size(), 4u);
  EXPECT_EQ(pieces, 3);

  // Cancelled before it starts: an error, and nothing stored.
  Result<GenerateResult> refused = (*engine)->Generate(request);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), StatusCode::kCancelled);

  // The engine serves the next request as usual; the cancelled generation's prompt was
  // stored (its prefill had completed), so it is reused exactly.
  cancel = false;
  request.max_new_tokens = 4;
  Result<GenerateResult> next = (*engine)->Generate(request);
  ASSERT_TRUE(next.ok()) << next.error().ToString();
  EXPECT_GT(next->reuse.tokens_prefix, 0);
  EXPECT_EQ(
      std::vector<int32_t>(stopped->generated_tokens.begin(),
                           stopped->generated_tokens.begin() + 3),
      std::vector<int32_t>(next->generated_tokens.begin(), next->generated_tokens.begin() + 3));
}

// Requests running at once (their decode steps batched into one graph call: the default)
// answer as requests run one after the other on an engine of one session.
TEST_P(EngineApiTest, ConcurrentRequestsGiveTheAnswersOfSequentialOnes) {
  constexpr int kRequests = 3;
  EngineOptions options = OptionsHere(ReuseMethod::kPrefix);
  options.sessions = kRequests;
  Result<std::unique_ptr<Engine>> engine = Engine::Create(options);
  ASSERT_TRUE(engine.ok()) << engine.error().ToString();
  std::vector<GenerateRequest> requests;
  for (int i = 0; i < kRequests; ++i) {
    requests.push_back(DocumentRequest(i == 1 ? "one" : "two", 16 + 4 * i));
    requests.back().segments[0].text = Document(7 + i);
  }
  std::vector<Result<GenerateResult>> results(kRequests, Status::Ok());
  std::vector<std::thread> threads;
  for (int i = 0; i < kRequests; ++i) {
    threads.emplace_back([&, i] { results[i] = (*engine)->Generate(requests[i]); });
  }
  for (std::thread& t : threads) t.join();

  Result<std::unique_ptr<Engine>> alone = Engine::Create(Options(ReuseMethod::kNone));
  ASSERT_TRUE(alone.ok());
  int64_t decode_steps = 0;
  for (int i = 0; i < kRequests; ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].error().ToString();
    Result<GenerateResult> sequential = (*alone)->Generate(requests[i]);
    ASSERT_TRUE(sequential.ok());
    EXPECT_EQ(results[i]->generated_tokens, sequential->generated_tokens) << "request " << i;
    EXPECT_EQ(results[i]->text, sequential->text) << "request " << i;
    decode_steps += static_cast<int64_t>(results[i]->generated_tokens.size()) - 1;
  }
  // Every decode step (each token after the first) went through the batcher.
  const EngineStats stats = (*engine)->Stats();
  EXPECT_EQ(stats.decode_batch_steps, decode_steps);
  EXPECT_GE(stats.decode_batch_calls, 1);
  EXPECT_LE(stats.decode_batch_calls, decode_steps);
  EXPECT_EQ((*alone)->Stats().decode_batch_calls, 0);  // one session: nothing to batch
}

TEST_P(EngineApiTest, BadNamespaceNamesAreRefused) {
  Result<std::unique_ptr<Engine>> engine = Engine::Create(OptionsHere(ReuseMethod::kPrefix));
  ASSERT_TRUE(engine.ok());
  Result<std::unique_ptr<Session>> bad = (*engine)->OpenSession({std::string("a\x01") + "b"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), StatusCode::kInvalidArgument);
  GenerateRequest request = DocumentRequest(std::string(200, 'x'));
  Result<GenerateResult> refused = (*engine)->Generate(request);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), StatusCode::kInvalidArgument);
  EngineOptions options = OptionsHere(ReuseMethod::kPrefix);
  options.sessions = 0;
  EXPECT_FALSE(Engine::Create(options).ok());
}

TEST_P(EngineApiTest, TheNextChatTurnReusesTheWholeConversation) {
  Result<std::unique_ptr<Engine>> engine = Engine::Create(OptionsHere(ReuseMethod::kPrefix));
  ASSERT_TRUE(engine.ok()) << engine.error().ToString();
  GenerateRequest turn1;
  turn1.messages = {{"system", "You tell short stories for children."},
                    {"user", "Tell me about Lily and her red ball in the park."}};
  turn1.max_new_tokens = 24;
  turn1.name_space = "chat";
  Result<GenerateResult> r1 = (*engine)->Generate(turn1);
  ASSERT_TRUE(r1.ok()) << r1.error().ToString();
  ASSERT_FALSE(r1->text.empty());

  // The client sends the conversation back with the reply as given, and a new question.
  GenerateRequest turn2 = turn1;
  turn2.messages.push_back({"assistant", r1->text});
  turn2.messages.push_back({"user", "What happened next?"});
  Result<GenerateResult> r2 = (*engine)->Generate(turn2);
  ASSERT_TRUE(r2.ok()) << r2.error().ToString();
  // Everything up to the new question is an exact prefix: the first prompt and the reply.
  const int first_turn = static_cast<int>(r1->prompt_tokens.size() + r1->generated_tokens.size());
  EXPECT_GE(r2->reuse.tokens_prefix, first_turn - 2)
      << "prompt 1: " << r1->prompt_tokens.size() << ", reply: " << r1->generated_tokens.size()
      << " [" << r1->text << "] stop " << r1->stop_reason
      << ", prompt 2: " << r2->prompt_tokens.size();
  EXPECT_EQ(r2->reuse.tokens_prefix + r2->reuse.tokens_new,
            static_cast<int>(r2->prompt_tokens.size()));

  // And the reused KV is right: the same answer as a full prefill of the second prompt.
  Result<std::unique_ptr<Engine>> fresh = Engine::Create(Options(ReuseMethod::kNone));
  ASSERT_TRUE(fresh.ok());
  Result<GenerateResult> full = (*fresh)->Generate(turn2);
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(r2->prompt_tokens, full->prompt_tokens);
  EXPECT_EQ(r2->generated_tokens, full->generated_tokens);

  // A reply sent back changed finds the prompt's chunks only, never the kept reply.
  GenerateRequest edited = turn1;
  edited.messages.push_back({"assistant", "Something else entirely."});
  edited.messages.push_back({"user", "What happened next?"});
  Result<GenerateResult> r3 = (*engine)->Generate(edited);
  ASSERT_TRUE(r3.ok());
  EXPECT_LE(r3->reuse.tokens_prefix, static_cast<int>(r1->prompt_tokens.size()));
}

// The tokens the engine should build from `segments` (each tokenized alone, BOS first).
std::vector<int32_t> SegmentTokens(const Engine& engine, const std::vector<std::string>& segments,
                                   bool parse_special) {
  std::vector<int32_t> out;
  for (const TokenPiece& p : engine.Tokenize("", true, false)) out.push_back(p.id);
  for (const std::string& s : segments) {
    for (const TokenPiece& p : engine.Tokenize(s, false, parse_special)) out.push_back(p.id);
  }
  return out;
}

TEST(EngineContextTest, DocumentsAndSkillsAreSegmentsInTheirPlace) {
  Result<std::unique_ptr<Engine>> engine = Engine::Create(Options(ReuseMethod::kNone));
  ASSERT_TRUE(engine.ok()) << engine.error().ToString();
  GenerateRequest plain;
  plain.prompt = "Once upon a time";
  plain.documents = {{"a", "Lily had a ball."}, {"", "Tom had a cat."}};
  plain.skills = {{"s", "Be kind."}};
  plain.max_new_tokens = 1;
  Result<GenerateResult> r = (*engine)->Generate(plain);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  // A plain prompt: each text and a blank line, skills first, then the prompt.
  EXPECT_EQ(r->prompt_tokens, SegmentTokens(**engine,
                                            {"Be kind.\n\n", "Lily had a ball.\n\n",
                                             "Tom had a cat.\n\n", "Once upon a time"},
                                            false));

  // A chat (this model's template is the plain layout): the leading system messages, the
  // skills, the documents, each a system turn, then the other messages.
  GenerateRequest chat = plain;
  chat.messages = {{"system", "You tell stories."}, {"user", "Go on."}};
  r = (*engine)->Generate(chat);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->prompt_tokens,
            SegmentTokens(**engine,
                          {"System: You tell stories.\n", "System: Skill s:\nBe kind.\n",
                           "System: Document a:\nLily had a ball.\n",
                           "System: Document:\nTom had a cat.\n", "User: Go on.\n", "Assistant:"},
                          true));
}

TEST(EngineContextTest, TheSameDocumentsInAnotherOrderAreReused) {
  Result<std::unique_ptr<Engine>> engine = Engine::Create(Options(ReuseMethod::kBlend));
  ASSERT_TRUE(engine.ok()) << engine.error().ToString();
  for (const bool chat : {false, true}) {
    GenerateRequest first;
    first.prompt = "Once upon a time";
    first.chat = chat;
    first.documents = {{"one", Document(1)}, {"two", Document(2)}};
    first.max_new_tokens = 2;
    first.name_space = chat ? "chat" : "plain";
    Result<GenerateResult> r1 = (*engine)->Generate(first);
    ASSERT_TRUE(r1.ok()) << r1.error().ToString();
    EXPECT_EQ(r1->reuse.tokens_reused + r1->reuse.tokens_recomputed, 0);

    GenerateRequest second = first;
    std::swap(second.documents[0], second.documents[1]);
    Result<GenerateResult> r2 = (*engine)->Generate(second);
    ASSERT_TRUE(r2.ok()) << r2.error().ToString();
    // Both documents are found at their new positions: most of the prompt is reused.
    EXPECT_GT(r2->reuse.tokens_reused, 0) << "chat " << chat;
    EXPECT_GT(r2->reuse.tokens_reused + r2->reuse.tokens_recomputed + r2->reuse.tokens_prefix,
              static_cast<int>(r2->prompt_tokens.size()) / 2)
        << "chat " << chat;
    // found_runs says which tokens those are: in order, disjoint, inside the prompt, as many
    // as the counts say, starting with the prefix; the last token is always computed.
    EXPECT_TRUE(r1->reuse.found_runs.empty()) << "chat " << chat;
    const std::vector<std::pair<int, int>>& runs = r2->reuse.found_runs;
    ASSERT_FALSE(runs.empty());
    int found = 0, end = 0;
    for (const auto& [b, e] : runs) {
      EXPECT_LE(end, b);
      EXPECT_LT(b, e);
      found += e - b;
      end = e;
    }
    EXPECT_LT(end, static_cast<int>(r2->prompt_tokens.size()));

    EXPECT_EQ(found,
              r2->reuse.tokens_prefix + r2->reuse.tokens_reused + r2->reuse.tokens_recomputed);
    if (r2->reuse.tokens_prefix > 0) {
      EXPECT_EQ(runs.front().first, 0);
      EXPECT_GE(runs.front().second, r2->reuse.tokens_prefix);
    }
  }
}

// A chat whose window moves (issue 42): the next request drops the oldest exchange and adds
// one. Its history keeps its cached KV without a graph call but for the tokens right after the
// cut and a bounded repair, so the request computes about what a KV shift does (the new turns)
// plus a bounded number of recomputed tokens, however long the history; the report says how
// many were kept. As messages and as one plain-text prompt alike. With stable context off the
// history is recomputed by the r share, as any reused text.
TEST(EngineContextTest, AMovedChatWindowComputesTheNewTurnsAndABoundedRepair) {
  std::vector<ChatTurn> turns = {{"system", "You tell short stories for children."}};
  for (int t = 1; t <= 8; ++t) turns.push_back({t % 2 ? "user" : "assistant", Document(10 + t)});
  // The first request holds turns 1..5; the second drops turns 1-2 and adds 6-7.
  const auto window = [&](int first, int last) {
    std::vector<ChatTurn> w = {turns[0]};
    w.insert(w.end(), turns.begin() + first, turns.begin() + last + 1);
    return w;
  };
  const auto plain = [](const std::vector<ChatTurn>& messages) {
    std::string text;
    for (const ChatTurn& m : messages) text += m.role + ": " + m.content;
    return text + "assistant:";
  };
  for (const bool as_messages : {true, false}) {
    PrefillCounts counts[2];
    for (const bool stable : {true, false}) {
      EngineOptions options = Options(ReuseMethod::kBlend);
      options.context_tokens = 2048;
      options.stable_recompute_min_deviation = stable ? kDefaultStableRecomputeMinDeviation : 0.0;
      Result<std::unique_ptr<Engine>> engine = Engine::Create(options);
      ASSERT_TRUE(engine.ok()) << engine.error().ToString();
      GenerateResult results[2];
      for (int r = 0; r < 2; ++r) {
        GenerateRequest request;
        const std::vector<ChatTurn> messages = r == 0 ? window(1, 5) : window(3, 7);
        if (as_messages) {
          request.messages = messages;
        } else {
          request.prompt = plain(messages);
        }
        request.max_new_tokens = 1;
        Result<GenerateResult> result = (*engine)->Generate(request);
        ASSERT_TRUE(result.ok()) << result.error().ToString();
        results[r] = std::move(*result);
      }
      const ReuseReport& moved = results[1].reuse;
      const int prompt = static_cast<int>(results[1].prompt_tokens.size());
      EXPECT_EQ(
          moved.tokens_prefix + moved.tokens_reused + moved.tokens_recomputed + moved.tokens_new,
          prompt);
      // Turns 3-5 are found at their new positions, turns 6-7 are new.
      EXPECT_GT(moved.tokens_reused + moved.tokens_recomputed, prompt / 3)
          << "messages " << as_messages;
      EXPECT_LE(moved.tokens_stable, moved.tokens_reused);
      counts[stable ? 0 : 1] = {moved.tokens_recomputed, moved.tokens_stable,
                                moved.tokens_reused + moved.tokens_recomputed};
    }
    const PrefillCounts& on = counts[0];
    const PrefillCounts& off = counts[1];
    EXPECT_EQ(on.found, off.found) << "messages " << as_messages;
    // On: most of the history is kept as stable context; what is recomputed is at most the
    // tokens right after the cut and the repair call's share of its rows.
    const ReuseTuning tuning;
    EXPECT_GT(on.stable, on.found - tuning.stable_context_tokens - tuning.stable_repair_tokens)
        << "messages " << as_messages;
    EXPECT_LE(on.recomputed,
              tuning.stable_context_tokens + (tuning.stable_repair_tokens + 3) / 4)  // r 0.25
        << "messages " << as_messages;
    // Off: nothing is stable, and the r share of the whole history is recomputed.
    EXPECT_EQ(off.stable, 0);
    EXPECT_GT(off.recomputed, on.recomputed) << "messages " << as_messages;
  }
}

// Sessions of one engine may reuse differently (an app comparing methods, a private session
// that caches nothing), over the engine's compiled model and caches.
TEST(EngineContextTest, ASessionMayChooseItsOwnReuseMethod) {
  Result<std::unique_ptr<Engine>> engine = Engine::Create(Options(ReuseMethod::kPrefix));
  ASSERT_TRUE(engine.ok()) << engine.error().ToString();
  auto blend = (*engine)->OpenSession({"docs", ReuseMethod::kBlend});
  auto none = (*engine)->OpenSession({"docs", ReuseMethod::kNone});
  auto prefix = (*engine)->OpenSession({"docs"});
  ASSERT_TRUE(blend.ok() && none.ok() && prefix.ok());
  EXPECT_EQ((*blend)->reuse(), ReuseMethod::kBlend);
  EXPECT_EQ((*prefix)->reuse(), ReuseMethod::kPrefix);
  GenerateRequest first;
  first.prompt = "Once upon a time";
  first.documents = {{"one", Document(1)}, {"two", Document(2)}};
  first.max_new_tokens = 2;
  ASSERT_TRUE((*prefix)->Generate(first).ok());
  GenerateRequest second = first;
  std::swap(second.documents[0], second.documents[1]);
  second.keep_kv = false;  // so that blend below finds the documents where `first` left them
  // Reordered documents: the prefix session finds only the shared start, blend finds both.
  Result<GenerateResult> by_prefix = (*prefix)->Generate(second);
  ASSERT_TRUE(by_prefix.ok());
  EXPECT_EQ(by_prefix->reuse.tokens_reused + by_prefix->reuse.tokens_recomputed, 0);
  Result<GenerateResult> by_blend = (*blend)->Generate(second);
  ASSERT_TRUE(by_blend.ok()) << by_blend.error().ToString();
  EXPECT_GT(by_blend->reuse.tokens_reused + by_blend->reuse.tokens_recomputed,
            static_cast<int>(by_blend->prompt_tokens.size()) / 2);
  // The session without reuse computes everything and adds nothing.
  GenerateRequest third = first;
  third.documents = {{"three", Document(3)}};
  Result<GenerateResult> by_none = (*none)->Generate(third);
  ASSERT_TRUE(by_none.ok());
  EXPECT_EQ(by_none->reuse.tokens_new, static_cast<int>(by_none->prompt_tokens.size()));
  Result<GenerateResult> after = (*prefix)->Generate(third);
  ASSERT_TRUE(after.ok());
  EXPECT_LT(after->reuse.tokens_prefix, static_cast<int>(after->prompt_tokens.size()) / 2);

  // An engine without reuse has no caches: its sessions cannot reuse.
  Result<std::unique_ptr<Engine>> plain = Engine::Create(Options(ReuseMethod::kNone));
  ASSERT_TRUE(plain.ok());
  auto refused = (*plain)->OpenSession({"", ReuseMethod::kBlend});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), StatusCode::kInvalidArgument);
}

// keep_kv = false reuses without adding; the first token's logits come back on request.
TEST(EngineContextTest, ARequestMayKeepNothingAndReturnTheFirstTokensLogits) {
  Result<std::unique_ptr<Engine>> engine = Engine::Create(Options(ReuseMethod::kBlend));
  ASSERT_TRUE(engine.ok()) << engine.error().ToString();
  GenerateRequest request = DocumentRequest("private", 3);
  request.keep_kv = false;
  request.return_first_token_logits = true;
  Result<GenerateResult> first = (*engine)->Generate(request);
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  ASSERT_EQ(first->first_token_logits.size(),
            static_cast<size_t>(ReadModelInfo(kModel)->vocab_size));
  const auto top =
      std::max_element(first->first_token_logits.begin(), first->first_token_logits.end()) -
      first->first_token_logits.begin();
  EXPECT_EQ(top, first->generated_tokens.front());  // greedy
  Result<GenerateResult> again = (*engine)->Generate(request);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->reuse.tokens_new, static_cast<int>(again->prompt_tokens.size()));
  EXPECT_EQ(again->first_token_logits, first->first_token_logits);
  // Kept this time: the next request reuses it.
  request.keep_kv = true;
  request.return_first_token_logits = false;
  Result<GenerateResult> kept = (*engine)->Generate(request);
  ASSERT_TRUE(kept.ok());
  EXPECT_TRUE(kept->first_token_logits.empty());
  Result<GenerateResult> reused = (*engine)->Generate(request);
  ASSERT_TRUE(reused.ok());
  EXPECT_GT(reused->reuse.tokens_prefix, static_cast<int>(reused->prompt_tokens.size()) / 2);
}

TEST(EngineContextTest, ReadModelInfoDescribesAFileWithoutCompilingIt) {
  Result<ModelInfo> info = ReadModelInfo(kModel);
  ASSERT_TRUE(info.ok()) << info.error().ToString();
  EXPECT_EQ(info->architecture, "llama");
  EXPECT_GT(info->context_length, 0);
  EXPECT_GT(info->vocab_size, 0);
  EXPECT_GT(info->num_layers, 0);
  EXPECT_EQ(ReadModelInfo("/no/such/model.gguf").error().code(), StatusCode::kNotFound);
}

TEST(EngineContextTest, MaxPromptTokensRefusesLongerPrompts) {
  for (const ReuseMethod reuse : {ReuseMethod::kPrefix, ReuseMethod::kNone}) {
    EngineOptions options = Options(reuse);
    options.use_reference = reuse == ReuseMethod::kNone;  // the reference path too
    Result<std::unique_ptr<Engine>> engine = Engine::Create(options);
    ASSERT_TRUE(engine.ok()) << engine.error().ToString();
    GenerateRequest request;
    request.prompt = "Once upon a time there was a girl";
    request.documents = {{"", "Lily had a ball."}};
    request.max_new_tokens = 1;
    Result<GenerateResult> unlimited = (*engine)->Generate(request);
    ASSERT_TRUE(unlimited.ok()) << unlimited.error().ToString();
    const int n = static_cast<int>(unlimited->prompt_tokens.size());

    request.max_prompt_tokens = n;
    EXPECT_TRUE((*engine)->Generate(request).ok());
    request.max_prompt_tokens = n - 1;
    Result<GenerateResult> refused = (*engine)->Generate(request);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code(), StatusCode::kInvalidArgument);
    const std::string message = refused.error().ToString();
    EXPECT_NE(message.find(std::to_string(n) + " tokens"), std::string::npos) << message;
    EXPECT_NE(message.find("(" + std::to_string(n - 1) + ")"), std::string::npos) << message;
    request.max_prompt_tokens = -1;
    refused = (*engine)->Generate(request);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code(), StatusCode::kInvalidArgument);
  }
}

INSTANTIATE_TEST_SUITE_P(MemoryAndStore, EngineApiTest, ::testing::Bool(),
                         [](const auto& p) { return p.param ? "Store" : "Memory"; });

TEST(EngineStoreTest, TwoEnginesOneAfterTheOtherFindEachOthersChunks) {
  testing_support::TempDir dir;
  EngineOptions options = Options(ReuseMethod::kBlend);
  options.store_dir = dir.path() + "/store";
  GenerateRequest request = DocumentRequest("shared");
  std::vector<int32_t> answer;
  {
    Result<std::unique_ptr<Engine>> first = Engine::Create(options);
    ASSERT_TRUE(first.ok()) << first.error().ToString();
    Result<GenerateResult> r = (*first)->Generate(request);
    ASSERT_TRUE(r.ok());
    answer = r->generated_tokens;
  }
  Result<std::unique_ptr<Engine>> second = Engine::Create(options);
  ASSERT_TRUE(second.ok()) << second.error().ToString();
  Result<GenerateResult> r = (*second)->Generate(request);
  ASSERT_TRUE(r.ok());
  EXPECT_GT(r->reuse.tokens_prefix, static_cast<int>(r->prompt_tokens.size()) / 2);
  EXPECT_GT(r->reuse.chunks_from_flash, 0);
  EXPECT_EQ(r->generated_tokens, answer);
  // Another namespace of the same store finds none of them.
  request.name_space = "elsewhere";
  Result<GenerateResult> other = (*second)->Generate(request);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->reuse.tokens_prefix, 0);
  EXPECT_EQ(other->reuse.chunks_from_flash, 0);
}

TEST(EngineStoreTest, AdmissionWritesDeclaredDocumentsAtOnceAndPlainTextWhenItRecurs) {
  testing_support::TempDir dir;
  EngineOptions options = Options(ReuseMethod::kBlend);
  options.store_dir = dir.path() + "/store";
  options.store_admit_after = 2;
  GenerateRequest documents = DocumentRequest("app");
  GenerateRequest plain;
  plain.prompt = Document(7) + Document(8);
  plain.max_new_tokens = 2;
  plain.name_space = "app";
  const auto run = [&](const GenerateRequest& request) {
    Result<std::unique_ptr<Engine>> engine = Engine::Create(options);
    EXPECT_TRUE(engine.ok()) << engine.error().ToString();
    Result<GenerateResult> r = (*engine)->Generate(request);
    EXPECT_TRUE(r.ok()) << r.error().ToString();
    return std::move(r).value();
  };
  // Each run is a new process's engine: only what was written to flash carries over.
  run(documents);
  GenerateResult again = run(documents);  // declared documents: written at once
  EXPECT_GT(again.reuse.tokens_prefix, static_cast<int>(again.prompt_tokens.size()) / 2);
  EXPECT_GT(again.reuse.chunks_from_flash, 0);
  run(plain);
  GenerateResult second = run(plain);        // seen once before: nothing of it was written ...
  EXPECT_LE(second.reuse.tokens_prefix, 1);  // (BOS opens every prompt: declared)
  GenerateResult third = run(plain);         // ... but its second sighting was
  EXPECT_GT(third.reuse.tokens_prefix, static_cast<int>(third.prompt_tokens.size()) / 2);
  EXPECT_GT(third.reuse.chunks_from_flash, 0);
  EXPECT_EQ(third.generated_tokens, second.generated_tokens);
}

TEST(EngineStoreTest, AdmissionOptionIsChecked) {
  testing_support::TempDir dir;
  EngineOptions options = Options(ReuseMethod::kBlend);
  options.store_dir = dir.path() + "/store";
  options.store_admit_after = 0;
  Result<std::unique_ptr<Engine>> engine = Engine::Create(options);
  ASSERT_FALSE(engine.ok());
  EXPECT_EQ(engine.error().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace reprise
