// The three builders on the real workload texts of ../shared/data (skipped when absent).
#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "base/file_util.h"
#include "support/shared_data.h"
#include "workload/chat_workload.h"
#include "workload/docqa_workload.h"
#include "workload/named_workload.h"
#include "workload/skills_workload.h"
#include "workload/test_word_count.h"

namespace reprise::workload {
namespace {

using test_util::CountWords;

// The data folder that holds `file` (a path under it).
std::string DataDirOf(const std::string& file, std::string_view relative) {
  return file.substr(0, file.size() - relative.size());
}

WorkloadOptions Options(const std::string& data_dir) {
  return {.data_dir = data_dir, .count_tokens = CountWords};
}

// system, then only `context_role` segments, then one question; context within the limit.
void ExpectShape(const Workload& workload, std::string_view context_role, int chunk_tokens) {
  for (const Request& request : workload.requests) {
    ASSERT_GE(request.segments.size(), 2u) << request.id;
    EXPECT_EQ(request.segments.front().role, kRoleSystem) << request.id;
    EXPECT_EQ(request.segments.back().role, kRoleQuestion) << request.id;
    EXPECT_TRUE(request.segments.back().source_id.empty());
    for (size_t i = 1; i + 1 < request.segments.size(); ++i) {
      const Segment& segment = request.segments[i];
      EXPECT_EQ(segment.role, context_role) << request.id;
      EXPECT_FALSE(segment.source_id.empty());
      EXPECT_LE(CountWords(segment.text), chunk_tokens) << segment.source_id;
    }
  }
}

void ExpectSameRequests(const Workload& a, const Workload& b) {
  ASSERT_EQ(a.requests.size(), b.requests.size());
  for (size_t r = 0; r < a.requests.size(); ++r) {
    ASSERT_EQ(a.requests[r].id, b.requests[r].id);
    ASSERT_EQ(a.requests[r].segments.size(), b.requests[r].segments.size());
    for (size_t s = 0; s < a.requests[r].segments.size(); ++s) {
      EXPECT_EQ(a.requests[r].segments[s].text, b.requests[r].segments[s].text);
      EXPECT_EQ(a.requests[r].segments[s].source_id, b.requests[r].segments[s].source_id);
    }
  }
}

TEST(DocQaWorkloadTest, FullwikiRetrievesFromTheWholeCollection) {
  REPRISE_REQUIRE_SHARED_FILE(file, std::string(kHotpotFullwikiFile));
  DocQaOptions options{.common = Options(DataDirOf(file, kHotpotFullwikiFile))};
  options.common.chunk_tokens = 128;
  Result<Workload> workload = BuildDocQaWorkload(options);
  ASSERT_TRUE(workload.ok()) << workload.error().ToString();
  EXPECT_EQ(workload->name, "docqa");
  ASSERT_EQ(workload->requests.size(), 500u);
  ExpectShape(*workload, kRoleDocument, 128);
  EXPECT_EQ(workload->requests[0].id, "docqa:5a7166395542994082a3e814");
  EXPECT_EQ(workload->requests[0].segments.size(), 8u);  // system + 6 + question
  EXPECT_EQ(workload->requests[0].segments[0].text, kDocQaSystemPrompt);
  EXPECT_EQ(workload->requests[0].reference_answer, "Kansas Song");
  EXPECT_TRUE(workload->requests[0].segments.back().text.starts_with("Question: What is the"));
  EXPECT_TRUE(workload->requests[0].segments.back().text.ends_with("\nAnswer:"));
  for (const Request& request : workload->requests) {
    for (size_t i = 1; i + 1 < request.segments.size(); ++i) {
      EXPECT_TRUE(request.segments[i].text.starts_with("Title: "));
      EXPECT_TRUE(request.segments[i].source_id.starts_with("hotpot:"));
    }
  }
  // 4,920 distinct paragraphs, some cut in two at 128 words; every retrieved chunk is one of
  // the collection's, and ids are unique.
  EXPECT_GT(workload->stats.num_collection_chunks, 4920);
  ASSERT_EQ(static_cast<int>(workload->collection.size()), workload->stats.num_collection_chunks);
  std::map<std::string, std::string> collection;
  for (const Segment& segment : workload->collection) {
    EXPECT_EQ(segment.role, kRoleDocument);
    EXPECT_TRUE(collection.emplace(segment.source_id, segment.text).second) << segment.source_id;
  }
  for (const Request& request : workload->requests) {
    for (size_t i = 1; i + 1 < request.segments.size(); ++i) {
      auto it = collection.find(request.segments[i].source_id);
      ASSERT_NE(it, collection.end());
      EXPECT_EQ(it->second, request.segments[i].text);
    }
  }
  EXPECT_EQ(workload->stats.num_requests, 500);
  EXPECT_GT(workload->stats.num_repeated_context_segments, 0);
  EXPECT_GT(workload->stats.num_nonprefix_reusable_tokens, 0);

  // Deterministic, and the first requests do not depend on how many are asked for.
  options.common.num_queries = 10;
  Result<Workload> ten = BuildDocQaWorkload(options);
  ASSERT_TRUE(ten.ok());
  ASSERT_EQ(ten->requests.size(), 10u);
  EXPECT_EQ(ten->stats.num_collection_chunks, workload->stats.num_collection_chunks);
  workload->requests.resize(10);
  ExpectSameRequests(*workload, *ten);
}

TEST(DocQaWorkloadTest, DistractorFileAndPromptLimit) {
  REPRISE_REQUIRE_SHARED_FILE(file, std::string(kHotpotDistractorFile));
  DocQaOptions options{.common = Options(DataDirOf(file, kHotpotDistractorFile)),
                       .file = std::string(kHotpotDistractorFile)};
  options.common.top_chunks = 4;
  options.common.chunk_tokens = 64;
  options.common.max_prompt_tokens = 200;
  Result<Workload> workload = BuildDocQaWorkload(options);
  ASSERT_TRUE(workload.ok()) << workload.error().ToString();
  EXPECT_EQ(workload->requests.size() + static_cast<size_t>(workload->stats.num_skipped_requests),
            100u);
  EXPECT_EQ(workload->stats.num_skipped_requests, 0);
  EXPECT_GT(workload->stats.num_dropped_segments, 0);
  ExpectShape(*workload, kRoleDocument, 64);
  for (const Request& request : workload->requests) {
    EXPECT_LE(CountPromptTokens(request, CountWords), 200) << request.id;
    EXPECT_LE(request.segments.size(), 6u);
  }
  EXPECT_LE(workload->stats.max_request_prompt_tokens, 200);

  Result<Workload> named = BuildNamedWorkload("docqa-distractor", options.common);
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->name, "docqa-distractor");
  ExpectSameRequests(*workload, *named);
}

TEST(DocQaWorkloadTest, ShuffledPoolRecursInNewOrders) {
  REPRISE_REQUIRE_SHARED_FILE(file, std::string(kHotpotDistractorFile));
  Result<Workload> workload =
      BuildNamedWorkload("docqa-shuffled", Options(DataDirOf(file, kHotpotDistractorFile)));
  ASSERT_TRUE(workload.ok()) << workload.error().ToString();
  EXPECT_EQ(workload->name, "docqa-shuffled");
  ASSERT_EQ(workload->collection.size(), 12u);
  std::set<std::string> pool;
  for (const Segment& s : workload->collection) pool.insert(s.source_id);
  ExpectShape(*workload, kRoleDocument, 512);
  std::set<std::vector<std::string>> orders;
  std::map<std::string, int> uses;
  for (const Request& request : workload->requests) {
    std::vector<std::string> order;
    for (const Segment& s : request.segments) {
      if (s.role != kRoleDocument) continue;
      EXPECT_TRUE(pool.count(s.source_id)) << s.source_id;
      order.push_back(s.source_id);
      ++uses[s.source_id];
    }
    EXPECT_EQ(order.size(), 6u) << request.id;
    EXPECT_EQ(std::set<std::string>(order.begin(), order.end()).size(), 6u) << request.id;
    orders.insert(order);
  }
  EXPECT_EQ(orders.size(), workload->requests.size());  // a new order every time
  EXPECT_EQ(uses.size(), 12u);                          // every document recurs
  for (const auto& [id, n] : uses) EXPECT_GT(n, 1) << id;

  Result<Workload> again =
      BuildNamedWorkload("docqa-shuffled", Options(DataDirOf(file, kHotpotDistractorFile)));
  ASSERT_TRUE(again.ok());
  ExpectSameRequests(*workload, *again);  // reproducible
}
TEST(DocQaWorkloadTest, HotPoolRecursAmongOneOffRetrievedDocuments) {
  REPRISE_REQUIRE_SHARED_FILE(file, std::string(kHotpotFullwikiFile));
  WorkloadOptions options = Options(DataDirOf(file, kHotpotFullwikiFile));
  options.num_queries = 100;
  Result<Workload> workload = BuildNamedWorkload("docqa-hot", options);
  ASSERT_TRUE(workload.ok()) << workload.error().ToString();
  EXPECT_EQ(workload->name, "docqa-hot");
  ASSERT_GT(workload->collection.size(), 100u);  // the whole collection stays
  std::set<std::string> hot;
  for (size_t i = 0; i < 12; ++i) hot.insert(workload->collection[i].source_id);
  std::map<std::string, int> uses;
  for (const Request& request : workload->requests) {
    int from_pool = 0, retrieved = 0;
    bool pool_first = true;
    for (const Segment& s : request.segments) {
      if (s.role != kRoleDocument) continue;
      const bool in_pool = hot.count(s.source_id) > 0;
      if (in_pool && retrieved > 0) pool_first = false;
      (in_pool ? from_pool : retrieved) += 1;
      ++uses[s.source_id];
    }
    EXPECT_EQ(from_pool, 3) << request.id;  // half of top_chunks 6
    EXPECT_GT(retrieved, 0) << request.id;
    EXPECT_TRUE(pool_first) << request.id;
  }
  int recurring_outside_pool = 0, outside_pool = 0;
  for (const auto& [id, n] : uses) {
    if (hot.count(id)) {
      EXPECT_GT(n, 5) << id;
    } else {
      ++outside_pool;
      recurring_outside_pool += n > 1;
    }
  }
  EXPECT_LT(recurring_outside_pool * 10, outside_pool);  // the long tail: mostly one-off
}

TEST(NamedWorkloadTest, BlockVariantJoinsEachPromptsContextIntoOneSegment) {
  REPRISE_REQUIRE_SHARED_FILE(file, std::string(kSkillsBenchFile));
  WorkloadOptions options = Options(DataDirOf(file, kSkillsBenchFile));
  options.num_queries = 10;
  Result<Workload> pieces = BuildNamedWorkload("skills", options);
  Result<Workload> block = BuildNamedWorkload("skills-block", options);
  ASSERT_TRUE(pieces.ok()) << pieces.error().ToString();
  ASSERT_TRUE(block.ok()) << block.error().ToString();
  EXPECT_EQ(block->name, "skills-block");
  ASSERT_EQ(block->requests.size(), pieces->requests.size());
  EXPECT_EQ(block->collection.size(), pieces->collection.size());
  int with_skills = 0;
  for (size_t r = 0; r < pieces->requests.size(); ++r) {
    std::string joined, ids;
    std::vector<std::string> others_before, others_after;
    for (const Segment& s : pieces->requests[r].segments) {
      if (IsContextRole(s.role)) {
        joined += s.text;
        ids += (ids.empty() ? "" : "+") + s.source_id;
      } else {
        (joined.empty() ? others_before : others_after).push_back(s.text);
      }
    }
    std::vector<std::string> texts;
    int blocks = 0;
    for (const Segment& s : block->requests[r].segments) {
      if (IsContextRole(s.role)) {
        ++blocks;
        EXPECT_EQ(s.role, kRoleSkill);
        EXPECT_EQ(s.text, joined);
        EXPECT_EQ(s.source_id, ids);
      } else {
        texts.push_back(s.text);
      }
    }
    EXPECT_EQ(blocks, joined.empty() ? 0 : 1);
    with_skills += blocks;
    others_before.insert(others_before.end(), others_after.begin(), others_after.end());
    EXPECT_EQ(texts, others_before);  // the system prompt and the task, in place
  }
  EXPECT_GT(with_skills, 0);
  EXPECT_FALSE(BuildNamedWorkload("skills-block-block", options).ok());
}

TEST(DocQaWorkloadTest, OrdersGiveEveryPermutationOfTheSameDocuments) {
  REPRISE_REQUIRE_SHARED_FILE(file, std::string(kHotpotDistractorFile));
  WorkloadOptions options = Options(DataDirOf(file, kHotpotDistractorFile));
  options.num_queries = 5;
  Result<Workload> workload = BuildNamedWorkload("docqa-orders", options);
  ASSERT_TRUE(workload.ok()) << workload.error().ToString();
  EXPECT_EQ(workload->name, "docqa-orders");
  ASSERT_EQ(workload->requests.size(), 30u);  // 5 questions x 3! orders
  for (size_t g = 0; g < 5; ++g) {
    std::set<std::vector<std::string>> orders;
    std::set<std::string> documents, groups, questions;
    for (size_t k = 0; k < 6; ++k) {
      const Request& r = workload->requests[g * 6 + k];
      EXPECT_EQ(r.id.substr(r.id.find('#')), "#order" + std::to_string(k));
      groups.insert(r.id.substr(0, r.id.find('#')));
      std::vector<std::string> order;
      for (const Segment& s : r.segments) {
        if (s.role == kRoleDocument) order.push_back(s.source_id);
        if (s.role == kRoleQuestion) questions.insert(s.text);
      }
      ASSERT_EQ(order.size(), 3u) << r.id;
      documents.insert(order.begin(), order.end());
      orders.insert(order);
    }
    EXPECT_EQ(orders.size(), 6u);     // every permutation once
    EXPECT_EQ(documents.size(), 3u);  // of the same three documents
    EXPECT_EQ(groups.size(), 1u);
    EXPECT_EQ(questions.size(), 1u);
  }
  DocQaOptions bad{.common = options};
  bad.orders_of = 6;
  EXPECT_FALSE(BuildDocQaWorkload(bad).ok());
}

TEST(ChatWorkloadTest, LocomoQuestionsRetrieveTheirConversation) {
  REPRISE_REQUIRE_SHARED_FILE(file, std::string(kLocomoFile));
  ChatOptions options{.common = Options(DataDirOf(file, kLocomoFile))};
  options.common.chunk_tokens = 256;
  options.common.max_prompt_tokens = 1024;
  Result<Workload> workload = BuildChatWorkload(options);
  ASSERT_TRUE(workload.ok()) << workload.error().ToString();
  EXPECT_EQ(workload->requests.size(), 1540u);  // 1,986 less 446 of category 5
  ExpectShape(*workload, kRoleTurn, 256);
  for (const Request& request : workload->requests) {
    EXPECT_LE(CountPromptTokens(request, CountWords), 1024);
    const std::string conversation = request.id.substr(5, request.id.find(":q") - 5);
    for (size_t i = 1; i + 1 < request.segments.size(); ++i) {
      EXPECT_TRUE(request.segments[i].source_id.starts_with("locomo:" + conversation + ":"))
          << request.id << " " << request.segments[i].source_id;
      EXPECT_TRUE(request.segments[i].text.starts_with("Session "));
    }
  }

  options.include_adversarial = true;
  options.common.num_queries = 0;
  Result<Workload> all = BuildChatWorkload(options);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->requests.size(), 1986u);

