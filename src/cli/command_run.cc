// `reprise run`: streams a model's continuation of a prompt (or its chat reply) to stdout.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "cli/command.h"
#include "cli/commands.h"
#include "cli/engine_flags.h"
#include "cli/option_checks.h"
#include "reprise/engine.h"

namespace reprise::cli {
namespace {

class RunCommand : public Command {
 public:
  CLI::App* Register(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand("run", "Generate text from a prompt, streaming to stdout");
    engine_flags_.Register(*sub, kRequestEngineFlags);
    // Exactly one source of the prompt.
    CLI::Option_group* prompt = sub->add_option_group("prompt", "The prompt (one of)");
    prompt->add_option("-p,--prompt", request_.prompt, "Prompt text");
    prompt->add_option("--prompt-file", prompt_file_, "Read the prompt from a file (- = stdin)")
        ->type_name("FILE");
    prompt->require_option(1);
    sub->add_option("--doc", doc_paths_,
                    "A document to put before the prompt, its KV reused wherever it appears "
                    "(repeatable; its id is the file name)")
        ->type_name("FILE");
    sub->add_option("--system", system_,
                    "A system message (formats the prompt with the chat template, as --chat)");
    sub->add_option("-n,--max-tokens", request_.max_new_tokens, "Tokens to generate")
        ->default_val(128)
        ->check(IntegerIn(0, 1 << 20));
    sub->add_option("--temp", request_.temperature, "Sampling temperature (0 = greedy)")
        ->default_val(0.0f)
        ->check(FiniteIn(0.0, 100.0));
    sub->add_option("--top-k", request_.top_k, "Keep the k most likely tokens (0 = all)")
        ->default_val(40)
        ->check(IntegerIn(0, 1 << 24));
    // The sampler's range: top-p 0 would keep no token.
    sub->add_option("--top-p", request_.top_p, "Nucleus sampling mass, in (0, 1]")
        ->default_val(0.95f)
        ->check(FiniteAbove(0.0, 1.0));
    sub->add_option("--seed", request_.seed, "Random seed")->default_val(0);
    sub->add_flag("--chat", request_.chat, "Format the prompt with the model's chat template");
    sub->add_flag("--reference", options_.use_reference,
                  "Use the plain float reference forward pass (slow)");
    sub->add_flag("--stats", stats_, "Print timing to stderr at the end");
    return sub;
  }

  int Run() override {
    if (Status read = ReadInputs(); !read.ok()) return PrintError("run", read);
    if (Status resolved = engine_flags_.Resolve(); !resolved.ok()) {
      return PrintError("run", resolved);
    }
    Result<std::unique_ptr<Engine>> engine = Engine::Create(options_);
    if (!engine.ok()) return PrintError("run", engine.error());
    // The prompt is echoed once the model has taken it (with the first token), so that a
    // rejected prompt leaves nothing on stdout.
    bool echoed = request_.chat;
    auto echo_prompt = [&] {
      if (echoed) return;
      echoed = true;
      std::fwrite(request_.prompt.data(), 1, request_.prompt.size(), stdout);
    };
    Result<GenerateResult> result = (*engine)->Generate(request_, [&](std::string_view text) {
      echo_prompt();
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
      return true;
    });
    if (!result.ok()) return PrintError("run", result.error());
    echo_prompt();
    std::printf("\n");
    std::fflush(stdout);
    if (stats_) {
      std::fprintf(stderr,
                   "[%s]\nprompt %zu tokens, TTFT %.1f ms; generated %zu tokens at %.1f tok/s; "
                   "stop: %s\n",
                   (*engine)->Describe().c_str(), result->prompt_tokens.size(), result->ttft_ms,
                   result->generated_tokens.size(), result->decode_tokens_per_second,
                   result->stop_reason.c_str());
      std::fprintf(stderr,
                   "prompt KV: %d prefix-reused, %d reused at new positions, %d "
                   "recomputed, %d new\n",
                   result->reuse.tokens_prefix, result->reuse.tokens_reused,
                   result->reuse.tokens_recomputed, result->reuse.tokens_new);
      const std::string store = (*engine)->DescribeStore();
      if (!store.empty()) std::fprintf(stderr, "%s\n", store.c_str());
    }
    return kExitOk;
  }

 private:
  // The prompt file and the documents into the request; --system makes it a chat. Errors:
  // NotFound, IoError (naming the file).
  Status ReadInputs() {
    if (!prompt_file_.empty()) {
      REPRISE_ASSIGN_OR_RETURN(request_.prompt,
                               ReadFileToString(prompt_file_ == "-" ? "/dev/stdin" : prompt_file_));
    }
    for (const std::string& path : doc_paths_) {
      REPRISE_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
      request_.documents.push_back(
          Document{std::filesystem::path(path).filename().string(), std::move(text)});
    }
    if (!system_.empty()) {
      request_.messages = {{"system", system_}, {"user", request_.prompt}};
      request_.chat = true;
    }
    return Status::Ok();
  }

  EngineFlags engine_flags_;
  EngineOptions& options_ = engine_flags_.options();
  GenerateRequest request_;
  std::string prompt_file_;
  std::vector<std::string> doc_paths_;
  std::string system_;
  bool stats_ = false;
};

}  // namespace

std::unique_ptr<Command> NewRunCommand() { return std::make_unique<RunCommand>(); }

}  // namespace reprise::cli
