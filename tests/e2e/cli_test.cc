// End-to-end tests of the `reprise` program: every subcommand on real files, exit codes and
// error messages for bad input.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "support/shared_data.h"
#include "support/shell_command.h"
#include "support/temp_dir.h"

namespace reprise {
namespace {

using Outcome = testing_support::ShellOutcome;
using testing_support::ReadWholeFile;

// Runs `reprise <args>` through the shell; `env` is prepended (e.g. "HOME=/x").
Outcome Reprise(const std::string& args, const std::string& env = "") {
  return testing_support::RunShell(env + " " REPRISE_CLI_PATH " " + args);
}

class CliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing_support::TempDir();
    model_ = dir_->path() + "/tiny.gguf";
    Outcome o = Reprise("make-model --shape tiny --type q8_0 -o " + model_);
    ASSERT_EQ(o.exit_code, 0) << o.err;
  }
  static void TearDownTestSuite() { delete dir_; }
  static testing_support::TempDir* dir_;
  static std::string model_;
};
testing_support::TempDir* CliTest::dir_ = nullptr;
std::string CliTest::model_;

TEST_F(CliTest, HelpForEverySubcommand) {
  for (const char* sub : {"demo", "run", "tokenize", "inspect", "convert", "make-model"}) {
    Outcome o = Reprise(std::string(sub) + " --help");
    EXPECT_EQ(o.exit_code, 0) << sub;
    EXPECT_NE(o.out.find("Usage"), std::string::npos) << sub;
  }
}

TEST_F(CliTest, InspectDescribesTheModel) {
  Outcome o = Reprise("inspect " + model_);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("llama, 2 layers, dim 64"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("q8_0 x"), std::string::npos);
  EXPECT_NE(o.out.find("SPM (llama), 512 tokens"), std::string::npos);
  Outcome j = Reprise("inspect --json " + model_);
  ASSERT_EQ(j.exit_code, 0);
  nlohmann::json parsed = nlohmann::json::parse(j.out);
  EXPECT_EQ(parsed["architecture"], "llama");
  EXPECT_EQ(parsed["tokenizer_size"], 512);
}

TEST_F(CliTest, TokenizeAndRun) {
  Outcome ids = Reprise("tokenize -m " + model_ + " --ids 'hello world'");
  ASSERT_EQ(ids.exit_code, 0) << ids.err;
  EXPECT_EQ(ids.out.rfind("1 ", 0), 0u) << ids.out;  // BOS first
  Outcome run = Reprise("run -m " + model_ + " -p 'hello' -n 8 --stats");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out.rfind("hello", 0), 0u);
  EXPECT_NE(run.err.find("generated 8 tokens"), std::string::npos) << run.err;
  // Same seed, same text; sampling is reproducible.
  Outcome a = Reprise("run -m " + model_ + " -p 'x' -n 12 --temp 0.9 --seed 4");
  Outcome b = Reprise("run -m " + model_ + " -p 'x' -n 12 --temp 0.9 --seed 4");
  EXPECT_EQ(a.out, b.out);
}

TEST_F(CliTest, BadInputGetsClearErrors) {
  Outcome missing = Reprise("run -m /nonexistent.gguf -p hi");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("reprise run: NotFound"), std::string::npos) << missing.err;

  const std::string cut = dir_->path() + "/cut.gguf";
  std::string bytes = ReadWholeFile(model_);
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  Outcome truncated = Reprise("inspect " + cut);
  EXPECT_EQ(truncated.exit_code, 1);
  EXPECT_NE(truncated.err.find("Corrupt"), std::string::npos) << truncated.err;
  EXPECT_NE(truncated.err.find("past the end"), std::string::npos) << truncated.err;

  Outcome too_long = Reprise("run -m " + model_ + " -c 8 -p 'a b c d e f g h i j k l m n o p'");
  EXPECT_EQ(too_long.exit_code, 1);
  EXPECT_NE(too_long.err.find("fit in the context"), std::string::npos) << too_long.err;
  EXPECT_EQ(too_long.out, "");  // nothing half-done on stdout

  Outcome bad_flag = Reprise("run -m " + model_ + " -p hi --temp -3");
  EXPECT_EQ(bad_flag.exit_code, 2) << bad_flag.err;
  Outcome no_command = Reprise("");
  EXPECT_EQ(no_command.exit_code, 2);
  Outcome unknown_shape = Reprise("make-model --shape nope -o /tmp/x.gguf");
  EXPECT_EQ(unknown_shape.exit_code, 2);
}

// The prompt's token count that `run --stats` prints, or -1.
int PromptTokens(const Outcome& o) {
  const size_t at = o.err.find("prompt ");
  return at == std::string::npos ? -1 : std::atoi(o.err.c_str() + at + 7);
}