  options.include_adversarial = false;
  options.max_conversations = 2;
  options.common.num_queries = 100;
  Result<Workload> some = BuildChatWorkload(options);
  ASSERT_TRUE(some.ok());
  EXPECT_EQ(some->requests.size(), 100u);
  Result<Workload> again = BuildChatWorkload(options);
  ASSERT_TRUE(again.ok());
  ExpectSameRequests(*some, *again);
}

// chat-window: each request is the previous one with its oldest turns dropped and
// kChatWindowStep new turns added, within the budget.
// "-plain": the same prompts as one system segment and one pasted segment, text for text.
TEST(NamedWorkloadTest, PlainVariantsPasteTheSegmentsAfterTheSystemPrompt) {
  REPRISE_REQUIRE_SHARED_FILE(file, std::string(kHotpotDistractorFile));
  WorkloadOptions options = Options(DataDirOf(file, kHotpotDistractorFile));
  options.num_queries = 5;
  Result<Workload> segmented = BuildNamedWorkload("docqa-distractor", options);
  Result<Workload> plain = BuildNamedWorkload("docqa-distractor-plain", options);
  ASSERT_TRUE(segmented.ok()) << segmented.error().ToString();
  ASSERT_TRUE(plain.ok()) << plain.error().ToString();
  EXPECT_EQ(plain->name, "docqa-distractor-plain");
  ASSERT_EQ(plain->requests.size(), segmented->requests.size());
  for (size_t r = 0; r < plain->requests.size(); ++r) {
    const Request& a = segmented->requests[r];
    const Request& b = plain->requests[r];
    EXPECT_EQ(b.id, a.id);
    ASSERT_GT(a.segments.size(), 3u) << a.id;
    ASSERT_EQ(b.segments.size(), 2u) << b.id;
    EXPECT_EQ(b.segments[0].role, kRoleSystem);
    EXPECT_EQ(b.segments[0].text, a.segments[0].text);
    EXPECT_EQ(b.segments[1].role, kRoleQuestion);
    std::string pasted;
    for (size_t s = 1; s < a.segments.size(); ++s) pasted += a.segments[s].text;
    EXPECT_EQ(b.segments[1].text, pasted);
    // The documents pasted are kept as they were, for warming.
    ASSERT_EQ(b.pasted.size(), a.segments.size() - 2);
    EXPECT_EQ(b.pasted[0].source_id, a.segments[1].source_id);
  }
  EXPECT_EQ(plain->collection.size(), segmented->collection.size());
  EXPECT_EQ(BuildNamedWorkload("docqa-plain-plain", options).error().code(),
            StatusCode::kInvalidArgument);
}

