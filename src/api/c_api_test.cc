// The C API (reprise/reprise.h) as a C caller uses it: handles, status codes with messages,
// streaming callbacks, sessions in namespaces, cancellation — on the demo kit's model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "reprise/calibration.h"
#include "reprise/defaults.h"
#include "reprise/engine.h"
#include "reprise/reprise.h"
#include "support/temp_dir.h"

namespace {

const std::string kModel = std::string(REPRISE_SOURCE_DIR) + "/data/demo/stories260K.gguf";

struct Stream {
  std::string text;
  int calls = 0;
  int stop_after = -1;                     // return 0 on this call
  reprise_cancel_token* cancel = nullptr;  // cancel on call 2
};

int OnText(const char* text, size_t length, void* user_data) {
  auto* s = static_cast<Stream*>(user_data);
  s->text.append(text, length);
  ++s->calls;
  if (s->cancel != nullptr && s->calls == 2) reprise_cancel(s->cancel);
  return s->calls == s->stop_after ? 0 : 1;
}

class CApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    reprise_engine_options_init(&options_);
    options_.model_path = kModel.c_str();
    options_.context_tokens = 512;
    options_.num_threads = 2;
    options_.cache_mb = 64;
  }
  void TearDown() override { reprise_engine_destroy(engine_); }
  void Create() {
    char* error = nullptr;
    ASSERT_EQ(reprise_engine_create(&options_, &engine_, &error), REPRISE_OK) << error;
    ASSERT_NE(engine_, nullptr);
  }
  reprise_engine_options options_;
  reprise_engine* engine_ = nullptr;
};

// The C API's defaults are EngineOptions' (reprise_engine_options_init copies them), and a
// default stated by several layers is the one constant of reprise/defaults.h.
TEST(CApiDefaultsTest, TheCApisDefaultsAreTheEngineOptions) {
  reprise_engine_options c;
  reprise_engine_options_init(&c);
  const reprise::EngineOptions d;
  EXPECT_EQ(c.context_tokens, d.context_tokens);
  EXPECT_EQ(c.sessions, d.sessions);
  EXPECT_EQ(c.num_threads, d.num_threads);
  EXPECT_EQ(static_cast<int>(c.reuse), static_cast<int>(d.reuse));
  EXPECT_EQ(c.recompute_ratio, d.recompute_ratio);
  EXPECT_EQ(c.cache_mb, d.cache_mb);
  EXPECT_EQ(c.store_disk_mb, d.store_disk_mb);
  EXPECT_EQ(static_cast<int>(c.store_codec), static_cast<int>(d.store_codec));
  EXPECT_EQ(c.batch_decode != 0, d.batch_decode);
  EXPECT_EQ(c.store_admit_after, d.store_admit_after);
  EXPECT_EQ(static_cast<int>(c.token_selection), static_cast<int>(d.token_selection));
  EXPECT_EQ(c.static_shapes != 0, d.static_shapes);
  EXPECT_EQ(static_cast<int>(c.int8_scheme), static_cast<int>(d.int8_scheme));
  EXPECT_EQ(c.outlier_fraction, d.outlier_fraction);
  EXPECT_EQ(c.out_of_order_groups, d.out_of_order_groups);
  EXPECT_EQ(c.out_of_order_window, d.out_of_order_window);
  EXPECT_EQ(c.store_dir, nullptr);
  EXPECT_EQ(c.store_remote, nullptr);
  EXPECT_TRUE(d.store_remote.empty());
  EXPECT_EQ(c.store_remote_timeout_ms, d.store_remote_timeout_ms);
  EXPECT_EQ(c.store_remote_ttl_s, d.store_remote_ttl_s);
  EXPECT_EQ(d.store_remote_timeout_ms, reprise::kDefaultRemoteTimeoutMs);
  EXPECT_EQ(d.store_remote_ttl_s, reprise::kDefaultRemoteTtlSeconds);
  EXPECT_EQ(c.name_space, nullptr);  // "default", EngineOptions::name_space
  EXPECT_EQ(d.name_space, "default");

  EXPECT_EQ(d.recompute_ratio, reprise::kDefaultRecomputeRatio);
  EXPECT_EQ(reprise::CalibrateOptions{}.recompute_ratio, reprise::kDefaultRecomputeRatio);
  EXPECT_EQ(d.stable_recompute_min_deviation, reprise::kDefaultStableRecomputeMinDeviation);
}