TEST_F(CliTest, RunTakesDocumentsASystemMessageAndAPromptFile) {
  const std::string doc_a = dir_->path() + "/park.txt";
  const std::string doc_b = dir_->path() + "/dog.txt";
  const std::string prompt = dir_->path() + "/prompt.txt";
  std::ofstream(doc_a) << "Lily went to the park with her mom and saw a big red ball.";
  std::ofstream(doc_b) << "Tom had a little dog that liked to run and jump in the sun.";
  std::ofstream(prompt) << "hello there";
  Outcome alone = Reprise("run -m " + model_ + " -p 'hello there' -n 2 --stats");
  ASSERT_EQ(alone.exit_code, 0) << alone.err;

  const std::string docs = " --doc " + doc_a + " --doc " + doc_b;
  Outcome with_docs =
      Reprise("run -m " + model_ + docs + " --prompt-file " + prompt + " -n 2 --stats");
  ASSERT_EQ(with_docs.exit_code, 0) << with_docs.err;
  EXPECT_EQ(with_docs.out.rfind("hello there", 0), 0u) << with_docs.out;  // the prompt, echoed
  EXPECT_GT(PromptTokens(with_docs), PromptTokens(alone) + 20) << with_docs.err;
  // From stdin: the same prompt.
  Outcome from_stdin =
      Reprise("run -m " + model_ + docs + " --prompt-file - -n 2 --stats < " + prompt);
  ASSERT_EQ(from_stdin.exit_code, 0) << from_stdin.err;
  EXPECT_EQ(from_stdin.out, with_docs.out);
  EXPECT_EQ(PromptTokens(from_stdin), PromptTokens(with_docs));

  // A system message makes it a chat: the reply alone is printed.
  Outcome chat =
      Reprise("run -m " + model_ + " --system 'Be brief.' -p 'hello there' -n 2 --stats");
  ASSERT_EQ(chat.exit_code, 0) << chat.err;
  EXPECT_EQ(chat.out.find("hello there"), std::string::npos) << chat.out;
  EXPECT_GT(PromptTokens(chat), PromptTokens(alone)) << chat.err;

  // Missing files are named; one prompt source exactly.
  Outcome missing_doc = Reprise("run -m " + model_ + " -p hi --doc /nonexistent/doc.txt");
  EXPECT_EQ(missing_doc.exit_code, 1);
  EXPECT_NE(missing_doc.err.find("reprise run: NotFound"), std::string::npos) << missing_doc.err;
  EXPECT_NE(missing_doc.err.find("/nonexistent/doc.txt"), std::string::npos) << missing_doc.err;
  EXPECT_EQ(missing_doc.out, "");
  Outcome missing_prompt = Reprise("run -m " + model_ + " --prompt-file /nonexistent/p.txt");
  EXPECT_EQ(missing_prompt.exit_code, 1);
  EXPECT_NE(missing_prompt.err.find("/nonexistent/p.txt"), std::string::npos);
  Outcome directory = Reprise("run -m " + model_ + " -p hi --doc " + dir_->path());
  EXPECT_EQ(directory.exit_code, 1) << directory.err;
  EXPECT_EQ(Reprise("run -m " + model_ + " -p hi --prompt-file " + prompt).exit_code, 2);
  EXPECT_EQ(Reprise("run -m " + model_ + " -n 2").exit_code, 2);
}

TEST_F(CliTest, ChatMarkersInThePromptStayText) {
  REPRISE_REQUIRE_SHARED_FILE(qwen, "models/tokenizers/qwen/qwen.tiktoken");
  const std::string model = dir_->path() + "/qwen.gguf";
  // Qwen's vocabulary needs a shape with room for it; one layer keeps it small (87 MiB).
  Outcome made = Reprise("make-model --shape qwen2.5-0.5b --layers 1 --type q4_0 --vocab " + qwen +
                         " -o " + model);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string run = "run -m " + model + " -c 256 -t 2 --chat -n 1 --stats -p ";
  Outcome plain = Reprise(run + "'Hi'");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  Outcome marker = Reprise(run + "'Hi<|im_end|>'");
  ASSERT_EQ(marker.exit_code, 0) << marker.err;
  // As the control token it would be one more token; as text "<|im_end|>" is several.
  EXPECT_GE(PromptTokens(marker), PromptTokens(plain) + 3) << plain.err << "\n" << marker.err;
}

TEST_F(CliTest, TrainedModelGreedyTextMatchesReference) {
  REPRISE_REQUIRE_SHARED_FILE(gguf, "models/stories260K/stories260K.gguf");
  REPRISE_REQUIRE_SHARED_FILE(reference, "models/stories260K/greedy_reference.json");
  nlohmann::json ref = nlohmann::json::parse(ReadWholeFile(reference));
  // The reference starts from BOS alone; "Once upon a time" is its first four tokens.
  const std::string text = ref["generated_text"];
  Outcome o = Reprise("run -m " + gguf + " -p 'Once upon a time' -n 40");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const std::string generated = o.out.substr(0, o.out.size() - 1);  // final newline
  EXPECT_EQ(text.substr(0, generated.size()), generated);
  EXPECT_GT(generated.size(), 120u);  // "Once upon a time" + 40 tokens
}

TEST_F(CliTest, ConvertsBothCheckpointFormats) {
  REPRISE_REQUIRE_SHARED_FILE(bin, "models/stories260K/stories260K.bin");
  REPRISE_REQUIRE_SHARED_FILE(tok, "models/stories260K/tok512.bin");
  REPRISE_REQUIRE_SHARED_FILE(hf_config, "models/tinystories-656K/config.json");
  const std::string a = dir_->path() + "/a.gguf", b = dir_->path() + "/b.gguf";
  Outcome o = Reprise("convert --llama2c " + bin + " --tokenizer " + tok + " -o " + a);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const std::string hf = hf_config.substr(0, hf_config.rfind('/'));
  o = Reprise("convert --hf " + hf + " --type q8_0 -o " + b);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  Outcome run = Reprise("run -m " + b + " -p 'Once upon a time' -n 24");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("Lily"), std::string::npos) << run.out;  // coherent story text
  Outcome both = Reprise("convert --hf " + hf + " --llama2c " + bin + " -o " + a);
  EXPECT_EQ(both.exit_code, 2);
}

TEST_F(CliTest, DemoRunsWithAndWithoutSharedData) {
  testing_support::TempDir cache;
  Outcome bare =
      Reprise("demo -n 8", "REPRISE_DATA_DIR=/nonexistent XDG_CACHE_HOME=" + cache.path());
  ASSERT_EQ(bare.exit_code, 0) << bare.err;
  EXPECT_NE(bare.out.find("demo kit"), std::string::npos) << bare.out;  // data/demo
  EXPECT_NE(bare.out.find("demo: done"), std::string::npos);
  auto data = testing_support::SharedDataDir();
  if (!data) GTEST_SKIP() << "shared data not found; the trained-model demo was not run";
  Outcome trained =
      Reprise("demo -n 16", "REPRISE_DATA_DIR=" + *data + " XDG_CACHE_HOME=" + cache.path());
  ASSERT_EQ(trained.exit_code, 0) << trained.err;
  EXPECT_NE(trained.out.find("stories260K"), std::string::npos);
  EXPECT_NE(trained.out.find("TinyStories-656K"), std::string::npos);
  EXPECT_NE(trained.out.find("Once upon a time, there was a little girl"), std::string::npos);
}

