// `reprise demo`: the README's main job — runs end to end on a built-in default model and
// says what it did. With ../shared/data present it uses the two small trained TinyStories
// models (importing the Hugging Face one on first use); without it, it makes the `tiny` shape.
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "cli/command.h"
#include "cli/commands.h"
#include "cli/paths.h"
#include "convert/hf_importer.h"
#include "convert/model_maker.h"
#include "engine/reuse_bench.h"
#include "reprise/engine.h"

namespace reprise::cli {
namespace {

struct DemoModel {
  std::string label;
  std::string path;
};

class DemoCommand : public Command {
 public:
  CLI::App* Register(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand(
        "demo", "Run end to end on a built-in default model and say what was done");
    sub->add_option("-p,--prompt", prompt_, "Prompt")->default_val("Once upon a time");
    sub->add_option("-n,--max-tokens", max_tokens_, "Tokens to generate per model")
        ->default_val(48)
        ->check(CLI::Range(1, 4096));
    sub->add_option("--reuse-queries", queries_, "Questions in the KV reuse session")
        ->default_val(8)
        ->check(CLI::Range(1, 100));
    return sub;
  }

  int Run() override {
    std::vector<DemoModel> models;
    Status status = FindModels(models);
    if (!status.ok()) return PrintError("demo", status);
    for (const DemoModel& m : models) {
      std::printf("\n== %s\n   %s\n", m.label.c_str(), m.path.c_str());
      EngineOptions options;
      options.model_path = m.path;
      Result<std::unique_ptr<Engine>> engine = Engine::Create(options);
      if (!engine.ok()) return PrintError("demo", engine.error());
      std::printf("   %s\n\n", (*engine)->Describe().c_str());
      GenerateRequest request;
      request.prompt = prompt_;
      request.max_new_tokens = max_tokens_;
      std::printf("%s", prompt_.c_str());
      Result<GenerateResult> result = (*engine)->Generate(request, [](std::string_view text) {
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
        return true;
      });
      if (!result.ok()) return PrintError("demo", result.error());
      std::printf("\n\n   greedy, %zu prompt tokens, TTFT %.1f ms, %zu tokens generated at %.0f "
                  "tok/s (stop: %s)\n",
                  result->prompt_tokens.size(), result->ttft_ms, result->generated_tokens.size(),
                  result->decode_tokens_per_second, result->stop_reason.c_str());
    }
    const bool reused = RunReuseDemo(models.front().path);
    std::printf("\ndemo: done — loaded %zu model(s), tokenized the prompt, generated greedily "
                "with streaming output%s.\n",
                models.size(),
                reused ? ", and answered a doc-QA session with each KV reuse method" : "");
    return kExitOk;
  }

 private:
  // A short doc-QA session on the last (trained) model: a cached document library, questions
  // whose retrieved chunks reappear in new orders, TTFT and quality per reuse method.
  bool RunReuseDemo(const std::string& model_path) {
    std::optional<std::string> data = FindSharedDataDir();
    if (!data || !std::filesystem::exists(*data + "/workloads/hotpotqa")) {
      std::printf("\n== KV reuse: skipped (the HotpotQA workload is not in ../shared/data)\n");
      return false;
    }
    std::printf("\n== KV reuse: a doc-QA session (HotpotQA paragraphs, BM25 top-3; the user's "
                "documents were cached before, alone, and reappear in new orders)\n   %s\n\n",
                model_path.c_str());
    engine::ReuseBenchOptions options;
    options.model_path = model_path;
    options.data_dir = *data;
    options.workload = "docqa-distractor";
    options.num_queries = queries_;
    options.top_chunks = 3;
    options.chunk_tokens = 96;
    options.warm_retrieved_only = true;
    options.reuse.prefill_capacity = 64;
    options.reuse.recompute_capacity = 128;
    options.calibration_dir = CacheDir();
    Result<engine::ReuseBenchResult> result = engine::RunReuseBench(options);
    if (!result.ok()) {
      std::printf("   reuse demo failed: %s\n", result.error().ToString().c_str());
      return false;
    }
    std::printf("%s\n", result->ToText().c_str());
    std::printf("   none = full prefill; prefix = exact prefix reuse; full = cached chunks moved to "
                "their new positions without recompute;\n   blend = the same plus selective "
                "recompute of the most deviated tokens. KL/top1/cont compare with full prefill.\n");
    return true;
  }

  Status FindModels(std::vector<DemoModel>& models) {
    namespace fs = std::filesystem;
    const std::string cache = CacheDir();
    std::optional<std::string> data = FindSharedDataDir();
    if (data) {
      const std::string stories = *data + "/models/stories260K/stories260K.gguf";
      if (fs::exists(stories)) {
        models.push_back({"stories260K (llama2.c TinyStories, trained; GGUF from shared data)",
                          stories});
      }
      const std::string hf = *data + "/models/tinystories-656K";
      if (fs::exists(hf + "/config.json")) {
        const std::string out = cache + "/tinystories-656K.gguf";
        if (!fs::exists(out)) {
          std::printf("demo: importing the Hugging Face model %s -> %s\n", hf.c_str(),
                      out.c_str());
          Result<convert::ImportSummary> imported =
              convert::ImportHfModel(hf, out, convert::HfImportOptions{});
          if (!imported.ok()) return imported.error();
        }
        models.push_back({"TinyStories-656K (Hugging Face Llama, trained; imported to GGUF)", out});
      }
    }
    if (models.empty()) {
      const std::string out = cache + "/tiny-f16.gguf";
      if (!fs::exists(out)) {
        std::printf("demo: no trained model in ../shared/data; making the 'tiny' shape -> %s\n",
                    out.c_str());
        convert::MakeModelOptions options;
        Result<convert::MakeModelSummary> made = convert::MakeModel(options, out);
        if (!made.ok()) return made.error();
      }
      models.push_back({"tiny (random weights, synthetic vocabulary: the text is noise)", out});
    }
    return Status::Ok();
  }

  std::string prompt_ = "Once upon a time";
  int max_tokens_ = 48;
  int queries_ = 8;
};

}  // namespace

std::unique_ptr<Command> NewDemoCommand() { return std::make_unique<DemoCommand>(); }

}  // namespace reprise::cli
