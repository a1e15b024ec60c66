#include "cli/bench_concurrent.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "cli/command.h"
#include "cli/json_output.h"
#include "cli/option_checks.h"
#include "reprise/engine.h"

namespace reprise::cli {
namespace {

struct RoundFigures {
  double wall_ms = 0.0;
  int64_t tokens = 0;  // generated, all clients
  double mean_ttft_ms = 0.0;
  int64_t batch_calls = 0;  // decode-batch graph calls (batched mode)
  int64_t batch_steps = 0;
  double TokensPerSecond() const { return wall_ms > 0 ? tokens * 1000.0 / wall_ms : 0.0; }
};

// One round: every client's request started at once; figures over all of them.
Result<RoundFigures> RunRound(Engine& engine, const std::vector<GenerateRequest>& requests) {
  const EngineStats before = engine.Stats();
  std::vector<Result<GenerateResult>> results(requests.size(), Status::Ok());
  std::vector<std::thread> clients;
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < requests.size(); ++i) {
    clients.emplace_back([&, i] { results[i] = engine.Generate(requests[i]); });
  }
  for (std::thread& t : clients) t.join();
  RoundFigures f;
  f.wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  for (Result<GenerateResult>& r : results) {
    if (!r.ok()) return r.error();
    f.tokens += static_cast<int64_t>(r->generated_tokens.size());
    f.mean_ttft_ms += r->ttft_ms / static_cast<double>(results.size());
  }
  const EngineStats after = engine.Stats();
  f.batch_calls = after.decode_batch_calls - before.decode_batch_calls;
  f.batch_steps = after.decode_batch_steps - before.decode_batch_steps;
  return f;
}

}  // namespace

void BenchConcurrent::Register(CLI::App& bench) {
  sub_ = bench.add_subcommand(
      "concurrent",
      "Aggregate decode tokens/s of N requests at once: decode steps batched vs not (same run)");
  sub_->add_option("-m,--model", model_path_, "GGUF model file")->required();
  sub_->add_option("-t,--threads", threads_, "Threads (0 = all cores)")
      ->default_val(0)
      ->check(IntegerIn(0, kMaxThreads));
  sub_->add_option("-c,--context", context_, "Context of each session in tokens (0 = model's)")
      ->default_val(0)
      ->check(IntegerIn(0, 1 << 20));
  sub_->add_option("-n,--clients", clients_, "Requests at once (sessions of the engine), 1..64")
      ->default_val(4)
      ->check(IntegerIn(1, 64));
  sub_->add_option("--tokens", tokens_, "Tokens each request generates")
      ->default_val(128)
      ->check(IntegerIn(1, 8192));
  sub_->add_option("-p,--prompt-tokens", prompt_tokens_, "Prompt length of each request")
      ->default_val(64)
      ->check(IntegerIn(1, 1 << 20));
  sub_->add_option("-r,--repetitions", repetitions_, "Rounds of each mode, alternating (best)")
      ->default_val(2)
      ->check(IntegerIn(1, 100));
  sub_->add_flag("--json", json_, "Print the figures as JSON");
}

int BenchConcurrent::Run() {
  EngineOptions options;
  options.model_path = model_path_;
  options.num_threads = threads_;
  options.context_tokens = context_;
  options.sessions = clients_;
  options.reuse = ReuseMethod::kNone;  // every request computes its prompt: decode is measured
  options.batch_decode = false;
  Result<std::unique_ptr<Engine>> alone = Engine::Create(options);
  if (!alone.ok()) return PrintError("bench concurrent", alone.error());
  options.batch_decode = true;
  Result<std::unique_ptr<Engine>> batched = Engine::Create(options);
  if (!batched.ok()) return PrintError("bench concurrent", batched.error());

  // A different prompt per client (another story each), of about --prompt-tokens tokens.
  const int context = (*alone)->context_tokens();
  if (prompt_tokens_ + tokens_ > context) {
    return PrintError("bench concurrent",
                      InvalidArgumentError("prompt + generated tokens exceed the " +
                                           std::to_string(context) + "-token context"));
  }
  std::vector<GenerateRequest> requests(static_cast<size_t>(clients_));
  for (int i = 0; i < clients_; ++i) {
    GenerateRequest& r = requests[static_cast<size_t>(i)];
    r.max_new_tokens = tokens_;
    const std::string sentence =
        "Story " + std::to_string(i + 1) + ": a child found a blue stone by the river. ";
    while (static_cast<int>((*alone)->Tokenize(r.prompt + sentence, true, false).size()) <
           prompt_tokens_) {
      r.prompt += sentence;
    }
    if (r.prompt.empty()) r.prompt = sentence;
  }
  // Warm-up: every session of both engines made, pages touched.
  for (Engine* e : {alone->get(), batched->get()}) {
    if (Result<RoundFigures> w = RunRound(*e, requests); !w.ok()) {
      return PrintError("bench concurrent", w.error());
    }
  }
  RoundFigures best_alone, best_batched;
  for (int rep = 0; rep < repetitions_; ++rep) {
    for (bool batch : {false, true}) {
      Result<RoundFigures> f = RunRound(batch ? **batched : **alone, requests);
      if (!f.ok()) return PrintError("bench concurrent", f.error());
      RoundFigures& best = batch ? best_batched : best_alone;
      if (f->TokensPerSecond() > best.TokensPerSecond()) best = *f;
    }
  }
  const double ratio = best_alone.TokensPerSecond() > 0
                           ? best_batched.TokensPerSecond() / best_alone.TokensPerSecond()
                           : 0.0;
  const double mean_batch = best_batched.batch_calls > 0
                                ? static_cast<double>(best_batched.batch_steps) /
                                      static_cast<double>(best_batched.batch_calls)
                                : 0.0;
  if (json_) {
    nlohmann::json j = {{"model", model_path_},
                        {"clients", clients_},
                        {"tokens_per_request", tokens_},
                        {"prompt_tokens", prompt_tokens_},
                        {"unbatched_tokens_per_second", best_alone.TokensPerSecond()},
                        {"batched_tokens_per_second", best_batched.TokensPerSecond()},
                        {"ratio", ratio},
                        {"unbatched_mean_ttft_ms", best_alone.mean_ttft_ms},
                        {"batched_mean_ttft_ms", best_batched.mean_ttft_ms},
                        {"mean_batch_size", mean_batch}};
    std::printf("%s\n", DumpJson(j).c_str());
    return kExitOk;
  }
  std::printf(
      "%s\n%d requests at once, each %d prompt tokens + %d generated; best of %d "
      "rounds per mode, alternating\n",
      (*batched)->Describe().c_str(), clients_, prompt_tokens_, tokens_, repetitions_);
  std::printf("%-34s %12s %14s\n", "decode steps", "tokens/s", "mean TTFT ms");
  std::printf("%-34s %12.1f %14.1f\n", "each session on its own (baseline)",
              best_alone.TokensPerSecond(), best_alone.mean_ttft_ms);
  std::printf("%-34s %12.1f %14.1f\n", "batched across sessions", best_batched.TokensPerSecond(),
              best_batched.mean_ttft_ms);
  std::printf("batched / baseline: %.2fx aggregate tokens/s; mean batch %.2f sessions per call\n",
              ratio, mean_batch);
  return kExitOk;
}

}  // namespace reprise::cli