TEST_F(CliTest, StoreKeepsKvAcrossRunsAndCacheCommandsWork) {
  testing_support::TempDir store;
  const std::string prompt =
      "'The old lighthouse keeper climbed the stairs every evening to light the lamp for ships.'";
  const std::string run = "run -m " + model_ + " -p " + prompt + " -n 4 --stats --store-dir " +
                          store.path() + " --namespace e2e";
  Outcome first = Reprise(run);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.err.find(" 0 prefix-reused"), std::string::npos) << first.err;
  Outcome second = Reprise(run);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(second.err.find(" 0 prefix-reused"), std::string::npos) << second.err;
  EXPECT_NE(second.err.find("from flash"), std::string::npos) << second.err;

  Outcome stats = Reprise("cache stats --json --store " + store.path());
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  nlohmann::json j = nlohmann::json::parse(stats.out);
  for (const char* key :
       {"chunks", "bytes_on_disk", "bytes_in_pool", "namespaces", "corrupt_dropped"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_GE(j["chunks"].get<int>(), 1);
  Outcome ls = Reprise("cache ls --store " + store.path() + " --namespace e2e");
  EXPECT_NE(ls.out.find("e2e"), std::string::npos);
  EXPECT_EQ(Reprise("cache pin --store " + store.path() + " --namespace e2e").exit_code, 0);
  EXPECT_EQ(Reprise("cache gc --store " + store.path()).exit_code, 0);

  // A corrupted KV file is a miss, never a crash: the run still answers.
  int corrupted = 0;
  for (const auto& e : std::filesystem::directory_iterator(store.path())) {
    if (e.path().extension() != ".rpkv") continue;
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(200);
    f.put('\x7f');
    ++corrupted;
  }
  ASSERT_GE(corrupted, 1);
  // The run plans from the catalog, then loads every chunk of the plan: each fails its
  // checks and is dropped, and the prompt is planned again without them (storing afterwards
  // loads nothing); gc verifies every file; the count persists across processes.
  Outcome after = Reprise(run);
  ASSERT_EQ(after.exit_code, 0) << after.err;
  EXPECT_NE(after.err.find(" " + std::to_string(corrupted) + " corrupt dropped"), std::string::npos)
      << after.err;
  EXPECT_NE(after.err.find(" 0 prefix-reused"), std::string::npos) << after.err;
  ASSERT_EQ(Reprise("cache gc --store " + store.path()).exit_code, 0);
  Outcome counted = Reprise("cache stats --json --store " + store.path());
  ASSERT_EQ(counted.exit_code, 0) << counted.err;
  EXPECT_EQ(nlohmann::json::parse(counted.out)["corrupt_dropped"].get<int>(), corrupted)
      << counted.out;
  EXPECT_EQ(Reprise("cache clear --store " + store.path() + " --all").exit_code, 0);
  Outcome empty = Reprise("cache stats --json --store " + store.path());
  EXPECT_EQ(nlohmann::json::parse(empty.out)["chunks"].get<int>(), 0);
  EXPECT_EQ(Reprise("cache stats --store /nonexistent/store").exit_code, 1);
}

// Issue 12: a damaged catalog used to make every command fail while `cache stats` said
// "0 chunks" with exit 0. Now stats fails with the reason, a writer sets the catalog aside and
// rebuilds it from the KV files, and stats then shows the chunks and the rebuild.
TEST_F(CliTest, DamagedCatalogIsReportedThenRebuiltFromTheKvFiles) {
  testing_support::TempDir store;
  const std::string run = "run -m " + model_ +
                          " -p 'A fox ran across the snowy field to find its den before night.'"
                          " -n 2 --store-dir " +
                          store.path() + " --namespace e2e";
  ASSERT_EQ(Reprise(run).exit_code, 0);
  Outcome before = Reprise("cache stats --json --store " + store.path());
  ASSERT_EQ(before.exit_code, 0) << before.err;
  const int chunks = nlohmann::json::parse(before.out)["chunks"].get<int>();
  ASSERT_GE(chunks, 1);
  for (const char* suffix : {"-wal", "-shm"}) {
    std::filesystem::remove(store.path() + "/catalog.db" + suffix);
  }
  {
    std::ofstream garbage(store.path() + "/catalog.db", std::ios::binary | std::ios::trunc);
    garbage << std::string(8192, '\x5a');
  }
  Outcome damaged = Reprise("cache stats --json --store " + store.path());
  EXPECT_NE(damaged.exit_code, 0) << damaged.out;
  EXPECT_NE(damaged.err.find("catalog"), std::string::npos) << damaged.err;

  Outcome gc = Reprise("cache gc --store " + store.path());
  ASSERT_EQ(gc.exit_code, 0) << gc.err;
  Outcome after = Reprise("cache stats --json --store " + store.path());
  ASSERT_EQ(after.exit_code, 0) << after.err;
  nlohmann::json j = nlohmann::json::parse(after.out);
  EXPECT_EQ(j["chunks"].get<int>(), chunks);
  EXPECT_GE(j["catalog_rebuilds"].get<int>(), 1);
  Outcome again = Reprise(run + " --stats");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("from flash"), std::string::npos) << again.err;
}

// Issue 9: `--methods blend,none` crashed (the full-prefill oracle was empty when `none` was
// not first).
TEST_F(CliTest, BenchReuseTakesMethodsInAnyOrder) {
  REPRISE_REQUIRE_SHARED_FILE(stories, "models/stories260K/stories260K.gguf");
  REPRISE_REQUIRE_SHARED_FILE(locomo, "workloads/locomo/locomo10.json");
  const std::string data = locomo.substr(0, locomo.find("/workloads/"));
  Outcome o = Reprise("bench reuse -m " + stories +
                      " --workload chat --queries 2 --top-chunks 3 --chunk-tokens 64 "
                      "--methods blend,none --json --data " +
                      data);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  nlohmann::json j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["methods"]["none"]["kl_mean"].get<double>(), 0.0);
  EXPECT_EQ(j["methods"]["none"]["top1_agreement"].get<double>(), 1.0);
  EXPECT_TRUE(j["methods"].contains("blend"));
}

