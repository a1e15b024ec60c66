// End-to-end tests of the `reprise` program: every subcommand on real files, exit codes and
// error messages for bad input.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "support/shared_data.h"
#include "support/temp_dir.h"

namespace reprise {
namespace {

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `reprise <args>` through the shell; `env` is prepended (e.g. "HOME=/x").
Outcome Reprise(const std::string& args, const std::string& env = "") {
  testing_support::TempDir dir;
  const std::string out = dir.path() + "/out", err = dir.path() + "/err";
  const std::string command = env + " " REPRISE_CLI_PATH " " + args + " >" + out + " 2>" + err;
  const int status = std::system(command.c_str());
  Outcome o;
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  o.out = ReadAll(out);
  o.err = ReadAll(err);
  return o;
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
  std::string bytes = ReadAll(model_);
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

TEST_F(CliTest, TrainedModelGreedyTextMatchesReference) {
  REPRISE_REQUIRE_SHARED_FILE(gguf, "models/stories260K/stories260K.gguf");
  REPRISE_REQUIRE_SHARED_FILE(reference, "models/stories260K/greedy_reference.json");
  nlohmann::json ref = nlohmann::json::parse(ReadAll(reference));
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
  EXPECT_NE(bare.out.find("making the 'tiny' shape"), std::string::npos) << bare.out;
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
  Outcome after = Reprise(run);
  ASSERT_EQ(after.exit_code, 0) << after.err;
  EXPECT_NE(after.err.find(" " + std::to_string(corrupted) + " corrupt dropped"), std::string::npos)
      << after.err;
  EXPECT_EQ(Reprise("cache clear --store " + store.path() + " --all").exit_code, 0);
  Outcome empty = Reprise("cache stats --json --store " + store.path());
  EXPECT_EQ(nlohmann::json::parse(empty.out)["chunks"].get<int>(), 0);
  EXPECT_EQ(Reprise("cache stats --store /nonexistent/store").exit_code, 1);
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
          "tokens_recomputed", "tokens_new", "overhead_ms_mean", "hits_pool", "hits_flash",
          "store_write_ms_on_ttft_path"}) {
      EXPECT_TRUE(j["methods"][method].contains(key)) << method << " " << key;
    }
    EXPECT_EQ(j["methods"][method]["store_write_ms_on_ttft_path"].get<double>(), 0.0);
  }
  EXPECT_EQ(j["methods"]["none"]["kl_mean"].get<double>(), 0.0);
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
  Outcome off = Reprise(bench);
  ASSERT_EQ(off.exit_code, 0) << off.err;
  nlohmann::json plain = nlohmann::json::parse(off.out)["methods"]["blend"];
  EXPECT_EQ(plain["guard_fallbacks"].get<int>(), 0);
  EXPECT_GT(plain["residual_deviation_mean"].get<double>(), 1e-6);
  EXPECT_GT(plain["kl_mean"].get<double>(), 1e-5);  // reuse without the guard is approximate
  Outcome on = Reprise(bench + " --guard 1e-9");
  ASSERT_EQ(on.exit_code, 0) << on.err;
  nlohmann::json guarded = nlohmann::json::parse(on.out)["methods"]["blend"];
  EXPECT_GT(guarded["guard_fallbacks"].get<int>(), 0);
  EXPECT_EQ(guarded["tokens_nonprefix"].get<int>(), 0);
  EXPECT_LT(guarded["kl_mean"].get<double>(), 1e-5);
  EXPECT_EQ(guarded["top1_agreement"].get<double>(), 1.0);
  EXPECT_EQ(Reprise(bench + " --guard -1").exit_code, 2);
}

}  // namespace
}  // namespace reprise
