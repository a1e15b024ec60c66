// `reprise inspect`: what a GGUF model file holds.
#include <cstdio>

#include "cli/command.h"
#include "cli/commands.h"
#include "tools/model_inspector.h"

namespace reprise::cli {
namespace {

class InspectCommand : public Command {
 public:
  CLI::App* Register(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand(
        "inspect", "Show a GGUF model's architecture, hyper-parameters, tensors and tokenizer");
    sub->add_option("file", path_, "GGUF model file")->required();
    sub->add_flag("--json", json_, "Print JSON");
    return sub;
  }

  int Run() override {
    Result<tools::ModelReport> report = tools::InspectModel(path_);
    if (!report.ok()) return PrintError("inspect", report.error());
    std::string text = json_ ? report->ToJson() + "\n" : report->ToText();
    std::fwrite(text.data(), 1, text.size(), stdout);
    return kExitOk;
  }

 private:
  std::string path_;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> NewInspectCommand() { return std::make_unique<InspectCommand>(); }

}  // namespace reprise::cli
