// End-to-end test of `reprise demo` on a fresh machine: no ../shared data (REPRISE_DATA_DIR
// points at an empty folder), a private cache folder and HOME, only the demo kit of the
// checkout (data/demo). Checks the lines a newcomer is shown: TTFT per method, what was
// reused, answers against a full prefill, and chunks from flash after the restart.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/shell_command.h"
#include "support/temp_dir.h"

namespace reprise {
namespace {

using Outcome = testing_support::ShellOutcome;

// Runs `reprise demo <args>` from the checkout's root, with nothing shared and a private
// cache folder and HOME under `home`.
Outcome Demo(const std::string& args, const std::string& home) {
  const std::string empty = home + "/empty-data";
  return testing_support::RunShell(
      "mkdir -p " + empty + " && cd " REPRISE_SOURCE_DIR + " && env REPRISE_DATA_DIR=" + empty +
      " HOME=" + home + " XDG_CACHE_HOME=" + home + "/cache " REPRISE_CLI_PATH " demo " + args);
}

// One row of a request's table.
struct Row {
  double ttft_ms = 0;
  int prefix = 0, reused = 0, recomputed = 0, fresh = 0;
  std::string chunks;  // "mem / flash" or "-"
  std::string top1;    // ref, same, DIFF
};

// request number -> method -> row, parsed from the tables.
using Tables = std::map<int, std::map<std::string, Row>>;

Tables ParseTables(const std::string& out) {
  Tables tables;
  const std::regex header(R"(^\[(\d+)\] .* — (\d+) prompt tokens$)");
  const std::regex row(
      R"(^    (none|prefix|blend) +([0-9.]+) +[0-9.]+x +(\d+) +(\d+) +(\d+) +(\d+) +(-|\d+ / \d+) +(ref|same|DIFF) .*$)");
  std::istringstream in(out);
  std::string line;
  int request = 0;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_match(line, m, header)) {
      request = std::stoi(m[1]);
    } else if (request > 0 && std::regex_match(line, m, row)) {
      Row r;
      r.ttft_ms = std::stod(m[2]);
      r.prefix = std::stoi(m[3]);
      r.reused = std::stoi(m[4]);
      r.recomputed = std::stoi(m[5]);
      r.fresh = std::stoi(m[6]);
      r.chunks = m[7];
      r.top1 = m[8];
      tables[request][m[1]] = r;
    }
  }
  return tables;
}

// "a / b" -> {a, b}.
std::pair<int, int> Hits(const std::string& chunks) {
  int memory = -1, flash = -1;
  std::sscanf(chunks.c_str(), "%d / %d", &memory, &flash);
  return {memory, flash};
}

class DemoTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    home_ = new testing_support::TempDir();
    first_ = new Outcome(Demo("-n 24 --answer-tokens 8 --repeat 1", home_->path()));
  }
  static void TearDownTestSuite() {
    delete first_;
    delete home_;
  }
  static testing_support::TempDir* home_;
  static Outcome* first_;
};
testing_support::TempDir* DemoTest::home_ = nullptr;
Outcome* DemoTest::first_ = nullptr;

TEST_F(DemoTest, RunsOnTheKitWithoutSharedData) {
  ASSERT_EQ(first_->exit_code, 0) << first_->err << first_->out;
  const std::string& out = first_->out;
  EXPECT_NE(out.find("data/demo/stories260K.gguf"), std::string::npos) << out;
  EXPECT_NE(out.find("data/demo/tinystories-656K-f16.gguf"), std::string::npos) << out;
  // A trained model: the llama2.c sample text of stories260K.
  EXPECT_NE(out.find("Once upon a time, there was a little girl named Lily"), std::string::npos)
      << out;
  EXPECT_NE(out.find("demo: done"), std::string::npos) << out;
  EXPECT_EQ(out.find("random weights"), std::string::npos) << out;
}