TEST_F(CApiTest, GeneratesStreamsAndReportsReuse) {
  Create();
  EXPECT_NE(std::string(reprise_engine_describe(engine_)).find("context 512"), std::string::npos);
  const reprise_segment segments[] = {
      {"document",
       "Lily went to the park with her mom. They saw a big red ball under a tree. "
       "Lily wanted to play with it, but the ball belonged to a boy named Tom."},
      {"question", "One day,"}};
  reprise_request request;
  reprise_request_init(&request);
  request.segments = segments;
  request.num_segments = 2;
  request.max_new_tokens = 16;
  Stream stream;
  reprise_result first;
  char* error = nullptr;
  ASSERT_EQ(reprise_generate(engine_, &request, OnText, &stream, &first, &error), REPRISE_OK)
      << error;
  EXPECT_EQ(std::string(first.text), stream.text);
  EXPECT_GT(first.generated_tokens, 0);
  EXPECT_GT(first.prompt_tokens, 30);
  EXPECT_EQ(first.reuse.tokens_prefix, 0);
  EXPECT_EQ(first.reuse.tokens_new, first.prompt_tokens);

  reprise_result second;
  ASSERT_EQ(reprise_generate(engine_, &request, nullptr, nullptr, &second, &error), REPRISE_OK);
  EXPECT_GT(second.reuse.tokens_prefix, first.prompt_tokens / 2);
  EXPECT_STREQ(second.text, first.text);
  reprise_result_free(&first);
  reprise_result_free(&second);
  EXPECT_EQ(first.text, nullptr);
  reprise_result_free(&second);  // twice is harmless
}

