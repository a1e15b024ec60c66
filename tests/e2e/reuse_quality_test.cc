// Reuse quality in CI: `reprise bench reuse` on the demo kit alone (trained stories260K, the
// kit's 30 HotpotQA questions as docqa-shuffled: 12 documents recurring in new orders), as on
// a fresh clone. Blend must stay close to the full prefill and clearly closer than reuse
// without recompute (`full`), so that a regression of blend's selection, placement or guard
// fails CI. Deterministic: the same bits on every run of a machine (measured on AVX-512, AVX2
// and the scalar kernels: blend KL 0.0215, full 0.0869, top-1 0.92 / 0.88).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "support/shell_command.h"
#include "support/temp_dir.h"

namespace reprise {
namespace {

TEST(ReuseQualityTest, BlendStaysNearTheFullPrefillAndFullDoesNot) {
  testing_support::TempDir empty;  // no shared data: the kit is enough
  const testing_support::ShellOutcome o = testing_support::RunShell(
      "cd " REPRISE_SOURCE_DIR " && env REPRISE_DATA_DIR=" + empty.path() +
      " " REPRISE_CLI_PATH
      " bench reuse -m data/demo/stories260K.gguf --workload docqa-shuffled "
      "--docqa-file data/demo/hotpotqa_demo_30.jsonl --queries 24 --methods none,full,blend "
      "-t 2 --json");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const nlohmann::json j = nlohmann::json::parse(o.out);
  ASSERT_EQ(j["queries"].get<int>(), 24);
  const nlohmann::json& none = j["methods"]["none"];
  const nlohmann::json& full = j["methods"]["full"];
  const nlohmann::json& blend = j["methods"]["blend"];
  const double blend_kl = blend["kl_mean"].get<double>();
  const double full_kl = full["kl_mean"].get<double>();
  // The documents recur: most of every prompt after the first is found in the cache.
  const int64_t found =
      blend["tokens_nonprefix"].get<int64_t>() + blend["tokens_recomputed"].get<int64_t>();
  EXPECT_EQ(found, full["tokens_nonprefix"].get<int64_t>());
  EXPECT_GT(2 * found, none["tokens_new"].get<int64_t>());
  EXPECT_GT(blend["tokens_recomputed"].get<int64_t>(), 0);
  // ... and most of it is kept, not recomputed (a guard that always fell back, or a selection
  // that took everything, would be as close to the prefill and no faster).
  EXPECT_GT(2 * blend["tokens_nonprefix"].get<int64_t>(), found);
  // Quality: blend near the full prefill, full (what a KV shift or Prompt Cache does) not.
  EXPECT_LT(blend_kl, 0.035) << o.out;
  EXPECT_GT(full_kl, 0.05) << o.out;
  EXPECT_LT(2.5 * blend_kl, full_kl) << o.out;
  EXPECT_GE(blend["top1_agreement"].get<double>(), 0.85) << o.out;
}

}  // namespace
}  // namespace reprise