TEST_F(CliTest, BenchSessionsComparesSessionsWithEngines) {
  Outcome o = Reprise("bench sessions -m " + model_ + " -t 1 -c 256 -n 2 -p 64 --json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  nlohmann::json j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["added"].get<int>(), 2);
  EXPECT_EQ(j["context_tokens"].get<int>(), 256);
  for (const char* key : {"first_engine_mb", "per_session_mb", "per_engine_mb", "peak_rss_mb"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  Outcome text = Reprise("bench sessions -m " + model_ + " -t 1 -c 256 -n 1 -p 64");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("each further session of it:"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("each further engine (baseline"), std::string::npos) << text.out;
  EXPECT_NE(Reprise("bench sessions -m " + model_ + " -n 0").exit_code, 0);
  EXPECT_LE(j["prompt_tokens"].get<int>(), 64);
  // By default each request fills its context (its whole KV cache is written): the prompt and
  // the 4 generated tokens leave at most one slot and one word of the filler free.
  o = Reprise("bench sessions -m " + model_ + " -t 1 -c 1024 -n 1 --json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["context_tokens"].get<int>(), 1024);
  EXPECT_LE(j["tokens_per_request"].get<int>(), 1024 - 1);
  EXPECT_GE(j["tokens_per_request"].get<int>(), 1024 - 4) << o.out;
}

TEST_F(CliTest, BenchAccuracyComparesTheGraphsWithTheReferenceForward) {
  const std::string text = dir_->path() + "/accuracy.txt";
  std::ofstream(text) << "Once upon a time there was a little dog who liked to run in the park.";
  Outcome o = Reprise("bench accuracy -m " + model_ + " -t 1 --text " + text +
                      " --step 4 --continuation 4 --json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  nlohmann::json j = nlohmann::json::parse(o.out);
  EXPECT_GT(j["positions"].get<int>(), 1);
  EXPECT_EQ(j["reference"], model_);
  EXPECT_GE(j["kl_mean"].get<double>(), 0.0);
  EXPECT_LT(j["kl_mean"].get<double>(), 0.05);
  Outcome missing =
      Reprise("bench accuracy -m " + model_ + " --reference " + dir_->path() + "/missing.gguf");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("reprise bench accuracy:"), std::string::npos) << missing.err;
}

TEST_F(CliTest, BenchReuseReportsEveryMethod) {
  REPRISE_REQUIRE_SHARED_FILE(stories, "models/stories260K/stories260K.gguf");
  REPRISE_REQUIRE_SHARED_FILE(locomo, "workloads/locomo/locomo10.json");
  testing_support::TempDir store;
  const std::string data = locomo.substr(0, locomo.find("/workloads/"));
  Outcome o = Reprise("bench reuse -m " + stories +
                      " --workload chat --queries 4 --top-chunks 3 "
                      "--chunk-tokens 64 --json --data " +
                      data + " --store " + store.path());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  nlohmann::json j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["queries"], 4);
  for (const char* method : {"none", "prefix", "full", "blend"}) {
    ASSERT_TRUE(j["methods"].contains(method)) << method;
    for (const char* key :
         {"ttft_ms_mean", "ttft_ms_p50", "ttft_ms_p90", "speedup_vs_none", "kl_mean",
          "top1_agreement", "continuation_agreement", "tokens_prefix", "tokens_nonprefix",
          "tokens_recomputed", "tokens_stable", "tokens_new", "overhead_ms_mean", "hits_pool",
          "hits_flash", "store_write_ms_on_ttft_path"}) {
      EXPECT_TRUE(j["methods"][method].contains(key)) << method << " " << key;
    }
    EXPECT_EQ(j["methods"][method]["store_write_ms_on_ttft_path"].get<double>(), 0.0);
  }
  EXPECT_EQ(j["methods"]["none"]["kl_mean"].get<double>(), 0.0);
  // Reuse recall: a chat's later turns hold the earlier ones, so the oracle finds reusable
  // tokens, and full / blend find most of them (prefix only the shared start); per query, one
  // value each, -1 where nothing was reusable (the first query).
  EXPECT_EQ(j["recall_window"], 32);
  const int64_t reusable = j["tokens_reusable"].get<int64_t>();
  EXPECT_GT(reusable, 100);
  ASSERT_EQ(j["tokens_reusable_per_query"].size(), 4u);
  EXPECT_EQ(j["tokens_reusable_per_query"][0], 0);
  for (const char* method : {"full", "blend"}) {
    const nlohmann::json& m = j["methods"][method];
    EXPECT_GT(m["reuse_recall"].get<double>(), 0.5) << method;
    // Found tokens are counted where the oracle calls them reusable (found ∩ reusable): at
    // most what the plan took from the cache, and recall at most 1.
    EXPECT_LE(m["tokens_found"].get<int64_t>(), m["tokens_prefix"].get<int64_t>() +
                                                    m["tokens_nonprefix"].get<int64_t>() +
                                                    m["tokens_recomputed"].get<int64_t>());
    EXPECT_LE(m["reuse_recall"].get<double>(), 1.0) << method;
    ASSERT_EQ(m["reuse_recall_per_query"].size(), 4u) << method;
    EXPECT_EQ(m["reuse_recall_per_query"][0].get<double>(), -1.0);
    // Every reusable token left new has one cause; the others were found.
    int64_t lost = 0;
    for (const char* cause : {"last_token", "matcher", "candidates_capped", "prompt_chunk_split",
                              "seam", "cached_chunk_split", "not_cached"}) {
      ASSERT_TRUE(m["reuse_recall_losses"].contains(cause)) << method << " " << cause;
      lost += m["reuse_recall_losses"][cause].get<int64_t>();
    }
    EXPECT_LE(lost, reusable) << method;
    EXPECT_EQ(reusable - lost, m["tokens_found"].get<int64_t>()) << method;
  }
  EXPECT_LE(j["methods"]["prefix"]["reuse_recall"].get<double>(),
            j["methods"]["full"]["reuse_recall"].get<double>());
  EXPECT_EQ(j["methods"]["none"]["reuse_recall"].get<double>(), 0.0);

  // Again on the same store: the first run's chunks are found though this run's oracle has
  // not seen them (nothing is reusable in the first query); only what the oracle calls
  // reusable counts as found, so recall stays at most 1.
  o = Reprise("bench reuse -m " + stories +
              " --workload chat --queries 4 --top-chunks 3 --chunk-tokens 64 --json --data " +
              data + " --store " + store.path());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  j = nlohmann::json::parse(o.out);
  for (const char* method : {"prefix", "full", "blend"}) {
    const nlohmann::json& m = j["methods"][method];
    EXPECT_LE(m["tokens_found"].get<int64_t>(), j["tokens_reusable"].get<int64_t>()) << method;
    EXPECT_LE(m["reuse_recall"].get<double>(), 1.0) << method;
  }
}

// The quality guard at a threshold every reuse exceeds sends each recompute call back to a
// full prefill: blend then gives the full-prefill distribution, and says how often it fell back.
TEST_F(CliTest, BenchReuseGuardFallsBackToFullPrefill) {
  REPRISE_REQUIRE_SHARED_FILE(stories, "models/stories260K/stories260K.gguf");
  REPRISE_REQUIRE_SHARED_FILE(locomo, "workloads/locomo/locomo10.json");
  const std::string data = locomo.substr(0, locomo.find("/workloads/"));
  const std::string bench = "bench reuse -m " + stories +
                            " --workload chat --warm-corpus --queries 4 --top-chunks 3 "
                            "--chunk-tokens 64 --methods blend --json --data " +
                            data;
  // By default the guard takes the model's calibrated threshold (measured at the first run):
  // honest reuse passes it.
  Outcome calibrated = Reprise(bench);
  ASSERT_EQ(calibrated.exit_code, 0) << calibrated.err;
  nlohmann::json by_default = nlohmann::json::parse(calibrated.out);
  EXPECT_GT(by_default["guard_deviation"].get<double>(), 0.0);
  EXPECT_EQ(by_default["methods"]["blend"]["guard_fallbacks"].get<int>(), 0);
  EXPECT_EQ(nlohmann::json::parse(Reprise(bench + " --guard auto").out)["guard_deviation"],
            by_default["guard_deviation"]);  // kept, not measured again
  Outcome off = Reprise(bench + " --guard 0");
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_EQ(nlohmann::json::parse(off.out)["guard_deviation"].get<double>(), 0.0);
  nlohmann::json plain = nlohmann::json::parse(off.out)["methods"]["blend"];
  EXPECT_EQ(plain["guard_fallbacks"].get<int>(), 0);
  EXPECT_GT(plain["residual_deviation_mean"].get<double>(), 1e-6);
  EXPECT_GT(plain["kl_mean"].get<double>(), 1e-5);  // reuse without the guard is approximate
  // Per-query quality and its tails.
  ASSERT_EQ(plain["kl_per_query"].size(), 4u);
  ASSERT_EQ(plain["continuation_per_query"].size(), 4u);
  double kl_max = 0;
  for (const auto& kl : plain["kl_per_query"]) kl_max = std::max(kl_max, kl.get<double>());
  EXPECT_EQ(plain["kl_max"].get<double>(), kl_max);
  EXPECT_LE(plain["kl_p95"].get<double>(), kl_max);
  EXPECT_LE(plain["continuation_p10"].get<double>(),
            plain["continuation_agreement"].get<double>() + 1e-9);
  Outcome on = Reprise(bench + " --guard 1e-9");
  ASSERT_EQ(on.exit_code, 0) << on.err;
  nlohmann::json guarded = nlohmann::json::parse(on.out)["methods"]["blend"];
  EXPECT_GT(guarded["guard_fallbacks"].get<int>(), 0);
  EXPECT_EQ(guarded["tokens_nonprefix"].get<int>(), 0);
  EXPECT_LT(guarded["kl_mean"].get<double>(), 1e-5);
  EXPECT_EQ(guarded["top1_agreement"].get<double>(), 1.0);
  EXPECT_EQ(Reprise(bench + " --guard -1").exit_code, 2);
}

// Query-aware selection: the same recompute budget spent on other tokens, named in the report;
// an unknown strategy is a usage error.
TEST_F(CliTest, BenchReuseSelectsTokensByTheQuestionsAttention) {
  REPRISE_REQUIRE_SHARED_FILE(stories, "models/stories260K/stories260K.gguf");
  REPRISE_REQUIRE_SHARED_FILE(hotpot, "workloads/hotpotqa/hotpotqa_distractor_100.jsonl");
  const std::string data = hotpot.substr(0, hotpot.find("/workloads/"));
  const std::string bench = "bench reuse -m " + stories +
                            " --workload docqa-shuffled --queries 4 --methods blend --guard 0 "
                            "--adaptive-stable 0 --json --data " +
                            data;
  Outcome by_deviation = Reprise(bench + " --selection deviation");
  ASSERT_EQ(by_deviation.exit_code, 0) << by_deviation.err;
  Outcome by_default = Reprise(bench);
  ASSERT_EQ(by_default.exit_code, 0) << by_default.err;
  EXPECT_EQ(nlohmann::json::parse(by_default.out)["selection"], "attention-deviation");
  Outcome by_attention = Reprise(bench + " --selection attention-deviation --probe-tokens 16");
  ASSERT_EQ(by_attention.exit_code, 0) << by_attention.err;
  const nlohmann::json a = nlohmann::json::parse(by_deviation.out);
  const nlohmann::json b = nlohmann::json::parse(by_attention.out);
  EXPECT_EQ(a["selection"], "deviation");
  EXPECT_EQ(b["selection"], "attention-deviation");
  const nlohmann::json& da = a["methods"]["blend"];
  const nlohmann::json& db = b["methods"]["blend"];
  EXPECT_GT(da["tokens_recomputed"].get<int64_t>(), 0);
  EXPECT_EQ(db["tokens_recomputed"], da["tokens_recomputed"]);
  EXPECT_NE(db["kl_per_query"], da["kl_per_query"]);
  EXPECT_EQ(Reprise(bench + " --selection nearest").exit_code, 2);
  EXPECT_EQ(Reprise(bench + " --selection attention --probe-tokens 65").exit_code, 2);
}

// Static shapes change the work, not a result; the schedulers of the ablation change the
// graph calls: naive (each run its own calls) makes more than the DP.
TEST_F(CliTest, BenchReuseRunsStaticShapesUnderEachScheduler) {
  REPRISE_REQUIRE_SHARED_FILE(stories, "models/stories260K/stories260K.gguf");
  REPRISE_REQUIRE_SHARED_FILE(hotpot, "workloads/hotpotqa/hotpotqa_distractor_100.jsonl");
  const std::string data = hotpot.substr(0, hotpot.find("/workloads/"));
  const std::string bench = "bench reuse -m " + stories +
                            " --workload docqa-shuffled --queries 3 --methods blend --guard 0 "
                            "--json --data " +
                            data;
  Outcome dynamic = Reprise(bench);
  ASSERT_EQ(dynamic.exit_code, 0) << dynamic.err;
  Outcome fixed = Reprise(bench + " --static-shapes");
  ASSERT_EQ(fixed.exit_code, 0) << fixed.err;
  Outcome naive = Reprise(bench + " --static-shapes --scheduler naive");
  ASSERT_EQ(naive.exit_code, 0) << naive.err;
  const nlohmann::json d = nlohmann::json::parse(dynamic.out);
  const nlohmann::json f = nlohmann::json::parse(fixed.out);
  const nlohmann::json n = nlohmann::json::parse(naive.out);
  EXPECT_EQ(d["static_shapes"], false);
  EXPECT_EQ(f["static_shapes"], true);
  EXPECT_EQ(f["scheduler"], "dp");
  EXPECT_EQ(n["scheduler"], "naive");
  const nlohmann::json& db = d["methods"]["blend"];
  const nlohmann::json& fb = f["methods"]["blend"];
  const nlohmann::json& nb = n["methods"]["blend"];
  EXPECT_EQ(fb["kl_per_query"], db["kl_per_query"]);
  EXPECT_EQ(fb["tokens_recomputed"], db["tokens_recomputed"]);
  EXPECT_EQ(fb["graph_calls_mean"], db["graph_calls_mean"]);
  EXPECT_GT(nb["graph_calls_mean"].get<double>(), fb["graph_calls_mean"].get<double>());
  EXPECT_EQ(Reprise(bench + " --scheduler optimal").exit_code, 2);
}

// Position sensitivity: the same documents in every order; each method says how often its
// answer stayed the same.
TEST_F(CliTest, BenchReuseReportsOrderStability) {
  REPRISE_REQUIRE_SHARED_FILE(stories, "models/stories260K/stories260K.gguf");
  REPRISE_REQUIRE_SHARED_FILE(hotpot, "workloads/hotpotqa/hotpotqa_distractor_100.jsonl");
  const std::string data = hotpot.substr(0, hotpot.find("/workloads/"));
  Outcome out =
      Reprise("bench reuse -m " + stories +
              " --workload docqa-orders --queries 2 --methods none,blend --json --data " + data);
  ASSERT_EQ(out.exit_code, 0) << out.err;
  nlohmann::json j = nlohmann::json::parse(out.out);
  EXPECT_EQ(j["queries"].get<int>(), 12);
  for (const char* method : {"none", "blend"}) {  // none: the full-prefill oracle
    const nlohmann::json& m = j["methods"][method];
    EXPECT_EQ(m["order_groups"].get<int>(), 2) << method;
    EXPECT_GE(m["order_stability"].get<double>(), 0.0) << method;
    EXPECT_LE(m["order_stability"].get<double>(), 1.0) << method;
  }
  Outcome plain = Reprise("bench reuse -m " + stories +
                          " --workload docqa --queries 2 --methods blend --json --data " + data);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(nlohmann::json::parse(plain.out)["methods"]["blend"]["order_stability"].get<double>(),
            -1.0);  // no groups
}

// Overwrites the string value of GGUF metadata `key` in `bytes` with `value` (same length).
void PatchGgufString(std::string& bytes, const std::string& key, const std::string& value) {
  const size_t at = bytes.find(key);
  ASSERT_NE(at, std::string::npos) << key;
  const size_t length_at = at + key.size() + 4;  // after the value type (u32)
  uint64_t length = 0;
  std::memcpy(&length, bytes.data() + length_at, 8);
  ASSERT_EQ(length, value.size()) << key;
  bytes.replace(length_at + 8, value.size(), value);
}

// Sets the namespace of every chunk of `store_dir`'s catalog, bypassing the store's checks, as
// an old store (or another program) may have written it.
void SetAllNamespaces(const std::string& store_dir, const std::string& name) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((store_dir + "/catalog.db").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "UPDATE chunks SET namespace = ?", -1, &stmt, nullptr),
            SQLITE_OK);
  sqlite3_bind_text(stmt, 1, name.data(), static_cast<int>(name.size()), SQLITE_TRANSIENT);
  EXPECT_EQ(sqlite3_step(stmt), SQLITE_DONE);
  EXPECT_GE(sqlite3_changes(db), 1);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

// Hostile input: the tests of these two suites carry the CTest label `hostile` as well, so that
// the sanitizer build runs them (tests/CMakeLists.txt).
class CliHostileInputTest : public CliTest {};

// A store holding the chunks of one short run, in namespace "e2e".
class CliHostileStoreTest : public CliTest {
 protected:
  void SetUp() override {
    Outcome o = Reprise("run -m " + model_ + " -p 'The keeper climbed the stairs to the lamp.' " +
                        "-n 2 --store-dir " + store_.path() + " --namespace e2e");
    ASSERT_EQ(o.exit_code, 0) << o.err;
  }
  testing_support::TempDir store_;
};

// Invalid UTF-8 in the file's strings or its path made nlohmann's dump throw: abort, exit 134.
TEST_F(CliHostileInputTest, InspectJsonSurvivesInvalidUtf8) {
  std::string bytes = ReadWholeFile(model_);
  PatchGgufString(bytes, "general.name", std::string(19, '\xff'));
  PatchGgufString(bytes, "general.architecture", "ll\xffma");
  const std::string path = dir_->path() + "/bad\xfe\xff.gguf";
  std::ofstream(path, std::ios::binary) << bytes;
  Outcome o = Reprise("inspect --json '" + path + "'");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  nlohmann::json j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["architecture"], "ll\xef\xbf\xbdma");  // U+FFFD for the bad byte
  EXPECT_NE(j["path"].get<std::string>().find("\xef\xbf\xbd"), std::string::npos);
  EXPECT_TRUE(j.contains("config_error"));  // "ll?ma" is no architecture we run
  Outcome text = Reprise("inspect '" + path + "'");
  EXPECT_EQ(text.exit_code, 0) << text.err;
}

// One app's badly named namespace broke `cache ls/stats --json` for every app (exit 134); a
// newline in a name broke the text listing's lines.
TEST_F(CliHostileStoreTest, CacheCommandsSurviveInvalidNamespaceNames) {
  const std::string bad = "\xff\nB";
  SetAllNamespaces(store_.path(), bad);
  const std::string store = " --store " + store_.path();
  Outcome ls = Reprise("cache ls --json" + store);
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  nlohmann::json rows = nlohmann::json::parse(ls.out);
  ASSERT_GE(rows.size(), 1u);
  EXPECT_EQ(rows[0]["namespace"], "\xef\xbf\xbd\nB");
  Outcome stats = Reprise("cache stats --json" + store);
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_EQ(nlohmann::json::parse(stats.out)["chunks"].get<size_t>(), rows.size());
  const std::string bad_arg = " --namespace \"$(printf '\\377\\nB')\"";
  stats = Reprise("cache stats --json" + bad_arg + store);
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_EQ(nlohmann::json::parse(stats.out)["namespace"], "\xef\xbf\xbd\nB");
  Outcome text = Reprise("cache ls" + store);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(static_cast<size_t>(std::count(text.out.begin(), text.out.end(), '\n')), rows.size());
  EXPECT_EQ(text.out.rfind("\\xff\\nB ", 0), 0u) << text.out;
  // The name stays usable by the cache commands: clear it by its bytes.
  Outcome clear = Reprise("cache clear" + bad_arg + store);
  ASSERT_EQ(clear.exit_code, 0) << clear.err;
  EXPECT_NE(clear.out.find("\\xff\\nB"), std::string::npos) << clear.out;
  EXPECT_EQ(nlohmann::json::parse(Reprise("cache stats --json" + store).out)["chunks"], 0);
}

// `--chunk zz` and ids past 64 bits made std::stoull throw (exit 134); "1234" was echoed as
// "no chunk 4660".
TEST_F(CliHostileStoreTest, CachePinTakesHexChunkIdsAsTyped) {
  const std::string pin = "cache pin --store " + store_.path() + " --namespace e2e --chunk ";
  for (const char* bad : {"zz", "10000000000000000", "-1", "0x"}) {
    Outcome o = Reprise(pin + "'" + bad + "'");
    EXPECT_EQ(o.exit_code, 2) << bad << ": " << o.err;
    EXPECT_NE(o.err.find(std::string("'") + bad + "'"), std::string::npos) << o.err;
  }
  Outcome missing = Reprise(pin + "1234");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("no chunk 1234"), std::string::npos) << missing.err;
  EXPECT_EQ(missing.err.find("4660"), std::string::npos) << missing.err;

  Outcome ls = Reprise("cache ls --json --store " + store_.path());
  const std::string id = nlohmann::json::parse(ls.out).at(0)["chunk"];
  Outcome pinned = Reprise(pin + id);
  ASSERT_EQ(pinned.exit_code, 0) << pinned.err;
  EXPECT_EQ(pinned.out, "pinned chunk " + id + "\n");
  ls = Reprise("cache ls --json --store " + store_.path());
  EXPECT_EQ(nlohmann::json::parse(ls.out).at(0)["pinned"], true);
}

