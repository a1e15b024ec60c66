// `reprise convert`: imports llama2.c and Hugging Face checkpoints into GGUF.
#include <cstdio>

#include "cli/command.h"
#include "cli/commands.h"
#include "cli/progress_bar.h"
#include "convert/hf_importer.h"
#include "convert/llama2c_importer.h"

namespace reprise::cli {
namespace {

class ConvertCommand : public Command {
 public:
  CLI::App* Register(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand(
        "convert", "Import a llama2.c or Hugging Face checkpoint into a GGUF file");
    auto* llama2c = sub->add_option("--llama2c", llama2c_, "llama2.c model checkpoint (.bin)")
                        ->check(CLI::ExistingFile);
    sub->add_option("--tokenizer", tokenizer_, "llama2.c tokenizer (.bin), with --llama2c")
        ->check(CLI::ExistingFile)
        ->needs(llama2c);
    auto* hf = sub->add_option("--hf", hf_dir_,
                               "Hugging Face folder (config.json, *.safetensors, tokenizer.json)")
                   ->check(CLI::ExistingDirectory);
    llama2c->excludes(hf);
    sub->add_option("--type", type_,
                    "Weight type: auto (keep the source type), f32, f16, bf16, q8_0, q4_0")
        ->check(CLI::IsMember({"auto", "f32", "f16", "bf16", "q8_0", "q4_0"}))
        ->default_val("auto");
    sub->add_option("-o,--output", output_, "Output GGUF file")->required();
    return sub;
  }

  int Run() override {
    std::optional<DType> type;
    if (type_ != "auto") type = *ParseDTypeName(type_);
    Result<convert::ImportSummary> summary = InvalidArgumentError("give --llama2c or --hf");
    ProgressBar progress(ProgressBar::ForStderr(/*json=*/false));
    if (!llama2c_.empty()) {
      if (tokenizer_.empty()) {
        return PrintError("convert", InvalidArgumentError("--llama2c needs --tokenizer"));
      }
      summary = convert::ImportLlama2c(llama2c_, tokenizer_, output_,
                                       convert::Llama2cImportOptions{type, progress.Callback()});
    } else if (!hf_dir_.empty()) {
      summary = convert::ImportHfModel(hf_dir_, output_,
                                       convert::HfImportOptions{type, progress.Callback()});
    }
    progress.Finish();
    if (!summary.ok()) return PrintError("convert", summary.error());
    std::printf("wrote %s: %s, %d tensors, vocab %d, %.2f MiB\n", output_.c_str(),
                summary->architecture.c_str(), summary->num_tensors, summary->vocab_size,
                summary->file_bytes / 1048576.0);
    return kExitOk;
  }

 private:
  std::string llama2c_, tokenizer_, hf_dir_, type_ = "auto", output_;
};

}  // namespace

std::unique_ptr<Command> NewConvertCommand() { return std::make_unique<ConvertCommand>(); }

}  // namespace reprise::cli