TEST(ChatWorkloadTest, ChatWindowMovesOverTheConversation) {
  REPRISE_REQUIRE_SHARED_FILE(file, std::string(kLocomoFile));
  ChatOptions options{.common = Options(DataDirOf(file, kLocomoFile))};
  options.common.max_prompt_tokens = 600;
  options.max_conversations = 1;
  Result<Workload> workload = BuildChatWindowWorkload(options);
  ASSERT_TRUE(workload.ok()) << workload.error().ToString();
  ASSERT_GT(workload->requests.size(), 10u);
  size_t moved = 0;  // requests that dropped turns of the one before
  for (size_t r = 0; r < workload->requests.size(); ++r) {
    const Request& request = workload->requests[r];
    EXPECT_LE(CountPromptTokens(request, CountWords), 600) << request.id;
    ASSERT_GE(request.segments.size(), 4u);
    EXPECT_EQ(request.segments.front().role, kRoleSystem);
    EXPECT_EQ(request.segments.back().role, kRoleQuestion);
    for (size_t i = 1; i + 1 < request.segments.size(); ++i) {
      EXPECT_EQ(request.segments[i].role, kRoleTurn);
    }
    if (r == 0) continue;
    // The turns of the previous request that are still here form its tail, and sit at
    // earlier positions now: the window moved.
    const Request& before = workload->requests[r - 1];
    const std::string& first_kept = request.segments[1].source_id;
    size_t at = 1;
    while (at + 1 < before.segments.size() && before.segments[at].source_id != first_kept) ++at;
    ASSERT_LT(at + 1, before.segments.size()) << request.id << ": no turn in common";
    moved += at > 1;
    for (size_t i = at; i + 1 < before.segments.size(); ++i) {
      EXPECT_EQ(before.segments[i].source_id, request.segments[1 + i - at].source_id);
      EXPECT_EQ(before.segments[i].text, request.segments[1 + i - at].text);
    }
    EXPECT_EQ(request.segments.size() - 2, before.segments.size() - 2 - (at - 1) + kChatWindowStep)
        << request.id;
  }
  EXPECT_GT(moved, workload->requests.size() / 2);
  // Without a budget there is no window.
  options.common.max_prompt_tokens = 0;
  EXPECT_EQ(BuildChatWindowWorkload(options).error().code(), StatusCode::kInvalidArgument);
}

