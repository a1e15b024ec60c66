// `reprise demo`: the main job of Reprise, shown on the demo kit of the repository (data/demo:
// two small trained models and 30 HotpotQA questions with their paragraphs) or on the user's
// own GGUF (--model).
//
// It first lets each model write a few words (proof that it is a trained model), then runs a
// short document-QA session with three reuse methods side by side — none (full prefill),
// prefix (exact prefix reuse) and blend (cached chunks at new positions, selective
// recompute) — each with its own namespace of one persistent store:
//   1. four documents retrieved for a question (nothing cached yet: every method computes);
//   2. the same documents in another order with a new question (only blend reuses them);
//   3. a follow-up question in the chat of request 2 (a long shared prefix);
//   4. the engine restarted on the same store, the documents in yet another order: the chunks
//      come back from flash.
// For each request and method it prints the measured TTFT, where the prompt's KV came from
// (tokens prefix / reused / recomputed / new, chunks from memory or from flash) and whether
// the answer (top-1 token and a greedy continuation) is the one a full prefill gives.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "cli/command.h"
#include "cli/commands.h"
#include "cli/paths.h"
#include "reprise/engine.h"
#include "reprise/store_admin.h"
#include "tools/reuse_bench.h"
#include "workload/docqa_workload.h"
#include "workload/json_input.h"

