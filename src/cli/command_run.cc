// `reprise run`: streams a model's continuation of a prompt (or its chat reply) to stdout.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "cli/command.h"
#include "cli/commands.h"
#include "cli/int8_flags.h"
#include "cli/option_checks.h"
#include "cli/out_of_order_flags.h"
#include "cli/remote_flags.h"
#include "cli/paths.h"
#include "reprise/engine.h"

namespace reprise::cli {
namespace {

class RunCommand : public Command {
 public:
  CLI::App* Register(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand("run", "Generate text from a prompt, streaming to stdout");
    sub->add_option("-m,--model", options_.model_path, "GGUF model file")->required();
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
    sub->add_option("-c,--context", options_.context_tokens,
                    "Context size in tokens (0 = the model's, at most 4096)")
        ->default_val(0)
        ->check(IntegerIn(0, 1 << 20));
    sub->add_option("-t,--threads", options_.num_threads, "Threads (0 = all cores)")
        ->default_val(0)
        ->check(IntegerIn(0, kMaxThreads));
    sub->add_flag("--reference", options_.use_reference,
                  "Use the plain float reference forward pass (slow)");
    sub->add_flag("--stats", stats_, "Print timing to stderr at the end");
    sub->add_option("--reuse", reuse_name_, "KV reuse across requests: none, prefix, full, blend")
        ->default_val("prefix")
        ->check(CLI::IsMember({"none", "prefix", "full", "blend"}));
    sub->add_option("--ratio", options_.recompute_ratio, "Recompute ratio r for blend")
        ->default_val(0.25)
        ->check(FiniteIn(0.0001, 1.0));
    sub->add_option("--adaptive", options_.recompute_min_deviation,
                    "Adaptive recompute for blend: of the r share, recompute only tokens whose "
                    "relative K deviation at the check layer is at least this (0 = off)")
        ->default_val(0.0)
        ->check(FiniteIn(0.0, 1.0));
    sub->add_option(
           "--adaptive-stable", options_.stable_recompute_min_deviation,
           "Stable context for blend: when the prompt is a cached one with a block cut out "
           "(a chat whose window moved), its reused tokens far from the cut keep their "
           "KV but for a repair call that recomputes those whose relative K deviation "
           "is at least this (0 = off)")
        ->default_val(kDefaultStableRecomputeMinDeviation)
        ->check(FiniteIn(0.0, 1.0));
    sub->add_option("--guard", options_.quality_guard,
                    "Quality guard for blend: prefill a recompute call in full when its reused "
                    "tokens deviate more than this at the check layer; 0 = off; auto = the "
                    "model's threshold, measured once on a built-in text and kept with the "
                    "calibrations")
        ->default_str("auto")
        ->transform(GuardThreshold());
    sub->add_option(
           "--selection", selection_name_,
           "Which reused tokens blend recomputes: deviation (whose KV deviates most at the "
           "check layer), attention (those the prompt's last new tokens attend to most "
           "there, measured by a probe) or attention-deviation (their product)")
        ->default_val(TokenSelectionName(options_.token_selection))
        ->check(CLI::IsMember({"deviation", "attention", "attention-deviation"}));
    int8_.Register(*sub);
    out_of_order_.Register(*sub);
    sub->add_flag("--static-shapes", options_.static_shapes,
                  "Every graph call computes its full capacity, padding included, as an NPU "
                  "or another ahead-of-time backend must (same output, the static cost)");
    sub->add_flag("--store", use_store_,
                  "Keep KV caches on flash across runs, in the default store folder "
                  "(<cache folder>/store; the cache folder is $XDG_CACHE_HOME/reprise or "
                  "~/.cache/reprise)");
    sub->add_option("--store-dir", options_.store_dir, "Keep KV caches in this folder")
        ->check(NonEmptyFolder());
    sub->add_option("--namespace", options_.name_space, "Store namespace (one per app)")
        ->default_val("default")
        ->check(NewNamespaceName());
    sub->add_option("--pool-mb", options_.cache_mb, "Memory for cached KV, MiB")
        ->default_val(1024)
        ->check(BudgetMib());
    sub->add_option("--disk-mb", options_.store_disk_mb, "Flash budget of the store, MiB")
        ->default_val(8192)
        ->check(BudgetMib());
    sub->add_option("--admit-after", options_.store_admit_after,
                    "Write a chunk to flash once its text was seen in N prompts (system, document, "
                    "skill and tool segments at once); 1 = every chunk")
        ->default_val(options_.store_admit_after)
        ->check(CLI::Range(1, 1000));
    sub->add_option("--codec", codec_name_, "Stored KV codec: f16 or int8")
        ->default_val("f16")
        ->check(CLI::IsMember({"f16", "int8"}));
    remote_.Register(*sub);
    return sub;
  }

  int Run() override {
    if (Status read = ReadInputs(); !read.ok()) return PrintError("run", read);
    Result<ReuseMethod> reuse = ParseReuseMethod(reuse_name_);
    if (!reuse.ok()) return PrintError("run", reuse.error());
    options_.reuse = *reuse;
    Result<KvCodec> codec = ParseKvCodec(codec_name_);
    if (!codec.ok()) return PrintError("run", codec.error());
    Result<TokenSelection> selection = ParseTokenSelection(selection_name_);
    if (!selection.ok()) return PrintError("run", selection.error());
    options_.token_selection = *selection;
    options_.store_codec = *codec;
    options_.int8_scheme = int8_.scheme();
    options_.outlier_fraction = int8_.outlier_fraction;
    options_.out_of_order_groups = out_of_order_.groups;
    options_.out_of_order_window = out_of_order_.window;
    remote_.Apply(options_);
    Result<std::string> cache_dir = FindCacheDir();
    if (use_store_ && options_.store_dir.empty()) {
      if (!cache_dir.ok()) return PrintError("run", cache_dir.error());
      options_.store_dir = *cache_dir + "/store";
    }
    // Without a cache folder there are no saved calibrations to look for: "" = do not look.
    if (options_.calibration_dir.empty() && cache_dir.ok()) options_.calibration_dir = *cache_dir;
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

  EngineOptions options_;
  Int8Flags int8_;
  OutOfOrderFlags out_of_order_;
  RemoteFlags remote_;
  std::string reuse_name_ = "prefix", codec_name_ = "f16";
  std::string selection_name_;
  GenerateRequest request_;
  std::string prompt_file_;
  std::vector<std::string> doc_paths_;
  std::string system_;
  bool stats_ = false;
  bool use_store_ = false;
};

}  // namespace

std::unique_ptr<Command> NewRunCommand() { return std::make_unique<RunCommand>(); }

}  // namespace reprise::cli