// Cache commands: no --namespace means every namespace; --namespace '' is an error (it meant
// "all" before, while `run --namespace ''` wrote chunks under the empty name).
TEST_F(CliHostileStoreTest, EmptyNamespaceIsAnErrorNotAll) {
  const std::string store = " --store " + store_.path();
  for (const char* sub : {"ls", "stats", "pin", "clear"}) {
    Outcome o = Reprise(std::string("cache ") + sub + " --namespace ''" + store);
    EXPECT_EQ(o.exit_code, 2) << sub << ": " << o.out;
    EXPECT_NE(o.err.find("must not be empty"), std::string::npos) << o.err;
  }
  EXPECT_NE(Reprise("cache ls" + store).out.find("e2e"), std::string::npos);
  Outcome run =
      Reprise("run -m " + model_ + " -p hi -n 1 --namespace ''" + " --store-dir " + store_.path());
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("--namespace"), std::string::npos) << run.err;
  Outcome newline = Reprise("run -m " + model_ + " -p hi -n 1 --namespace \"$(printf 'a\\nb')\"" +
                            " --store-dir " + store_.path());
  EXPECT_EQ(newline.exit_code, 2) << newline.err;
  // The chunks of "e2e" are still all there.
  EXPECT_EQ(Reprise("cache clear --namespace e2e" + store).exit_code, 0);
}

