// End-to-end tests of progress on long work: with stderr in a file (not a terminal) the
// program prints plain progress lines, never a redrawn bar; with --json it prints none.
#include <gtest/gtest.h>

#include <string>

#include "support/shell_command.h"
#include "support/temp_dir.h"

namespace reprise {
namespace {

using testing_support::ShellOutcome;

ShellOutcome Reprise(const std::string& args) {
  return testing_support::RunShell(REPRISE_CLI_PATH " " + args);
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class ProgressTest : public ::testing::Test {
 protected:
  testing_support::TempDir dir_;
};

TEST_F(ProgressTest, MakeModelPrintsPlainLinesWhenStderrIsAFile) {
  const ShellOutcome o =
      Reprise("make-model --shape tiny --layers 3 -o " + dir_.path() + "/m.gguf");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_TRUE(Contains(o.err, "making weights: 0/3 layers (0%)")) << o.err;
  EXPECT_TRUE(Contains(o.err, "making weights: 3/3 layers (100%)")) << o.err;
  EXPECT_TRUE(Contains(o.err, "writing the file: 1/1 files (100%)")) << o.err;
  EXPECT_FALSE(Contains(o.err, "\r")) << "no bar when stderr is not a terminal";
  EXPECT_FALSE(Contains(o.out, "making weights")) << "progress stays off stdout";
}

TEST_F(ProgressTest, BenchPrintsLinesAndNothingWithJson) {
  const std::string model = dir_.path() + "/m.gguf";
  ASSERT_EQ(Reprise("make-model --shape tiny -o " + model).exit_code, 0);
  const std::string bench = "bench prefill -m " + model + " --lengths 16,32 -r 2 -t 1";
  const ShellOutcome text = Reprise(bench);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(Contains(text.err, "measuring: 0/6 runs (0%)")) << text.err;
  EXPECT_TRUE(Contains(text.err, "measuring: 6/6 runs (100%)")) << text.err;
  EXPECT_FALSE(Contains(text.err, "\r")) << text.err;

  const ShellOutcome json = Reprise(bench + " --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(json.err, "") << "--json prints no progress";
  EXPECT_EQ(json.out.front(), '{') << json.out;
}

}  // namespace
}  // namespace reprise