TEST(ChatWorkloadTest, ChunksHoldEverySpeakerLine) {
  REPRISE_REQUIRE_SHARED_FILE(file, std::string(kLocomoFile));
  // One conversation, every chunk retrieved by every question that matches it: the union of
  // the retrieved chunks is the whole chunked conversation.
  ChatOptions options{.common = Options(DataDirOf(file, kLocomoFile)), .max_conversations = 1};
  options.common.top_chunks = 1000;
  options.common.chunk_tokens = 200;
  Result<Workload> workload = BuildChatWorkload(options);
  ASSERT_TRUE(workload.ok()) << workload.error().ToString();
  std::set<std::string> chunk_ids;
  std::string all_text;
  for (const Request& request : workload->requests) {
    for (const Segment& segment : request.segments) {
      if (segment.role == kRoleTurn && chunk_ids.insert(segment.source_id).second) {
        all_text += segment.text;
      }
    }
  }
  EXPECT_EQ(static_cast<int>(chunk_ids.size()), workload->stats.num_collection_chunks);
  std::string collection_text;
  for (const Segment& segment : workload->collection) collection_text += segment.text;
  EXPECT_EQ(collection_text.size(), all_text.size());

  nlohmann::json root = nlohmann::json::parse(std::move(ReadFileToString(file)).value());
  const nlohmann::json& conversation = root[0]["conversation"];
  const std::string speaker_a = conversation["speaker_a"];
  const std::string speaker_b = conversation["speaker_b"];
  EXPECT_TRUE(all_text.find("Session 1 (" + conversation["session_1_date_time"].get<std::string>() +
                            "):\n") != std::string::npos);
  int num_turns = 0;
  for (int session = 1; conversation.contains("session_" + std::to_string(session)); ++session) {
    for (const nlohmann::json& turn : conversation["session_" + std::to_string(session)]) {
      const std::string speaker = turn["speaker"];
      EXPECT_TRUE(speaker == speaker_a || speaker == speaker_b);
      const std::string line = speaker + ": " + turn["text"].get<std::string>();
      EXPECT_NE(all_text.find(line), std::string::npos) << line;
      ++num_turns;
    }
  }
  EXPECT_GT(num_turns, 300);
}