// Issue 41: `serve --store-dir ""` ran without a store, silently (and `run` did too, and
// `cache --store ""` used the default folder); `cache ls --namespace <200 bytes>` listed
// nothing while serve refused the name.
TEST_F(CliHostileStoreTest, EmptyFoldersAndImpossibleNamespacesAreRefused) {
  const std::string store = " --store " + store_.path();
  // `timeout`: a serve that took the option would run until killed.
  for (const std::string& args :
       {"serve -m " + model_ + " --port 0 --store-dir ''",
        "run -m " + model_ + " -p hi -n 1 --store-dir ''", std::string("cache ls --store ''")}) {
    Outcome o = Reprise(args, "timeout 60");
    EXPECT_EQ(o.exit_code, 2) << args << ": " << o.err;
    EXPECT_NE(o.err.find("must not be empty"), std::string::npos) << args << ": " << o.err;
  }
  const std::string long_name(200, 'n');
  Outcome serve =
      Reprise("serve -m " + model_ + " --port 0 --namespace " + long_name, "timeout 60");
  EXPECT_EQ(serve.exit_code, 2) << serve.err;
  EXPECT_NE(serve.err.find("at most 128"), std::string::npos) << serve.err;
  for (const char* sub : {"ls", "stats", "pin", "clear"}) {
    Outcome o = Reprise(std::string("cache ") + sub + " --namespace " + long_name + store);
    EXPECT_EQ(o.exit_code, 2) << sub << ": " << o.out;
    EXPECT_NE(o.err.find("at most 128"), std::string::npos) << sub << ": " << o.err;
  }
  // Chunks an older version stored under such a name stay listable and clearable.
  SetAllNamespaces(store_.path(), long_name);
  Outcome ls = Reprise("cache ls --json --namespace " + long_name + store);
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  EXPECT_GE(nlohmann::json::parse(ls.out).size(), 1u);
  EXPECT_EQ(Reprise("cache clear --namespace " + long_name + store).exit_code, 0);
}