TEST_F(CApiTest, ErrorsComeWithCodesAndMessages) {
  char* error = nullptr;
  options_.model_path = "/no/such/model.gguf";
  EXPECT_EQ(reprise_engine_create(&options_, &engine_, &error), REPRISE_NOT_FOUND);
  ASSERT_NE(error, nullptr);
  EXPECT_NE(std::string(error).find("/no/such/model.gguf"), std::string::npos) << error;
  reprise_string_free(error);
  EXPECT_EQ(engine_, nullptr);
  EXPECT_EQ(reprise_engine_create(nullptr, &engine_, nullptr), REPRISE_INVALID_ARGUMENT);
  options_.model_path = kModel.c_str();
  // As a C caller may: any int in an enum field (written as bytes, as C would store it).
  const int bad = 42;
  std::memcpy(&options_.reuse, &bad, sizeof(bad));
  EXPECT_EQ(reprise_engine_create(&options_, &engine_, &error), REPRISE_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error).find("unknown reuse method 42"), std::string::npos) << error;
  reprise_string_free(error);
  options_.reuse = REPRISE_REUSE_PREFIX;
  std::memcpy(&options_.store_codec, &bad, sizeof(bad));
  EXPECT_EQ(reprise_engine_create(&options_, &engine_, nullptr), REPRISE_INVALID_ARGUMENT);
  options_.store_codec = REPRISE_CODEC_F16;
  std::memcpy(&options_.token_selection, &bad, sizeof(bad));
  EXPECT_EQ(reprise_engine_create(&options_, &engine_, &error), REPRISE_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error).find("unknown token selection 42"), std::string::npos) << error;
  reprise_string_free(error);
  options_.token_selection = REPRISE_SELECT_ATTENTION_DEVIATION;  // the default again
  EXPECT_EQ(options_.int8_scheme, REPRISE_INT8_PER_BLOCK);
  EXPECT_EQ(options_.outlier_fraction, 0.01);
  EXPECT_EQ(options_.out_of_order_groups, 0);
  EXPECT_EQ(options_.out_of_order_window, 2);
  std::memcpy(&options_.int8_scheme, &bad, sizeof(bad));
  EXPECT_EQ(reprise_engine_create(&options_, &engine_, &error), REPRISE_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error).find("unknown int8 scheme 42"), std::string::npos) << error;
  reprise_string_free(error);
  options_.int8_scheme = REPRISE_INT8_SHADOW;
  options_.outlier_fraction = 0.9;  // past 0.5
  EXPECT_EQ(reprise_engine_create(&options_, &engine_, nullptr), REPRISE_INVALID_ARGUMENT);
  options_.outlier_fraction = 0.01;
  options_.int8_scheme = REPRISE_INT8_PER_BLOCK;
  options_.out_of_order_window = 0;
  EXPECT_EQ(reprise_engine_create(&options_, &engine_, nullptr), REPRISE_INVALID_ARGUMENT);
  options_.out_of_order_window = 2;
  EXPECT_EQ(options_.store_admit_after, 1);  // the default: every chunk written
  reprise::testing_support::TempDir dir;
  const std::string store = dir.path() + "/store";
  options_.store_dir = store.c_str();
  options_.store_admit_after = 0;
  EXPECT_EQ(reprise_engine_create(&options_, &engine_, &error), REPRISE_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error).find("sightings"), std::string::npos) << error;
  reprise_string_free(error);
  options_.store_dir = nullptr;
  options_.store_admit_after = 1;
  Create();
  reprise_request request;
  reprise_request_init(&request);
  request.prompt = "";  // generates from BOS alone
  request.max_new_tokens = 4;
  reprise_result result;
  ASSERT_EQ(reprise_generate(engine_, &request, nullptr, nullptr, &result, &error), REPRISE_OK)
      << error;
  EXPECT_EQ(result.prompt_tokens, 1);  // BOS
  EXPECT_EQ(result.generated_tokens, 4);
  reprise_result_free(&result);
  request.temperature = -1.0f;
  EXPECT_EQ(reprise_generate(engine_, &request, nullptr, nullptr, &result, &error),
            REPRISE_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error).find("temperature"), std::string::npos) << error;
  reprise_string_free(error);
  request.temperature = 0.0f;
  request.num_segments = 3;  // segments NULL
  EXPECT_EQ(reprise_generate(engine_, &request, nullptr, nullptr, &result, nullptr),
            REPRISE_INVALID_ARGUMENT);
  EXPECT_EQ(reprise_generate(engine_, nullptr, nullptr, nullptr, &result, nullptr),
            REPRISE_INVALID_ARGUMENT);
  EXPECT_STREQ(reprise_status_name(REPRISE_CANCELLED), "cancelled");
}

// Fields added later come after the first version's, which keep their offsets.
static_assert(offsetof(reprise_engine_options, store_admit_after) >
                  offsetof(reprise_engine_options, batch_decode) &&
              offsetof(reprise_engine_options, token_selection) >
                  offsetof(reprise_engine_options, store_admit_after) &&
              offsetof(reprise_engine_options, static_shapes) >
                  offsetof(reprise_engine_options, token_selection) &&
              offsetof(reprise_engine_options, int8_scheme) >
                  offsetof(reprise_engine_options, static_shapes) &&
              offsetof(reprise_engine_options, out_of_order_window) >
                  offsetof(reprise_engine_options, int8_scheme));
static_assert(offsetof(reprise_request, documents) > offsetof(reprise_request, cancel) &&
              offsetof(reprise_request, max_prompt_tokens) > offsetof(reprise_request, skills) &&
              offsetof(reprise_request, keep_kv) > offsetof(reprise_request, max_prompt_tokens));

