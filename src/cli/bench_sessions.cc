#include "cli/bench_sessions.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

#include "base/memory_usage.h"
#include "cli/command.h"
#include "cli/json_output.h"
#include "cli/option_checks.h"
#include "reprise/engine.h"

namespace reprise::cli {

void BenchSessions::Register(CLI::App& bench) {
  sub_ = bench.add_subcommand(
      "sessions", "Memory of N sessions of one engine vs N engines (resident set growth)");
  sub_->add_option("-m,--model", model_path_, "GGUF model file")->required();
  sub_->add_option("-t,--threads", threads_, "Threads (0 = all cores)")
      ->default_val(0)
      ->check(IntegerIn(0, kMaxThreads));
  sub_->add_option("-c,--context", context_, "Context of each session in tokens (0 = model's)")
      ->default_val(0)
      ->check(IntegerIn(0, 1 << 20));
  sub_->add_option("-n,--sessions", sessions_, "Sessions (and engines) to add, 1..64")
      ->default_val(4)
      ->check(IntegerIn(1, 64));
  sub_->add_option("-p,--prompt-tokens", prompt_tokens_,
                   "Prompt length of each request (0 = fill the context, so that the whole KV "
                   "cache is resident)")
      ->default_val(0)
      ->check(IntegerIn(0, 1 << 20));
  sub_->add_flag("--json", json_, "Print the figures as JSON");
}

int BenchSessions::Run() {
  EngineOptions options;
  options.model_path = model_path_;
  options.num_threads = threads_;
  options.context_tokens = context_;
  options.reuse = ReuseMethod::kPrefix;
  options.cache_mb = 64;
  GenerateRequest request;
  request.max_new_tokens = 4;
  // Each new session or engine runs one request of about --prompt-tokens tokens, so that as
  // much of its KV cache and arenas is resident as a request that long makes: pages of the
  // KV cache past it are reserved, not resident, so only a request that fills the context
  // (the default) measures what a session costs once it is used in full.
  auto run = [&](auto& target) -> Status {
    Result<GenerateResult> r = target.Generate(request);
    return r.ok() ? Status::Ok() : r.error();
  };

  const double start_mb = CurrentRssMb();
  Result<std::unique_ptr<Engine>> engine = Engine::Create(options);
  if (!engine.ok()) return PrintError("bench sessions", engine.error());
  const std::string sentence = "Once upon a time, there was a little girl who liked to read. ";
  // Room for the reply's tokens; the prompt and reply then fill the context.
  const int full = (*engine)->context_tokens() - request.max_new_tokens - 1;
  const int prompt_tokens = prompt_tokens_ > 0 ? std::min(prompt_tokens_, full) : full;
  // Whole sentences up to the length (tokenized once per sentence count, doubling then
  // halving, so a long context costs a few dozen tokenizer calls, not thousands), then single
  // words up to it.
  const auto tokens_in = [&](const std::string& text) {
    return static_cast<int>((*engine)->Tokenize(text, true, false).size());
  };
  const auto tokens_of = [&](int count) {
    std::string text;
    for (int i = 0; i < count; ++i) text += sentence;
    return tokens_in(text);
  };
  int low = 1, high = 1;  // tokens_of(low) fits (or low is 1); tokens_of(high) does not
  while (tokens_of(high) <= prompt_tokens) high *= 2;
  low = high / 2 > 0 ? high / 2 : 1;
  while (high - low > 1) {
    const int middle = (low + high) / 2;
    (tokens_of(middle) <= prompt_tokens ? low : high) = middle;
  }
  for (int i = 0; i < low; ++i) request.prompt += sentence;
  while (tokens_in(request.prompt + " a") <= prompt_tokens) request.prompt += " a";
  const int used_tokens = tokens_in(request.prompt);
  if (Status s = run(**engine); !s.ok()) return PrintError("bench sessions", s);
  const double first_mb = CurrentRssMb();

  std::vector<std::unique_ptr<Session>> sessions;
  for (int i = 0; i < sessions_; ++i) {
    Result<std::unique_ptr<Session>> s = (*engine)->OpenSession({});
    if (!s.ok()) return PrintError("bench sessions", s.error());
    if (Status st = run(**s); !st.ok()) return PrintError("bench sessions", st);
    sessions.push_back(std::move(s).value());
  }
  const double sessions_mb = CurrentRssMb();

  // The baseline: as many more engines, each loading and compiling the model again.
  std::vector<std::unique_ptr<Engine>> engines;
  for (int i = 0; i < sessions_; ++i) {
    Result<std::unique_ptr<Engine>> e = Engine::Create(options);
    if (!e.ok()) return PrintError("bench sessions", e.error());
    if (Status st = run(**e); !st.ok()) return PrintError("bench sessions", st);
    engines.push_back(std::move(e).value());
  }
  const double engines_mb = CurrentRssMb();

  const double per_session = (sessions_mb - first_mb) / sessions_;
  const double per_engine = (engines_mb - sessions_mb) / sessions_;
  if (json_) {
    nlohmann::json j = {{"model", model_path_},
                        {"context_tokens", (*engine)->context_tokens()},
                        {"added", sessions_},
                        {"prompt_tokens", used_tokens},
                        {"tokens_per_request", used_tokens + request.max_new_tokens},
                        {"first_engine_mb", first_mb - start_mb},
                        {"per_session_mb", per_session},
                        {"per_engine_mb", per_engine},
                        {"peak_rss_mb", PeakRssMb()}};
    std::printf("%s\n", DumpJson(j).c_str());
    return kExitOk;
  }
  std::printf(
      "%s\nresident set growth, each after one request of %d prompt + %d generated tokens in "
      "its %d-token context:\n",
      (*engine)->Describe().c_str(), used_tokens, request.max_new_tokens,
      (*engine)->context_tokens());
  std::printf("first engine (load, pack, compile, one session): %8.1f MiB\n", first_mb - start_mb);
  std::printf("each further session of it:                       %8.1f MiB\n", per_session);
  std::printf("each further engine (baseline, a second load):    %8.1f MiB\n", per_engine);
  std::printf("a session costs %.2fx less than an engine; peak RSS %.1f MiB\n",
              per_session > 0 ? per_engine / per_session : 0.0, PeakRssMb());
  return kExitOk;
}

}  // namespace reprise::cli