TEST_F(DemoTest, PrintsTtftAndReuseForEveryMethodAndRequest) {
  ASSERT_EQ(first_->exit_code, 0) << first_->err;
  const Tables tables = ParseTables(first_->out);
  ASSERT_EQ(tables.size(), 4u) << first_->out;
  for (const auto& [request, rows] : tables) {
    ASSERT_EQ(rows.size(), 3u) << "request " << request << "\n" << first_->out;
    for (const auto& [method, row] : rows) {
      EXPECT_GT(row.ttft_ms, 0.0) << method << " in request " << request;
      EXPECT_EQ(row.top1 == "ref", method == "none");
      EXPECT_EQ(row.chunks == "-", method == "none");
    }
    const Row& none = rows.at("none");
    EXPECT_EQ(none.prefix + none.reused + none.recomputed, 0) << "none computes everything";
    // Every method accounts for the same prompt.
    const int total = none.fresh;
    for (const auto& [method, row] : rows) {
      EXPECT_EQ(row.prefix + row.reused + row.recomputed + row.fresh, total)
          << method << " in request " << request;
    }
    // Prefix reuse is exact: its answer is the full prefill's.
    EXPECT_EQ(rows.at("prefix").top1, "same") << "request " << request;
  }
  // Request 1: nothing was cached, so nothing but BOS can be reused.
  EXPECT_EQ(tables.at(1).at("blend").reused + tables.at(1).at("blend").recomputed, 0);
  // Request 2: the same documents in another order: blend reuses them, prefix cannot.
  const Row& blend2 = tables.at(2).at("blend");
  EXPECT_GT(blend2.reused, 0) << first_->out;
  EXPECT_GT(blend2.reused + blend2.recomputed, tables.at(2).at("none").fresh / 2) << first_->out;
  EXPECT_EQ(tables.at(2).at("prefix").reused, 0);
  EXPECT_GT(Hits(blend2.chunks).first, 0) << "chunks from memory before the restart";
  EXPECT_EQ(Hits(blend2.chunks).second, 0) << "nothing from flash before the restart";
  // Request 3: a follow-up in the same chat: a long exact prefix.
  EXPECT_GT(tables.at(3).at("prefix").prefix, tables.at(3).at("none").fresh / 2) << first_->out;
}

TEST_F(DemoTest, ChunksComeBackFromFlashAfterTheRestart) {
  ASSERT_EQ(first_->exit_code, 0) << first_->err;
  const Tables tables = ParseTables(first_->out);
  ASSERT_TRUE(tables.count(4)) << first_->out;
  EXPECT_NE(first_->out.find("== 3. Restart"), std::string::npos);
  const Row& blend4 = tables.at(4).at("blend");
  EXPECT_GT(Hits(blend4.chunks).second, 0) << first_->out;
  EXPECT_GT(blend4.reused + blend4.recomputed, 0);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      first_->out, m, std::regex(R"(after the restart: blend found (\d+) chunks on flash)")))
      << first_->out;
  EXPECT_GT(std::stoi(m[1]), 0);
}

TEST_F(DemoTest, ReportsAnswerAgreement) {
  ASSERT_EQ(first_->exit_code, 0) << first_->err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      first_->out, m,
      std::regex(
          R"(blend answers: first token equal to the full prefill's in (\d+)/(\d+) requests, whole 8-token answers in (\d+)/(\d+))")))
      << first_->out;
  // Four requests; blend's first token is the full prefill's in each, and its whole 8-token
  // answer in at least 3 (4/4 and 4/4 with the AVX-512, AVX2 and scalar kernels alike).
  EXPECT_EQ(std::stoi(m[2]), 4);
  EXPECT_EQ(std::stoi(m[4]), 4);
  EXPECT_EQ(std::stoi(m[1]), 4) << first_->out;
  EXPECT_GE(std::stoi(m[3]), 3) << first_->out;
  EXPECT_NE(first_->out.find("answer (full prefill, greedy): "), std::string::npos);
}

TEST_F(DemoTest, RerunsGiveTheSameCounts) {
  ASSERT_EQ(first_->exit_code, 0) << first_->err;
  const Outcome again = Demo("-n 24 --answer-tokens 8 --repeat 1", home_->path());
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const Tables a = ParseTables(first_->out), b = ParseTables(again.out);
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [request, rows] : a) {
    for (const auto& [method, row] : rows) {
      const Row& other = b.at(request).at(method);
      EXPECT_EQ(row.prefix, other.prefix) << method << " " << request;
      EXPECT_EQ(row.reused, other.reused) << method << " " << request;
      EXPECT_EQ(row.recomputed, other.recomputed) << method << " " << request;
      EXPECT_EQ(row.fresh, other.fresh) << method << " " << request;
      EXPECT_EQ(row.chunks, other.chunks) << method << " " << request;
    }
  }
}