TEST_F(CApiTest, DocumentsSkillsAndPromptLimit) {
  Create();
  reprise_request request;
  reprise_request_init(&request);
  EXPECT_EQ(request.documents, nullptr);
  EXPECT_EQ(request.num_skills, 0u);
  EXPECT_EQ(request.max_prompt_tokens, 0);
  request.prompt = "One day,";
  request.max_new_tokens = 4;
  reprise_result alone;
  ASSERT_EQ(reprise_generate(engine_, &request, nullptr, nullptr, &alone, nullptr), REPRISE_OK);

  const reprise_document documents[] = {
      {"park", "Lily went to the park with her mom. They saw a big red ball under a tree."},
      {nullptr, "Tom had a little dog. The dog liked to run and jump in the sun all day."}};
  const reprise_document skills[] = {{"story", "Tell a short happy story."}};
  request.documents = documents;
  request.num_documents = 2;
  request.skills = skills;
  request.num_skills = 1;
  reprise_result first;
  char* error = nullptr;
  ASSERT_EQ(reprise_generate(engine_, &request, nullptr, nullptr, &first, &error), REPRISE_OK)
      << error;
  EXPECT_GT(first.prompt_tokens, alone.prompt_tokens + 40);  // the context is in the prompt
  reprise_result second;
  ASSERT_EQ(reprise_generate(engine_, &request, nullptr, nullptr, &second, nullptr), REPRISE_OK);
  EXPECT_GT(second.reuse.tokens_prefix, first.prompt_tokens / 2);

  // The limit counts the whole prompt's tokens.
  request.max_prompt_tokens = first.prompt_tokens;
  reprise_result fits;
  EXPECT_EQ(reprise_generate(engine_, &request, nullptr, nullptr, &fits, nullptr), REPRISE_OK);
  request.max_prompt_tokens = first.prompt_tokens - 1;
  reprise_result refused;
  EXPECT_EQ(reprise_generate(engine_, &request, nullptr, nullptr, &refused, &error),
            REPRISE_INVALID_ARGUMENT);
  ASSERT_NE(error, nullptr);
  EXPECT_NE(std::string(error).find(std::to_string(first.prompt_tokens) + " tokens"),
            std::string::npos)
      << error;
  EXPECT_NE(std::string(error).find(std::to_string(first.prompt_tokens - 1)), std::string::npos)
      << error;
  reprise_string_free(error);
  request.max_prompt_tokens = 0;

  const reprise_document no_text[] = {{"x", nullptr}};
  request.skills = no_text;
  EXPECT_EQ(reprise_generate(engine_, &request, nullptr, nullptr, &refused, &error),
            REPRISE_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error).find("skill 0 has no text"), std::string::npos) << error;
  reprise_string_free(error);
  request.skills = nullptr;  // num_skills still 1
  EXPECT_EQ(reprise_generate(engine_, &request, nullptr, nullptr, &refused, nullptr),
            REPRISE_INVALID_ARGUMENT);
  for (reprise_result* r : {&alone, &first, &second, &fits}) reprise_result_free(r);
}

TEST_F(CApiTest, SessionsKeepTheirNamespacesApart) {
  Create();
  reprise_session *a = nullptr, *b = nullptr;
  char* error = nullptr;
  ASSERT_EQ(reprise_session_open(engine_, "app-a", &a, &error), REPRISE_OK) << error;
  ASSERT_EQ(reprise_session_open(engine_, "app-b", &b, &error), REPRISE_OK) << error;
  reprise_session* bad = nullptr;
  EXPECT_EQ(reprise_session_open(engine_, "tab\there", &bad, nullptr), REPRISE_INVALID_ARGUMENT);
  reprise_request request;
  reprise_request_init(&request);
  request.prompt =
      "Once upon a time, there was a little girl named Lily. She loved to play "
      "outside in the sun with her dog and her friends from the big house.";
  request.max_new_tokens = 4;
  reprise_result r;
  ASSERT_EQ(reprise_session_generate(a, &request, nullptr, nullptr, &r, nullptr), REPRISE_OK);
  reprise_result_free(&r);
  ASSERT_EQ(reprise_session_generate(b, &request, nullptr, nullptr, &r, nullptr), REPRISE_OK);
  EXPECT_EQ(r.reuse.tokens_prefix, 0);
  reprise_result_free(&r);
  ASSERT_EQ(reprise_session_generate(a, &request, nullptr, nullptr, &r, nullptr), REPRISE_OK);
  EXPECT_GT(r.reuse.tokens_prefix, 0);
  reprise_result_free(&r);
  // A request that keeps nothing: b's next identical request still finds only the first.
  EXPECT_EQ(request.keep_kv, 1);
  request.prompt = "A small cat sat on a warm red mat and looked at the moon all night long.";
  request.keep_kv = 0;
  ASSERT_EQ(reprise_session_generate(b, &request, nullptr, nullptr, &r, nullptr), REPRISE_OK);
  const int computed = r.reuse.tokens_new;
  EXPECT_GE(computed, r.prompt_tokens - 1);  // all but BOS, cached before
  reprise_result_free(&r);
  ASSERT_EQ(reprise_session_generate(b, &request, nullptr, nullptr, &r, nullptr), REPRISE_OK);
  EXPECT_EQ(r.reuse.tokens_new, computed);
  reprise_result_free(&r);
  reprise_session_close(a);
  reprise_session_close(b);
}

