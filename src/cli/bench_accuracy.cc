#include "cli/bench_accuracy.h"

#include <cstdio>

#include "base/file_util.h"
#include "cli/command.h"
#include "cli/option_checks.h"
#include "cli/paths.h"
#include "engine/compiled_model.h"

namespace reprise::cli {

void BenchAccuracy::Register(CLI::App& bench) {
  sub_ = bench.add_subcommand("accuracy",
                              "Next-token KL, top-1 and continuation agreement of the compiled "
                              "graphs against the float reference forward");
  sub_->add_option("-m,--model", options_.model_path, "GGUF model file (the engine runs it)")
      ->required();
  sub_->add_option("--reference", options_.reference_path,
                   "GGUF file the float reference runs (default: the same file; give the F32 "
                   "original of a quantized file to measure the quantization as a whole)");
  sub_->add_option("--text", text_path_, "Text file to run (default: a built-in sample)")
      ->check(CLI::ExistingFile);
  sub_->add_option("--tokens", options_.max_tokens, "Tokens of the text to run, at most")
      ->default_val(256)
      ->check(IntegerIn(2, 1 << 16));
  sub_->add_option("--step", options_.step, "Tokens per step; one scored position per step")
      ->default_val(8)
      ->check(IntegerIn(1, 4096));
  sub_->add_option("--continuation", options_.continuation_tokens,
                   "Greedy continuation compared after the text")
      ->default_val(32)
      ->check(IntegerIn(1, 4096));
  sub_->add_option("-t,--threads", options_.num_threads, "Threads (0 = all cores)")
      ->default_val(0)
      ->check(IntegerIn(0, kMaxThreads));
  sub_->add_option("--pack", pack_format_,
                   "Repack every weight matrix into this format first (e.g. q8_0x8 to run an "
                   "F32 model through the per-block int8 path)")
      ->check(CLI::IsMember({"q8_0x8", "q4_0x8", "f16x8", "f32x8"}));
  int8_flags_.Register(*sub_, kInt8Flags);
  sub_->add_flag("--json", json_, "Print JSON");
}

int BenchAccuracy::Run() {
  if (!text_path_.empty()) {
    Result<std::string> text = ReadFileToString(text_path_);
    if (!text.ok()) return PrintError("bench accuracy", text.error());
    options_.text = std::move(*text);
  }
  if (!pack_format_.empty()) options_.weight_format = *ParseWeightFormat(pack_format_);  // checked
  options_.int8_scheme = int8_flags_.options().int8_scheme;
  options_.outlier_fraction = int8_flags_.options().outlier_fraction;
  // Without a cache folder there is no stored activation calibration: "" = measure it.
  Result<std::string> cache_dir = FindCacheDir();
  options_.calibration_dir = cache_dir.ok() ? *cache_dir : std::string();
  Result<tools::AccuracyBenchResult> result = tools::RunAccuracyBench(options_);
  if (!result.ok()) return PrintError("bench accuracy", result.error());
  std::fputs((json_ ? result->ToJson() + "\n" : result->ToText()).c_str(), stdout);
  return kExitOk;
}

}  // namespace reprise::cli