namespace reprise::cli {
namespace {

namespace fs = std::filesystem;

// The demo kit's files (data/demo/SOURCES.md says where they come from).
struct KitModel {
  const char* file;
  const char* label;
};
constexpr KitModel kKitModels[] = {
    {"stories260K.gguf", "demo kit: stories260K, llama2.c TinyStories model, MIT"},
    {"tinystories-656K-f16.gguf", "demo kit: TinyStories-656K, Hugging Face Llama, Apache-2.0"}};
constexpr const char* kKitQuestions = "hotpotqa_demo_30.jsonl";
constexpr int kDocuments = 4;
// The demo's prompts stay within this many tokens even when a model allows more.
constexpr int kMaxDemoContext = 2048;

// data/demo above the program (found from /proc/self/exe upwards: a build folder inside the
// checkout), else that of the checkout it was built from (a build folder elsewhere), else
// ./data/demo; nullopt when none holds the kit.
std::optional<std::string> FindDemoKit() {
  auto holds_kit = [](const fs::path& dir) {
    std::error_code ec;
    return fs::exists(dir / kKitQuestions, ec);
  };
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (fs::path dir = exe.parent_path(); !dir.empty() && dir != dir.root_path();
         dir = dir.parent_path()) {
      if (holds_kit(dir / "data" / "demo")) return (dir / "data" / "demo").string();
    }
  }
#ifdef REPRISE_BUILT_FROM
  if (const fs::path built_from = fs::path(REPRISE_BUILT_FROM) / "data" / "demo";
      holds_kit(built_from)) {
    return built_from.string();
  }
#endif
  if (holds_kit("data/demo")) {
    const fs::path canonical = fs::weakly_canonical("data/demo", ec);
    return ec ? std::string("data/demo") : canonical.string();
  }
  return std::nullopt;
}

// One HotpotQA item of the kit: a question and its paragraphs (the supporting ones first).
struct KitItem {
  std::string question;
  std::vector<std::string> titles;
  std::vector<std::vector<std::string>> sentences;  // per paragraph
  std::vector<bool> gold;
};

Result<KitItem> ReadKitItem(const std::string& path, int index) {
  REPRISE_ASSIGN_OR_RETURN(std::vector<nlohmann::json> lines, workload::ReadJsonLinesFile(path));
  if (index < 0 || index >= static_cast<int>(lines.size())) {
    return InvalidArgumentError("--question " + std::to_string(index) + ": the kit has " +
                                std::to_string(lines.size()) + " questions (0.." +
                                std::to_string(lines.size() - 1) + ")");
  }
  const nlohmann::json& line = lines[index];
  const std::string what = path + ": line " + std::to_string(index + 1);
  KitItem item;
  REPRISE_ASSIGN_OR_RETURN(item.question, workload::JsonStringField(line, "question", what));
  REPRISE_ASSIGN_OR_RETURN(const nlohmann::json* gold_titles,
                           workload::JsonArrayField(line, "gold_titles", what));
  REPRISE_ASSIGN_OR_RETURN(const nlohmann::json* paragraphs,
                           workload::JsonArrayField(line, "paragraphs", what));
  for (const nlohmann::json& p : *paragraphs) {
    REPRISE_ASSIGN_OR_RETURN(std::string title, workload::JsonStringField(p, "title", what));
    REPRISE_ASSIGN_OR_RETURN(const nlohmann::json* sentences,
                             workload::JsonArrayField(p, "sentences", what));
    std::vector<std::string> texts;
    for (const nlohmann::json& s : *sentences) {
      if (s.is_string()) texts.push_back(s.get<std::string>());
    }
    bool is_gold = false;
    for (const nlohmann::json& g : *gold_titles) is_gold |= g.is_string() && g == title;
    item.titles.push_back(std::move(title));
    item.sentences.push_back(std::move(texts));
    item.gold.push_back(is_gold);
  }
  return item;
}

// The user's own documents (--doc, two or more text files): each file is a document titled
// with its name, its lines taking the place of sentences; the first two are "supporting".
Result<KitItem> ReadDocFiles(const std::vector<std::string>& paths, const std::string& question) {
  KitItem item;
  item.question = question;
  for (const std::string& path : paths) {
    REPRISE_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
    std::vector<std::string> lines;
    for (size_t begin = 0; begin < text.size();) {
      const size_t end = std::min(text.find('\n', begin), text.size() - 1);
      lines.push_back(text.substr(begin, end + 1 - begin));
      begin = end + 1;
    }
    if (lines.empty()) return InvalidArgumentError("--doc " + path + ": the file is empty");
    item.gold.push_back(item.titles.size() < 2);
    item.titles.push_back(fs::path(path).filename().string());
    item.sentences.push_back(std::move(lines));
  }
  return item;
}

using Segments = std::vector<Segment>;

// The session's requests, built from one kit item (or any item: the text is real either way).
struct Scenario {
  struct Request {
    std::string title;
    Segments segments;
  };
  std::vector<Request> requests;  // the last one runs after the restart
  std::vector<std::string> document_titles;
};

std::string DocumentText(const std::string& title, const std::vector<std::string>& sentences,
                         size_t count) {
  std::string text = "Title: " + title + "\n";
  for (size_t i = 0; i < count && i < sentences.size(); ++i) text += sentences[i];
  return text + "\n";
}

int CountTokens(const Engine& engine, const Segments& segments) {
  int n = 1;  // BOS
  for (const Segment& s : segments) {
    n += static_cast<int>(engine.Tokenize(s.text, false, false).size());
  }
  return n;
}

// Picks the documents (the supporting paragraphs and distractors, in the item's order) and
// keeps as many of their sentences as fit in `budget` tokens for the longest request.
Scenario BuildScenario(const KitItem& item, const Engine& tok, int budget,
                       const std::string& chat_answer_placeholder) {
  if (item.titles.empty()) return Scenario{};
  std::vector<size_t> picked;
  for (size_t i = 0; i < item.titles.size() && picked.size() < kDocuments; ++i) {
    if (item.gold[i]) picked.push_back(i);
  }
  for (size_t i = 0; i < item.titles.size() && picked.size() < kDocuments; ++i) {
    if (!item.gold[i]) picked.push_back(i);
  }
  std::sort(picked.begin(), picked.end());
  const std::string system(workload::kDocQaSystemPrompt);
  const std::string a = item.titles[picked[0]];
  const std::string b = item.titles[picked.size() > 1 ? picked[1] : picked[0]];
  const std::string q1 = "Question: " + item.question + "\n";
  const std::string q2 = "Question: What do " + a + " and " + b + " have in common?\n";
  const std::string q3 = "Question: Tell me more about " + b + ".\n";
  const std::vector<int> order1 = {0, 1, 2, 3}, order2 = {2, 0, 3, 1}, order4 = {3, 1, 0, 2};
  size_t sentences = 64;
  Scenario scenario;
  for (;;) {
    std::vector<std::string> docs;
    for (size_t p : picked)
      docs.push_back(DocumentText(item.titles[p], item.sentences[p], sentences));
    auto with_docs = [&](const std::vector<int>& order) {
      Segments s = {{"system", system}};
      for (int i : order) {
        if (i < static_cast<int>(docs.size())) s.push_back({"document", docs[i]});
      }
      return s;
    };
    scenario.requests.clear();
    Segments r1 = with_docs(order1);
    r1.push_back({"user", q1});
    r1.push_back({"assistant", "Answer:"});
    Segments r2 = with_docs(order2);
    r2.push_back({"user", q2});
    r2.push_back({"assistant", "Answer:"});
    Segments r3 = with_docs(order2);
    r3.push_back({"user", q2});
    r3.push_back({"assistant", chat_answer_placeholder});
    r3.push_back({"user", q3});
    r3.push_back({"assistant", "Answer:"});
    Segments r4 = with_docs(order4);
    r4.push_back({"user", q1});
    r4.push_back({"assistant", "Answer:"});
    scenario.requests = {
        {"documents retrieved for a question (nothing cached yet)", r1},
        {"the same documents in another order, a new question", r2},
        {"a follow-up question in the chat of request 2", r3},
        {"after a restart on the same store: the documents in yet another order", r4}};
    if (CountTokens(tok, r3) <= budget || sentences == 1) break;
    sentences = std::min(sentences, size_t{8}) - 1;  // drop the documents' last sentences
  }
  for (size_t p : picked) scenario.document_titles.push_back(item.titles[p]);
  return scenario;
}

// What one method did on one request.
struct MethodOutcome {
  ReuseReport report;  // of the first try
  double ttft_ms = 0;  // the best of all tries
  double first_ttft_ms = 0;
  int prompt_tokens = 0;
  std::vector<float> logits;    // the first answer token's (last try)
  std::vector<int32_t> answer;  // greedy (last try)
  std::string answer_text;
};

// One method's session (its own namespace of the engine's store).
struct MethodRun {
  ReuseMethod method;
  std::unique_ptr<Session> session;
};

// Figures kept for the summary.
struct Tally {
  int requests = 0, top1_same = 0, answer_same = 0;
  // Requests 2 and later (the documents seen before): sums of TTFT and tokens.
  double repeated_none_ms = 0, repeated_blend_ms = 0;
  int64_t repeated_tokens = 0, repeated_blend_reused = 0;
  int64_t flash_after_restart = 0, memory_after_restart = 0;
};

class DemoCommand : public Command {
 public:
  CLI::App* Register(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand(
        "demo",
        "Show KV reuse on the demo kit (data/demo) or on your own GGUF: TTFT per method, what "
        "was reused, answers against a full prefill, chunks from flash after a restart");
    sub->add_option("-m,--model", model_,
                    "Your own GGUF model instead of the kit's (random-weight make-model files "
                    "work too: the text is noise, the timings are real)")
        ->check(CLI::ExistingFile);
    sub->add_option("--kit", kit_, "The demo kit folder (default: data/demo of the checkout)")
        ->check(CLI::ExistingDirectory);
    sub->add_option("-p,--prompt", prompt_, "Prompt for each model's story")
        ->default_val("Once upon a time");
    sub->add_option("-n,--max-tokens", max_tokens_, "Tokens of each model's story")
        ->default_val(48)
        ->check(CLI::Range(1, 4096));
    sub->add_option("--question", question_, "Which of the kit's 30 questions (0-29)")
        ->default_val(0)
        ->check(CLI::Range(0, 1000));
    sub->add_option("--answer-tokens", answer_tokens_,
                    "Greedy answer tokens compared with a full prefill's")
        ->default_val(16)
        ->check(CLI::Range(1, 256));
    sub->add_option("--doc", doc_files_,
                    "Your own documents instead of the kit's HotpotQA paragraphs (text files; "
                    "repeat the option, 2 to 4 files)")
        ->check(CLI::ExistingFile);
    sub->add_option("--ask", ask_, "The question about your documents (with --doc)")
        ->default_val("What are these documents about?");
    sub->add_option("--store-dir", store_dir_,
                    "The demo's store folder (default: demo-store in the cache folder); only its "
                    "namespaces demo-prefix and demo-blend are emptied");
    sub->add_option("--repeat", repeat_,
                    "Tries of each prefill; the TTFT shown is the best (a shared machine is noisy)")
        ->default_val(3)
        ->check(CLI::Range(1, 100));
    sub->add_option("-t,--threads", threads_,
                    "Worker threads (0 = every core; default: 1 for the kit's tiny models, whose "
                    "layers are too small to share, every core for --model)")
        ->check(CLI::Range(0, 1024));
    return sub;
  }

