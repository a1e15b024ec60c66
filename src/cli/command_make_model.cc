// `reprise make-model`: writes a GGUF file with a real architecture's shapes and random weights.
#include <cstdio>

#include "cli/command.h"
#include "cli/commands.h"
#include "cli/option_checks.h"
#include "cli/progress_bar.h"
#include "convert/model_maker.h"

namespace reprise::cli {
namespace {

class MakeModelCommand : public Command {
 public:
  CLI::App* Register(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand(
        "make-model", "Write a GGUF model with a real architecture's shapes and random weights");
    std::vector<std::string> shapes;
    for (const auto& s : convert::KnownShapes()) shapes.push_back(s.name);
    sub->add_option("--shape", options_.shape, "Architecture shape")
        ->check(CLI::IsMember(shapes))
        ->default_val("tiny");
    sub->add_option("--type", type_,
                    "Weight type: f32, f16, bf16, q8_0, q4_0, q3_k, q4_k, q5_k, q6_k, q4_k_m or "
                    "q5_k_m "
                    "(Q4_K / Q5_K with Q6_K where llama.cpp's Q4_K_M / Q5_K_M put it)")
        ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0", "q4_0", "q3_k", "q4_k", "q5_k", "q6_k",
                               "q4_k_m", "q5_k_m"}))
        ->default_val("f16");
    sub->add_option("--vocab", options_.vocab_path,
                    "tiktoken rank file (Llama 3 or Qwen); default: a synthetic vocabulary")
        ->check(CLI::ExistingFile);
    sub->add_option("--seed", options_.seed, "Random seed")->default_val(1234);
    sub->add_option("--layers", layers_, "Override the number of layers (0 = the shape's)")
        ->default_val(0)
        ->check(IntegerIn(0, convert::kMaxMadeLayers));
    sub->add_option("-o,--output", output_, "Output GGUF file")->required();
    return sub;
  }

  int Run() override {
    if (type_ == "q4_k_m" || type_ == "q5_k_m") {
      options_.weight_type = type_ == "q4_k_m" ? DType::kQ4_K : DType::kQ5_K;
      options_.k_m_mix = true;
    } else if (type_ == "q3_k" || type_ == "q4_k" || type_ == "q5_k" || type_ == "q6_k") {
      options_.weight_type = type_ == "q3_k"   ? DType::kQ3_K
                             : type_ == "q4_k" ? DType::kQ4_K
                             : type_ == "q5_k" ? DType::kQ5_K
                                               : DType::kQ6_K;
    } else {
      options_.weight_type = *ParseDTypeName(type_);
    }
    if (layers_ > 0) options_.num_layers = layers_;
    ProgressBar progress(ProgressBar::ForStderr(/*json=*/false));
    options_.progress = progress.Callback();
    Result<convert::MakeModelSummary> summary = convert::MakeModel(options_, output_);
    progress.Finish();
    if (!summary.ok()) return PrintError("make-model", summary.error());
    std::printf("wrote %s: %s shape %s, %s weights, %.1f M parameters, %.1f MiB; tokenizer: %s\n",
                output_.c_str(), summary->shape.arch.c_str(), summary->shape.name.c_str(),
                type_.c_str(), summary->num_parameters / 1e6, summary->file_bytes / 1048576.0,
                summary->vocab_description.c_str());
    return kExitOk;
  }

 private:
  convert::MakeModelOptions options_;
  std::string type_ = "f16";
  int layers_ = 0;
  std::string output_;
};

}  // namespace

std::unique_ptr<Command> NewMakeModelCommand() { return std::make_unique<MakeModelCommand>(); }

}  // namespace reprise::cli