// A MiB budget past 2^44 wrapped to a tiny byte budget when shifted by 20 bits, and `cache gc`
// then evicted the whole store.
TEST_F(CliHostileStoreTest, BudgetsAreRangeCheckedAndGcSaysWhatItEvicted) {
  const std::string store = " --store " + store_.path();
  const int chunks = nlohmann::json::parse(Reprise("cache stats --json" + store).out)["chunks"];
  ASSERT_GE(chunks, 1);
  for (const char* huge : {"17592186044417", "9223372036854775807", "0", "-5"}) {
    Outcome gc = Reprise(std::string("cache gc --disk-mb ") + huge + store);
    EXPECT_EQ(gc.exit_code, 2) << huge;
    EXPECT_NE(gc.err.find("--disk-mb"), std::string::npos) << gc.err;
    Outcome run = Reprise("run -m " + model_ + " -p hi -n 1 --store-dir " + store_.path() +
                          " --pool-mb " + huge);
    EXPECT_EQ(run.exit_code, 2) << huge;
    EXPECT_NE(run.err.find("--pool-mb"), std::string::npos) << run.err;
    Outcome admit = Reprise("run -m " + model_ + " -p hi -n 1 --store-dir " + store_.path() +
                            " --admit-after " + huge);
    EXPECT_EQ(admit.exit_code, 2) << huge;
    EXPECT_NE(admit.err.find("--admit-after"), std::string::npos) << admit.err;
  }
  EXPECT_EQ(nlohmann::json::parse(Reprise("cache stats --json" + store).out)["chunks"], chunks);
  Outcome gc = Reprise("cache gc --json --disk-mb 16777216" + store);
  ASSERT_EQ(gc.exit_code, 0) << gc.err;
  nlohmann::json report = nlohmann::json::parse(gc.out);
  EXPECT_EQ(report["evicted"], 0);
  EXPECT_EQ(report["evicted_bytes"], 0);
  EXPECT_EQ(report["disk_budget_bytes"].get<int64_t>(), int64_t{16} << 40);
  Outcome text = Reprise("cache gc" + store);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("evicted 0 chunks (0 bytes"), std::string::npos) << text.out;
}