  int Run() override {
    const auto started = std::chrono::steady_clock::now();
    if (threads_ < 0) threads_ = model_.empty() ? 1 : 0;
    std::vector<std::pair<std::string, std::string>> models;  // label, path
    if (!model_.empty()) {
      models.push_back({"your model", model_});
    } else {
      std::optional<std::string> kit = kit_.empty() ? FindDemoKit() : std::optional(kit_);
      if (!kit) {
        return PrintError("demo", NotFoundError("the demo kit (data/demo of the checkout, file " +
                                                std::string(kKitQuestions) +
                                                ") was not found; pass --kit DIR, or "
                                                "--model FILE to run on your own GGUF"));
      }
      kit_ = *kit;
      for (const KitModel& m : kKitModels) {
        const std::string path = kit_ + "/" + m.file;
        std::error_code ec;  // an unreadable file counts as absent
        if (fs::exists(path, ec)) models.push_back({m.label, path});
      }
      if (models.empty()) {
        return PrintError("demo", NotFoundError("no model in the demo kit " + kit_));
      }
    }
    if (!doc_files_.empty() && (doc_files_.size() < 2 || doc_files_.size() > kDocuments)) {
      std::fprintf(stderr, "reprise demo: --doc: give 2 to %d files\n", kDocuments);
      return kExitUsage;
    }
    if (kit_.empty()) kit_ = FindDemoKit().value_or("");
    std::error_code ec;  // an unreadable kit counts as absent
    if (doc_files_.empty() && (kit_.empty() || !fs::exists(kit_ + "/" + kKitQuestions, ec))) {
      return PrintError("demo",
                        NotFoundError("the demo kit's questions (" + std::string(kKitQuestions) +
                                      ") were not found; pass --kit DIR"));
    }

    std::printf("== 1. %s (greedy, prompt \"%s\")\n",
                models.size() > 1 ? "The models write" : "The model writes", prompt_.c_str());
    for (const auto& [label, path] : models) {
      const int rc = WriteStory(label, path);
      if (rc != kExitOk) return rc;
    }

    Tally tally;
    const int rc = RunReuseSession(models.front().second, tally);
    if (rc != kExitOk) return rc;

    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::printf(
        "\ndemo: done in %.1f s — %zu model(s) wrote text; %d requests answered with "
        "each reuse method; blend's first answer token equal to a full prefill's in "
        "%d/%d, its %d-token answer in %d/%d; after the restart %lld chunks came from "
        "flash.\n",
        seconds, models.size(), tally.requests, tally.top1_same, tally.requests, answer_tokens_,
        tally.answer_same, tally.requests, static_cast<long long>(tally.flash_after_restart));
    return kExitOk;
  }