// A session with its own reuse method, and the first token's logits: a session that reuses
// nothing computes every token again, and its first-token distribution is the one a reusing
// session's exact prefix gives; a buffer shorter than the vocabulary is refused up front.
TEST_F(CApiTest, SessionReuseMethodAndFirstTokenLogits) {
  Create();
  const int vocab = reprise_engine_vocab_size(engine_);
  ASSERT_GT(vocab, 1);
  EXPECT_EQ(reprise_engine_vocab_size(nullptr), 0);
  reprise_session *plain = nullptr, *exact = nullptr, *bad = nullptr;
  char* error = nullptr;
  ASSERT_EQ(reprise_session_open_with_reuse(engine_, "ns", REPRISE_REUSE_NONE, &plain, &error),
            REPRISE_OK)
      << error;
  ASSERT_EQ(reprise_session_open_with_reuse(engine_, "ns", REPRISE_REUSE_PREFIX, &exact, &error),
            REPRISE_OK)
      << error;
  // (A C caller's out-of-range method is refused as well; C++ cannot pass one without
  // undefined behaviour.) A NULL engine is refused, and nothing is opened.
  EXPECT_EQ(reprise_session_open_with_reuse(nullptr, "ns", REPRISE_REUSE_BLEND, &bad, nullptr),
            REPRISE_INVALID_ARGUMENT);
  EXPECT_EQ(bad, nullptr);

  reprise_request request;
  reprise_request_init(&request);
  EXPECT_EQ(request.first_token_logits, nullptr);
  request.prompt =
      "Tom had a red kite. He ran up the hill with it and the wind took it high into the sky.";
  request.max_new_tokens = 2;
  std::vector<float> a(static_cast<size_t>(vocab), 0.0f), b(a.size(), 0.0f), c(a.size(), 0.0f);
  reprise_result r;
  request.first_token_logits = a.data();
  request.first_token_logits_size = a.size();
  ASSERT_EQ(reprise_session_generate(exact, &request, nullptr, nullptr, &r, &error), REPRISE_OK)
      << error;
  reprise_result_free(&r);
  request.first_token_logits = b.data();
  ASSERT_EQ(reprise_session_generate(exact, &request, nullptr, nullptr, &r, nullptr), REPRISE_OK);
  EXPECT_GT(r.reuse.tokens_prefix, 0);  // the prefix session reused its first request
  reprise_result_free(&r);
  request.first_token_logits = c.data();
  ASSERT_EQ(reprise_session_generate(plain, &request, nullptr, nullptr, &r, nullptr), REPRISE_OK);
  EXPECT_EQ(r.reuse.tokens_prefix, 0);  // same namespace, but this session reuses nothing
  EXPECT_EQ(r.reuse.tokens_new, r.prompt_tokens);
  reprise_result_free(&r);
  EXPECT_NE(*std::max_element(a.begin(), a.end()), 0.0f);
  EXPECT_EQ(a, b);  // exact prefix reuse: the same distribution
  EXPECT_EQ(a, c);

  request.first_token_logits_size = a.size() - 1;
  EXPECT_EQ(reprise_session_generate(plain, &request, nullptr, nullptr, &r, &error),
            REPRISE_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error).find("vocabulary"), std::string::npos) << error;
  reprise_string_free(error);
  reprise_session_close(plain);
  reprise_session_close(exact);
}