TEST(DemoOwnModelTest, RandomWeightModelSaysItsTextIsNoise) {
  testing_support::TempDir home;
  const std::string model = home.path() + "/tiny.gguf";
  ASSERT_EQ(std::system((REPRISE_CLI_PATH " make-model --shape tiny --type q8_0 -o " + model +
                         " >/dev/null")
                            .c_str()),
            0);
  const Outcome o = Demo("--model " + model + " -n 4 --answer-tokens 4", home.path());
  ASSERT_EQ(o.exit_code, 0) << o.err << o.out;
  EXPECT_NE(o.out.find("random weights"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("the timings and reuse counts below are real"), std::string::npos);
  const Tables tables = ParseTables(o.out);
  ASSERT_EQ(tables.size(), 4u) << o.out;
  // On a 2-layer model blend may recompute every reused token (nothing is left to skip), but
  // it still finds the documents in the cache.
  EXPECT_GT(tables.at(2).at("blend").reused + tables.at(2).at("blend").recomputed, 0) << o.out;
}

TEST(DemoOwnDocumentsTest, RunsTheSessionOnTheGivenFiles) {
  testing_support::TempDir home;
  const std::vector<std::pair<std::string, std::string>> files = {
      {"lighthouse.txt", "The lighthouse stands on the northern cliff.\nIt was built in 1902.\n"},
      {"harbour.txt", "The harbour has two piers.\nFishing boats leave at dawn.\n"},
      {"bakery.txt", "The village bakery opens at six.\nIt sells bread and buns.\n"}};
  std::string args = "-n 4 --answer-tokens 4 --repeat 1 --ask 'When was the lighthouse built?'";
  for (const auto& [name, text] : files) {
    std::ofstream(home.path() + "/" + name) << text;
    args += " --doc " + home.path() + "/" + name;
  }
  const Outcome o = Demo(args, home.path());
  ASSERT_EQ(o.exit_code, 0) << o.err << o.out;
  EXPECT_NE(o.out.find("Documents: \"lighthouse.txt\" \"harbour.txt\" \"bakery.txt\""),
            std::string::npos)
      << o.out;
  const Tables tables = ParseTables(o.out);
  ASSERT_EQ(tables.size(), 4u) << o.out;
  EXPECT_GT(tables.at(2).at("blend").reused + tables.at(2).at("blend").recomputed, 0) << o.out;
  const Outcome one = Demo("--doc " + home.path() + "/bakery.txt", home.path());
  EXPECT_EQ(one.exit_code, 2);
  EXPECT_NE(one.err.find("--doc: give 2 to 4 files"), std::string::npos) << one.err;
}

TEST(DemoStoreTest, AGivenStoreKeepsItsOtherNamespaces) {
  testing_support::TempDir home;
  const std::string store = home.path() + "/store";
  const std::string run = std::string(REPRISE_CLI_PATH) +
                          " run -m " REPRISE_SOURCE_DIR
                          "/data/demo/stories260K.gguf -p 'The keeper climbed the stairs.' -n 2 "
                          "--store-dir " +
                          store + " --namespace keep >/dev/null";
  ASSERT_EQ(std::system(run.c_str()), 0);
  const Outcome o = Demo("-n 2 --answer-tokens 2 --repeat 1 --store-dir " + store, home.path());
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("Store " + store + ", namespaces demo-prefix and demo-blend"),
            std::string::npos)
      << o.out;
  const std::string listed = home.path() + "/listed";
  const std::string ls =
      std::string(REPRISE_CLI_PATH) + " cache ls --store " + store + " --namespace keep >" + listed;
  ASSERT_EQ(std::system(ls.c_str()), 0);
  EXPECT_NE(testing_support::ReadWholeFile(listed).find("keep "), std::string::npos) << testing_support::ReadWholeFile(listed);
}

TEST(DemoErrorsTest, AKitFolderWithoutTheKitIsAClearError) {
  testing_support::TempDir home;
  const Outcome o = Demo("--kit " + home.path(), home.path());
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.err.find("demo kit"), std::string::npos) << o.err;
  EXPECT_TRUE(o.out.empty()) << o.out;
}

}  // namespace
}  // namespace reprise