 private:
  int WriteStory(const std::string& label, const std::string& path) {
    EngineOptions options;
    options.model_path = path;
    options.num_threads = threads_;
    Result<std::unique_ptr<Engine>> engine = Engine::Create(options);
    if (!engine.ok()) return PrintError("demo", engine.error());
    std::printf("\n-- %s (%s)\n   %s\n", path.c_str(), label.c_str(),
                (*engine)->Describe().c_str());
    if (IsRandomModel(path)) {
      std::printf(
          "   note: this model has random weights (made by `reprise make-model`): its "
          "text is noise, but the timings and reuse counts below are real.\n");
    }
    GenerateRequest request;
    request.prompt = prompt_;
    request.max_new_tokens = max_tokens_;
    std::printf("   %s", prompt_.c_str());
    Result<GenerateResult> result = (*engine)->Generate(request, [](std::string_view text) {
      for (char c : text) std::fputc(c == '\n' ? ' ' : c, stdout);
      std::fflush(stdout);
      return true;
    });
    if (!result.ok()) return PrintError("demo", result.error());
    std::printf("\n   %zu prompt tokens, TTFT %.1f ms, %zu tokens at %.0f tok/s\n",
                result->prompt_tokens.size(), result->ttft_ms, result->generated_tokens.size(),
                result->decode_tokens_per_second);
    return kExitOk;
  }