// An app looks after the store its engine used: counts per namespace, pinning, gc, and
// deleting one namespace's chunks (a user who signs out) while the other's stay.
TEST_F(CApiTest, TokenLevelEvaluationOfASession) {
  Create();
  char* error = nullptr;
  const char* text = "Once upon a time, Lily saw a big tree";
  size_t count = 0;
  // A buffer too short: refused, with the count it needs.
  int32_t one[1] = {-7};
  EXPECT_EQ(reprise_tokenize(engine_, text, 1, one, 1, &count, &error), REPRISE_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error).find("tokens"), std::string::npos) << error;
  reprise_string_free(error);
  error = nullptr;
  EXPECT_EQ(one[0], -7);
  ASSERT_GT(count, 4u);
  std::vector<int32_t> ids(count);
  ASSERT_EQ(reprise_tokenize(engine_, text, 1, ids.data(), ids.size(), &count, &error), REPRISE_OK)
      << error;

  // The logits a request computes for the same prompt.
  const size_t vocab = static_cast<size_t>(reprise_engine_vocab_size(engine_));
  std::vector<float> expected(vocab);
  reprise_request request;
  reprise_request_init(&request);
  request.prompt = text;
  request.max_new_tokens = 1;
  request.keep_kv = 0;
  request.first_token_logits = expected.data();
  request.first_token_logits_size = expected.size();
  reprise_result result;
  ASSERT_EQ(reprise_generate(engine_, &request, nullptr, nullptr, &result, &error), REPRISE_OK)
      << error;
  reprise_result_free(&result);

  reprise_session* session = nullptr;
  ASSERT_EQ(reprise_session_open(engine_, nullptr, &session, &error), REPRISE_OK) << error;
  std::vector<float> logits(vocab);
  EXPECT_EQ(
      reprise_session_evaluate(session, ids.data(), ids.size(), logits.data(), vocab - 1, &error),
      REPRISE_INVALID_ARGUMENT);
  reprise_string_free(error);
  error = nullptr;
  EXPECT_EQ(reprise_session_num_tokens(session), 0);
  ASSERT_EQ(reprise_session_evaluate(session, ids.data(), ids.size(), logits.data(), vocab, &error),
            REPRISE_OK)
      << error;
  EXPECT_EQ(reprise_session_num_tokens(session), static_cast<int>(ids.size()));
  EXPECT_EQ(logits, expected);
  const int32_t outside[] = {static_cast<int32_t>(vocab)};
  EXPECT_EQ(reprise_session_evaluate(session, outside, 1, logits.data(), vocab, &error),
            REPRISE_INVALID_ARGUMENT);
  EXPECT_NE(std::string(error).find("vocabulary"), std::string::npos) << error;
  reprise_string_free(error);
  error = nullptr;
  EXPECT_EQ(reprise_session_truncate(session, 1000, &error), REPRISE_INVALID_ARGUMENT);
  reprise_string_free(error);
  error = nullptr;
  ASSERT_EQ(reprise_session_truncate(session, 0, &error), REPRISE_OK) << error;
  EXPECT_EQ(reprise_session_num_tokens(session), 0);
  reprise_session_close(session);
}