TEST(SkillsWorkloadTest, EveryTaskSharesTheCatalogue) {
  REPRISE_REQUIRE_SHARED_FILE(file, std::string(kSkillsBenchFile));
  SkillsOptions options{.common = Options(DataDirOf(file, kSkillsBenchFile))};
  options.common.chunk_tokens = 300;
  Result<Workload> workload = BuildSkillsWorkload(options);
  ASSERT_TRUE(workload.ok()) << workload.error().ToString();
  ASSERT_EQ(workload->requests.size(), 63u);
  ExpectShape(*workload, kRoleSkill, 300);
  const std::string& catalog = workload->requests[0].segments[0].text;
  EXPECT_TRUE(catalog.starts_with("Available skills:\n- "));
  EXPECT_EQ(std::count(catalog.begin(), catalog.end(), '\n'), 125);  // header + 124 skills
  int num_without_skills = 0;
  for (const Request& request : workload->requests) {
    EXPECT_EQ(request.segments[0].text, catalog);
    EXPECT_EQ(request.segments[0].source_id, "system:skills-catalog");
    EXPECT_TRUE(request.segments.back().text.starts_with("Task:\n"));
    if (request.segments.size() == 2) ++num_without_skills;
  }
  EXPECT_EQ(num_without_skills, 11);

  // A long SKILL.md is split into pieces that give back its text.
  nlohmann::json root = nlohmann::json::parse(std::move(ReadFileToString(file)).value());
  bool checked_a_split_skill = false;
  for (size_t t = 0; t < root["tasks"].size() && !checked_a_split_skill; ++t) {
    const nlohmann::json& task = root["tasks"][t];
    const Request& request = workload->requests[t];
    ASSERT_EQ(request.id, "skills:" + task["task_id"].get<std::string>());
    if (task["skills"].empty()) continue;
    const std::string key = task["skills"][0];
    const nlohmann::json& skill = root["skills"][key];
    const std::string heading = "Skill: " + skill["name"].get<std::string>() + "\n";
    std::string rejoined;
    int num_pieces = 0;
    for (const Segment& segment : request.segments) {
      if (!segment.source_id.starts_with("skill:" + key + "#")) continue;
      ASSERT_TRUE(segment.text.starts_with(heading));
      ASSERT_TRUE(segment.text.ends_with("\n"));
      rejoined += segment.text.substr(heading.size(), segment.text.size() - heading.size() - 1);
      ++num_pieces;
    }
    EXPECT_EQ(rejoined, skill["text"].get<std::string>());
    checked_a_split_skill = num_pieces > 1;
  }
  EXPECT_TRUE(checked_a_split_skill);

  Result<Workload> again = BuildSkillsWorkload(options);
  ASSERT_TRUE(again.ok());
  ExpectSameRequests(*workload, *again);
}