// `cache gc` says what it evicted to meet the budget: the count, and bytes that match what
// left the disk.
TEST_F(CliTest, CacheGcReportsWhatItEvicted) {
  testing_support::TempDir store;
  const char* words[] = {"alpha", "beta", "gamma", "delta", "lamp", "stairs", "keeper", "ship"};
  std::string text;
  for (int i = 0; i < 500; ++i) text += std::string(words[(i * 7 + i / 3) % 8]) + " ";
  // Three prompts of ~1900 tokens: ~1.4 MiB of f16 KV, over a 1 MiB budget.
  for (int i = 0; i < 3; ++i) {
    Outcome o = Reprise("run -m " + model_ + " -p '" + std::to_string(i) + " " + text +
                        "' -n 1 --store-dir " + store.path() + " --namespace e2e");
    ASSERT_EQ(o.exit_code, 0) << o.err;
  }
  const std::string at = " --store " + store.path();
  const int64_t before =
      nlohmann::json::parse(Reprise("cache stats --json" + at).out)["bytes_on_disk"];
  ASSERT_GT(before, int64_t{1} << 20);
  Outcome gc = Reprise("cache gc --json --disk-mb 1" + at);
  ASSERT_EQ(gc.exit_code, 0) << gc.err;
  nlohmann::json report = nlohmann::json::parse(gc.out);
  const int64_t after =
      nlohmann::json::parse(Reprise("cache stats --json" + at).out)["bytes_on_disk"];
  EXPECT_LE(after, int64_t{1} << 20);
  EXPECT_GT(report["evicted"].get<int>(), 0);
  EXPECT_EQ(report["evicted_bytes"].get<int64_t>(), before - after);
  EXPECT_EQ(report["disk_budget_bytes"].get<int64_t>(), int64_t{1} << 20);
}

// Every numeric option is range-checked by the parser (exit 2, the option named); before,
// `calibrate -r 0` took the median of nothing (segfault), NaN passed as a temperature, and
// `--top-p 0` passed the parser only to be refused by the sampler.
TEST_F(CliHostileInputTest, NumericOptionsAreRangeChecked) {
  const std::string run = "run -m " + model_ + " -p hi -n 1 ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"calibrate -m " + model_ + " -r 0", "--repetitions"},
      {"calibrate -m " + model_ + " -r -1", "--repetitions"},
      {"calibrate -m " + model_ + " -t -2", "--threads"},
      {run + "--temp nan", "--temp: must be a finite number"},
      {run + "--temp inf", "--temp: must be a finite number"},
      {run + "--guard nan", "--guard: must be a finite number"},
      {run + "--top-p 0", "--top-p: must be in (0, 1]"},
      {run + "--top-p nan", "--top-p"},
      {run + "--ratio 0", "--ratio"},
      {run + "-t 100000", "--threads"},
      {run + "-c -1", "--context"},
      {"make-model --layers -1 -o " + dir_->path() + "/x.gguf", "--layers"},
      {"make-model --layers 2000 -o " + dir_->path() + "/x.gguf", "--layers"},
      {"bench decode -m " + model_ + " -t -1", "--threads"},
      {"bench prefill -m " + model_ + " --lengths 16,0", "--lengths"},
      {"bench reuse -m " + model_ + " --queries 0", "--queries"},
      // --cache-mb is --pool-mb's other name, in every command
      {"bench reuse -m " + model_ + " --cache-mb 17592186044417", "--pool-mb"},
      {"bench reuse -m " + model_ + " --guard nan", "--guard"},
      {"bench accuracy -m " + model_ + " --step 0", "--step"},
      {"bench accuracy -m " + model_ + " --tokens 1", "--tokens"},
  };
  for (const auto& [args, message] : cases) {
    Outcome o = Reprise(args);
    EXPECT_EQ(o.exit_code, 2) << args << "\n" << o.err;
    EXPECT_NE(o.err.find(message), std::string::npos) << args << "\n" << o.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir_->path() + "/x.gguf"));
  Outcome ok = Reprise(run + "--top-p 1 --temp 0.5");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

// Wrong JSON types in config.json made nlohmann throw type_error out of `convert` (exit 134).
TEST_F(CliHostileInputTest, ConvertReportsWrongJsonTypes) {
  testing_support::TempDir hf;
  std::ofstream(hf.path() + "/config.json") << R"({"model_type": 5})";
  Outcome o = Reprise("convert --hf " + hf.path() + " -o " + hf.path() + "/o.gguf");
  EXPECT_EQ(o.exit_code, 1) << o.err;
  EXPECT_NE(o.err.find("reprise convert: Corrupt"), std::string::npos) << o.err;
  std::ofstream(hf.path() + "/config.json")
      << R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
             "num_hidden_layers": 1, "num_attention_heads": 4, "vocab_size": 32,
             "rope_scaling": {"rope_type": "llama3", "factor": "eight"}})";
  o = Reprise("convert --hf " + hf.path() + " -o " + hf.path() + "/o.gguf");
  EXPECT_EQ(o.exit_code, 1) << o.err;
  EXPECT_NE(o.err.find("factor"), std::string::npos) << o.err;
}

}  // namespace
}  // namespace reprise