  static bool IsRandomModel(const std::string& path) {
    Result<ModelInfo> info = ReadModelInfo(path);
    return info.ok() && info->name.rfind("reprise-random-", 0) == 0;
  }

  // The store's namespaces of the demo: one per method that caches.
  static std::string DemoNamespace(ReuseMethod method) {
    return std::string("demo-") + ReuseMethodName(method);
  }

  // Opens an engine on the store and one session per method (each its own namespace). On the
  // first open (`fresh`) the demo's namespaces are emptied first, so that every run starts
  // alike (other namespaces of a folder given with --store-dir are left alone).
  Status OpenRuns(const EngineOptions& options, bool fresh, std::unique_ptr<Engine>& engine,
                  std::vector<MethodRun>& runs) {
    if (fresh) {
      REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<StoreAdmin> admin,
                               StoreAdmin::Open({options.store_dir, options.store_disk_mb}));
      for (ReuseMethod method : {ReuseMethod::kPrefix, ReuseMethod::kBlend}) {
        REPRISE_RETURN_IF_ERROR(admin->Clear(DemoNamespace(method)));
      }
    }
    REPRISE_ASSIGN_OR_RETURN(engine, Engine::Create(options));
    runs.clear();
    for (ReuseMethod method : {ReuseMethod::kNone, ReuseMethod::kPrefix, ReuseMethod::kBlend}) {
      MethodRun run;
      run.method = method;
      REPRISE_ASSIGN_OR_RETURN(run.session, engine->OpenSession({DemoNamespace(method), method}));
      runs.push_back(std::move(run));
    }
    return Status::Ok();
  }

  // Each session first runs a prompt of `warm_tokens` tokens that keeps nothing, so that the
  // first request is not the one that touches the graphs' and the KV cache's memory. After the
  // restart (not `fresh`) only `none` does: the others' lookups would read the stored chunks
  // from flash before the first request.
  static Status WarmUp(const Engine& engine, int warm_tokens, bool fresh,
                       std::vector<MethodRun>& runs) {
    const std::string sentence = "The quick brown fox jumps over the lazy dog. ";
    const int per_sentence =
        std::max<int>(1, static_cast<int>(engine.Tokenize(sentence, false, false).size()));
    std::string warm_text;
    for (int n = 0; n + per_sentence < warm_tokens; n += per_sentence) warm_text += sentence;
    if (warm_text.empty()) warm_text = "Hello.";
    for (MethodRun& run : runs) {
      if (run.method != ReuseMethod::kNone && !fresh) continue;
      GenerateRequest warm;
      warm.segments = {{"warm-up", warm_text}};
      warm.max_new_tokens = 1;
      warm.keep_kv = false;
      Result<GenerateResult> warmed = run.session->Generate(warm);
      if (!warmed.ok()) return warmed.error();
    }
    return Status::Ok();
  }