TEST(SkillsWorkloadTest, OptionsCapSkipAndInterleave) {
  REPRISE_REQUIRE_SHARED_FILE(file, std::string(kSkillsBenchFile));
  SkillsOptions options{.common = Options(DataDirOf(file, kSkillsBenchFile)),
                        .max_catalog_skills = 5,
                        .skip_tasks_without_skills = true};
  options.common.chunk_tokens = 128;
  options.common.max_prompt_tokens = 512;
  Result<Workload> workload = BuildSkillsWorkload(options);
  ASSERT_TRUE(workload.ok()) << workload.error().ToString();
  EXPECT_EQ(workload->requests.size() + static_cast<size_t>(workload->stats.num_skipped_requests),
            52u);
  const std::string& catalog = workload->requests[0].segments[0].text;
  EXPECT_EQ(std::count(catalog.begin(), catalog.end(), '\n'), 6);
  ExpectShape(*workload, kRoleSkill, 128);
  for (const Request& request : workload->requests) {
    EXPECT_LE(CountPromptTokens(request, CountWords), 512) << request.id;
    EXPECT_EQ(request.segments[0].text, catalog);
  }

  // Interleaving: the same tasks, and no two neighbours share a skill.
  SkillsOptions plain{.common = Options(DataDirOf(file, kSkillsBenchFile))};
  SkillsOptions interleaved = plain;
  interleaved.interleave_shared_skills = true;
  Result<Workload> a = BuildSkillsWorkload(plain);
  Result<Workload> b = BuildSkillsWorkload(interleaved);
  ASSERT_TRUE(a.ok() && b.ok());
  std::multiset<std::string> ids_a, ids_b;
  for (const Request& request : a->requests) ids_a.insert(request.id);
  for (const Request& request : b->requests) ids_b.insert(request.id);
  EXPECT_EQ(ids_a, ids_b);
  auto skill_keys = [](const Request& request) {
    std::set<std::string> keys;
    for (const Segment& segment : request.segments) {
      if (segment.role == kRoleSkill) {
        keys.insert(segment.source_id.substr(0, segment.source_id.find('#')));
      }
    }
    return keys;
  };
  int num_adjacent_plain = 0;
  for (size_t i = 1; i < b->requests.size(); ++i) {
    std::set<std::string> previous = skill_keys(b->requests[i - 1]);
    for (const std::string& key : skill_keys(b->requests[i])) {
      EXPECT_FALSE(previous.contains(key)) << b->requests[i].id;
    }
    std::set<std::string> previous_plain = skill_keys(a->requests[i - 1]);
    for (const std::string& key : skill_keys(a->requests[i])) {
      num_adjacent_plain += previous_plain.contains(key) ? 1 : 0;
    }
  }
  EXPECT_GT(num_adjacent_plain, 0);  // file order does put sharing tasks side by side
}

}  // namespace
}  // namespace reprise::workload