TEST_F(CApiTest, StoreAdministrationWithoutAModel) {
  reprise::testing_support::TempDir dir;
  const std::string store = dir.path() + "/store";
  reprise_store_admin* admin = nullptr;
  char* error = nullptr;
  EXPECT_EQ(reprise_store_admin_open(store.c_str(), 0, 1, &admin, &error), REPRISE_NOT_FOUND);
  reprise_string_free(error);
  EXPECT_EQ(admin, nullptr);

  options_.store_dir = store.c_str();
  options_.reuse = REPRISE_REUSE_BLEND;
  EXPECT_EQ(options_.token_selection, REPRISE_SELECT_ATTENTION_DEVIATION);  // the default
  options_.token_selection = REPRISE_SELECT_DEVIATION;
  EXPECT_EQ(options_.static_shapes, 0);
  options_.static_shapes = 1;
  // And the NPU-style techniques: static INT8 with shadow outliers, out-of-order prefill.
  options_.int8_scheme = REPRISE_INT8_SHADOW;
  options_.out_of_order_groups = 2;
  Create();
  reprise_request request;
  reprise_request_init(&request);
  request.prompt =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
      "sun with her dog and her friends from the big house near the park.";
  request.max_new_tokens = 2;
  reprise_result r;
  for (const char* ns : {"user-1", "user-2"}) {
    request.name_space = ns;
    ASSERT_EQ(reprise_generate(engine_, &request, nullptr, nullptr, &r, &error), REPRISE_OK)
        << error;
    reprise_result_free(&r);
  }
  reprise_engine_destroy(engine_);  // persists everything
  engine_ = nullptr;

  ASSERT_EQ(reprise_store_admin_open(store.c_str(), 0, 0, &admin, &error), REPRISE_OK) << error;
  reprise_store_stats all, one;
  ASSERT_EQ(reprise_store_admin_stats(admin, nullptr, &all, nullptr), REPRISE_OK);
  ASSERT_EQ(reprise_store_admin_stats(admin, "user-1", &one, nullptr), REPRISE_OK);
  EXPECT_EQ(all.namespaces, 2);
  EXPECT_GT(one.chunks, 0);
  EXPECT_EQ(all.chunks, 2 * one.chunks);
  EXPECT_EQ(all.bytes_on_disk, 2 * one.bytes_on_disk);
  EXPECT_EQ(reprise_store_admin_pin(admin, "user-1", 0, 1, 1, nullptr), REPRISE_OK);
  EXPECT_EQ(reprise_store_admin_pin(admin, "user-1", 12345, 0, 1, nullptr), REPRISE_NOT_FOUND);
  reprise_store_gc_report gc;
  ASSERT_EQ(reprise_store_admin_gc(admin, &gc, nullptr), REPRISE_OK);
  EXPECT_EQ(gc.corrupt + gc.evicted + gc.orphan_files + gc.rows_missing_file, 0);
  ASSERT_EQ(reprise_store_admin_clear(admin, "user-2", nullptr), REPRISE_OK);
  reprise_store_stats after;
  ASSERT_EQ(reprise_store_admin_stats(admin, nullptr, &after, nullptr), REPRISE_OK);
  EXPECT_EQ(after.chunks, one.chunks);
  EXPECT_EQ(reprise_store_admin_clear(nullptr, nullptr, nullptr), REPRISE_INVALID_ARGUMENT);
  reprise_store_admin_close(admin);
}

TEST_F(CApiTest, CancellationAndStoppingEndTheRequest) {
  Create();
  reprise_cancel_token* token = reprise_cancel_token_create();
  reprise_request request;
  reprise_request_init(&request);
  request.prompt = "Once upon a time";
  request.max_new_tokens = 300;
  request.cancel = token;
  Stream stream;
  stream.cancel = token;
  reprise_result r;
  ASSERT_EQ(reprise_generate(engine_, &request, OnText, &stream, &r, nullptr), REPRISE_OK);
  EXPECT_STREQ(r.stop_reason, "cancelled");
  EXPECT_EQ(stream.calls, 2);
  reprise_result_free(&r);
  // Still cancelled: the next request is refused before it starts.
  EXPECT_EQ(reprise_generate(engine_, &request, nullptr, nullptr, &r, nullptr), REPRISE_CANCELLED);
  reprise_cancel_token_reset(token);
  Stream stopper;
  stopper.stop_after = 3;
  ASSERT_EQ(reprise_generate(engine_, &request, OnText, &stopper, &r, nullptr), REPRISE_OK);
  EXPECT_STREQ(r.stop_reason, "stopped");
  EXPECT_EQ(stopper.calls, 3);
  reprise_result_free(&r);
  reprise_cancel_token_destroy(token);
}

}  // namespace