  // One try of the request: greedy, the answer's tokens. Only the last try keeps its KV (the
  // store writes it back later, off the TTFT path), so every try plans alike; the first
  // records the report and where the chunks came from (chunks read from flash by it are in
  // memory for the later ones), every try the best TTFT, the last the answer.
  Status Try(MethodRun& run, const Segments& segments, int t, MethodOutcome& out) {
    GenerateRequest request;
    request.segments = segments;
    request.max_new_tokens = answer_tokens_;
    request.keep_kv = t + 1 == repeat_;
    request.return_first_token_logits = t + 1 == repeat_;
    REPRISE_ASSIGN_OR_RETURN(GenerateResult result, run.session->Generate(request));
    if (t == 0) {
      out.report = result.reuse;
      out.first_ttft_ms = out.ttft_ms = result.ttft_ms;
      out.prompt_tokens = static_cast<int>(result.prompt_tokens.size());
    }
    out.ttft_ms = std::min(out.ttft_ms, result.ttft_ms);
    if (t + 1 == repeat_) {
      out.logits = std::move(result.first_token_logits);
      out.answer = std::move(result.generated_tokens);
      out.answer_text = std::move(result.text);
    }
    return Status::Ok();
  }

  static std::string Quote(std::string text) {
    for (char& c : text) {
      if (c == '\n') c = ' ';
    }
    return "\"" + text + "\"";
  }

  // Runs request `index` with every method and prints its table; returns the full-prefill
  // answer's text.
  Result<std::string> RunRequest(int index, const Scenario::Request& request,
                                 std::vector<MethodRun>& runs, bool after_restart, Tally& tally) {
    // The methods take turns, try after try, so that other work on the machine disturbs them
    // alike.
    std::vector<MethodOutcome> outcomes(runs.size());
    for (int t = 0; t < repeat_; ++t) {
      for (size_t m = 0; m < runs.size(); ++m) {
        REPRISE_RETURN_IF_ERROR(Try(runs[m], request.segments, t, outcomes[m]));
      }
    }
    const MethodOutcome& full = outcomes.front();
    std::printf("\n[%d] %s — %d prompt tokens\n", index + 1, request.title.c_str(),
                full.prompt_tokens);
    std::printf("    %-7s %9s %8s %7s %7s %7s %6s %13s %7s %s\n", "method", "TTFT ms", "speedup",
                "prefix", "reused", "recomp", "new", "chunks mem/fl", "top-1",
                "answer vs full prefill");
    auto argmax = [](const std::vector<float>& v) {
      return std::max_element(v.begin(), v.end()) - v.begin();
    };
    for (size_t m = 0; m < runs.size(); ++m) {
      const MethodOutcome& o = outcomes[m];
      const ReuseReport& r = o.report;
      const char* name = ReuseMethodName(runs[m].method);
      const double speedup = o.ttft_ms > 0 ? full.ttft_ms / o.ttft_ms : 0.0;
      char chunks[32] = "-";
      if (runs[m].method != ReuseMethod::kNone) {
        std::snprintf(chunks, sizeof(chunks), "%lld / %lld",
                      static_cast<long long>(r.chunks_from_memory),
                      static_cast<long long>(r.chunks_from_flash));
      }
      std::string top1 = "ref", answer = "reference";
      if (m > 0) {
        const bool same_top1 = argmax(o.logits) == argmax(full.logits);
        size_t same = 0;
        while (same < o.answer.size() && same < full.answer.size() &&
               o.answer[same] == full.answer[same]) {
          ++same;
        }
        top1 = same_top1 ? "same" : "DIFF";
        char line[96];
        std::snprintf(line, sizeof(line), "%zu/%zu tokens same, KL %.2g", same, full.answer.size(),
                      tools::SoftmaxKl(full.logits, o.logits));
        answer = line;
        if (runs[m].method == ReuseMethod::kBlend) {
          if (index > 0) {
            tally.repeated_none_ms += full.ttft_ms;
            tally.repeated_blend_ms += o.ttft_ms;
            tally.repeated_tokens += o.prompt_tokens;
            tally.repeated_blend_reused += r.tokens_prefix + r.tokens_reused + r.tokens_recomputed;
          }
          ++tally.requests;
          tally.top1_same += same_top1;
          tally.answer_same += same == full.answer.size() && o.answer.size() == full.answer.size();
          if (after_restart) {
            tally.flash_after_restart += r.chunks_from_flash;
            tally.memory_after_restart += r.chunks_from_memory;
          }
        }
      }
      std::printf("    %-7s %9.2f %7.2fx %7d %7d %7d %6d %13s %7s %s\n", name, o.ttft_ms, speedup,
                  r.tokens_prefix, r.tokens_reused, r.tokens_recomputed, r.tokens_new, chunks,
                  top1.c_str(), answer.c_str());
      if (after_restart && r.chunks_from_flash > 0 && repeat_ > 1) {
        std::printf("    %-7s first try, reading %lld chunks from flash: %.2f ms\n", name,
                    static_cast<long long>(r.chunks_from_flash), o.first_ttft_ms);
      }
      if (m > 0 && o.answer != full.answer) {
        std::printf("    %-7s answer: %s\n", name, Quote(o.answer_text).c_str());
      }
    }
    std::printf("    answer (full prefill, greedy): %s\n", Quote(full.answer_text).c_str());
    return full.answer_text;
  }

  int RunReuseSession(const std::string& model_path, Tally& tally) {
    Result<ModelInfo> info = ReadModelInfo(model_path);
    if (!info.ok()) return PrintError("demo", info.error());
    Result<KitItem> item = doc_files_.empty() ? ReadKitItem(kit_ + "/" + kKitQuestions, question_)
                                              : ReadDocFiles(doc_files_, ask_);
    if (!item.ok()) return PrintError("demo", item.error());

    EngineOptions options;
    options.model_path = model_path;
    options.context_tokens = std::min(info->context_length, kMaxDemoContext);
    options.num_threads = threads_;
    options.reuse = ReuseMethod::kBlend;  // sessions choose their own
    options.cache_mb = 256;
    options.store_disk_mb = 1024;
    // The longest prompt leaves room for the answer and for the chat's earlier answer.
    const int budget = options.context_tokens - 3 * answer_tokens_ - 8;
    if (budget < 64) {
      return PrintError("demo", InvalidArgumentError("the model's context (" +
                                                     std::to_string(options.context_tokens) +
                                                     " tokens) is too short for the demo"));
    }
    if (store_dir_.empty()) {
      Result<std::string> cache = FindCacheDir();
      if (!cache.ok()) return PrintError("demo", cache.error());
      store_dir_ = *cache + "/demo-store";
    }
    options.store_dir = store_dir_;
    std::unique_ptr<Engine> engine;
    std::vector<MethodRun> runs;
    if (Status s = OpenRuns(options, true, engine, runs); !s.ok()) return PrintError("demo", s);
    Scenario scenario = BuildScenario(*item, *engine, budget, std::string(2 * answer_tokens_, '.'));
    if (scenario.requests.empty()) {
      return PrintError("demo", InvalidArgumentError("the question has no paragraphs"));
    }

    std::printf("\n== 2. KV reuse: a document-QA session on %s\n", model_path.c_str());
    if (model_.empty()) {
      std::printf(
          "   The kit's models were trained on children's stories, not on questions: "
          "their answers are stories.\n   What counts here is whether an answer with reuse "
          "is the one a full prefill gives.\n");
    }
    std::printf("   Documents%s:",
                doc_files_.empty() ? " (HotpotQA paragraphs, CC BY-SA 4.0)" : "");
    for (const std::string& t : scenario.document_titles) std::printf(" \"%s\"", t.c_str());
    std::printf(
        "\n   Store %s, namespaces demo-prefix and demo-blend (emptied first); blend's ratio "
        "%.2f;\n   %s;\n   TTFT: the best of %d tries of each prefill.\n",
        store_dir_.c_str(), options.recompute_ratio, engine->Describe().c_str(), repeat_);
    std::printf(
        "   Methods: none = full prefill (the reference); prefix = exact reuse of a shared "
        "prefix; blend = cached chunks\n   moved to their new positions, the most deviating "
        "tokens recomputed. Tokens: prefix = reused as a prefix, reused = at a new\n   "
        "position, recomp = reused then recomputed, new = computed. Chunks: cache hits from "
        "memory / from flash.\n");

    int warm_tokens = 0;
    for (const Scenario::Request& r : scenario.requests) {
      warm_tokens = std::max(warm_tokens, CountTokens(*engine, r.segments));
    }
    if (Status s = WarmUp(*engine, warm_tokens, true, runs); !s.ok()) {
      return PrintError("demo", s);
    }
    const size_t before_restart = scenario.requests.size() - 1;
    std::string chat_answer;
    for (size_t i = 0; i < before_restart; ++i) {
      Scenario::Request& request = scenario.requests[i];
      if (i == 2) {
        // The chat's earlier turn holds the answer the model gave to request 2.
        for (Segment& s : request.segments) {
          if (s.role == "assistant" && s.text != "Answer:") {
            s.text = "Answer:" + chat_answer.substr(0, chat_answer.find('\n')) + "\n";
          }
        }
      }
      Result<std::string> answer = RunRequest(static_cast<int>(i), request, runs, false, tally);
      if (!answer.ok()) return PrintError("demo", answer.error());
      chat_answer = *answer;
      // The next request's text search finds only chunks the catalog holds: wait for the
      // write-back (off the TTFT path), so that every run finds the same candidates.
      if (Status s = engine->Flush(); !s.ok()) return PrintError("demo", s);
    }

    const EngineStats saved = engine->Stats();
    runs.clear();
    engine.reset();
    std::printf(
        "\n== 3. Restart: the engine is closed (the store holds %lld chunks, %.1f MiB on "
        "flash) and opened again on the same store\n",
        static_cast<long long>(saved.chunks), saved.bytes_on_disk / 1048576.0);
    if (Status s = OpenRuns(options, false, engine, runs); !s.ok()) return PrintError("demo", s);
    if (Status s = WarmUp(*engine, warm_tokens, false, runs); !s.ok()) {
      return PrintError("demo", s);
    }
    Result<std::string> answer =
        RunRequest(static_cast<int>(before_restart), scenario.requests.back(), runs, true, tally);
    if (!answer.ok()) return PrintError("demo", answer.error());
    if (Status s = engine->Flush(); !s.ok()) return PrintError("demo", s);

    std::printf("\n== What this showed\n");
    std::printf(
        "   TTFT is the time to the first token (the prefill), measured here and now: the "
        "best of %d tries.\n",
        repeat_);
    if (tally.repeated_blend_ms > 0) {
      std::printf(
          "   documents seen before (requests 2-%d): blend found %lld of %lld prompt "
          "tokens in the cache; TTFT %.1f ms in all vs %.1f ms with a full prefill (%.2fx).\n",
          tally.requests, static_cast<long long>(tally.repeated_blend_reused),
          static_cast<long long>(tally.repeated_tokens), tally.repeated_blend_ms,
          tally.repeated_none_ms, tally.repeated_none_ms / tally.repeated_blend_ms);
    }
    std::printf(
        "   blend answers: first token equal to the full prefill's in %d/%d requests, "
        "whole %d-token answers in %d/%d.\n",
        tally.top1_same, tally.requests, answer_tokens_, tally.answer_same, tally.requests);
    std::printf("   after the restart: blend found %lld chunks on flash and %lld in memory.\n",
                static_cast<long long>(tally.flash_after_restart),
                static_cast<long long>(tally.memory_after_restart));
    std::printf(
        "   The store stays in %s (`reprise cache stats --store %s`); the next demo "
        "empties its demo namespaces.\n",
        store_dir_.c_str(), store_dir_.c_str());
    if (std::optional<std::string> data = FindSharedDataDir()) {
      std::printf(
          "   Larger workloads are in %s: `reprise bench reuse -m %s --workload "
          "docqa-distractor --warm-retrieved-only` measures the same over 100 questions.\n",
          data->c_str(), model_path.c_str());
    }
    return kExitOk;
  }

  std::string model_;
  std::string kit_;
  std::string prompt_ = "Once upon a time";
  int max_tokens_ = 48;
  int question_ = 0;
  int answer_tokens_ = 16;
  std::vector<std::string> doc_files_;
  std::string ask_;
  std::string store_dir_;
  int threads_ = -1;  // not given
  int repeat_ = 3;
};

}  // namespace

std::unique_ptr<Command> NewDemoCommand() { return std::make_unique<DemoCommand>(); }

}  // namespace reprise::cli
