// The public API's token-level use (Session::Evaluate, Truncate, OpProfile), the machine's
// peak and what a model file holds (InspectModelFile), on the demo kit's trained
// stories260K.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "engine/recall_probe.h"
#include "reprise/engine.h"
#include "support/temp_dir.h"

namespace reprise {
namespace {

const std::string kModel = std::string(REPRISE_SOURCE_DIR) + "/data/demo/stories260K.gguf";

EngineOptions Options(bool use_reference = false) {
  EngineOptions o;
  o.model_path = kModel;
  o.context_tokens = 256;
  o.num_threads = 2;
  o.reuse = ReuseMethod::kNone;
  o.use_reference = use_reference;
  return o;
}

std::unique_ptr<Engine> MakeEngine(bool use_reference = false) {
  Result<std::unique_ptr<Engine>> engine = Engine::Create(Options(use_reference));
  EXPECT_TRUE(engine.ok()) << engine.error().ToString();
  return engine.ok() ? std::move(*engine) : nullptr;
}

std::vector<int32_t> PromptTokens(const Engine& engine) {
  std::vector<int32_t> ids;
  for (const TokenPiece& piece :
       engine.Tokenize("Once upon a time, Lily saw a big tree in the park and she was happy.",
                       /*add_special=*/true, /*parse_special=*/false)) {
    ids.push_back(piece.id);
  }
  return ids;
}

float MaxAbsDifference(std::span<const float> a, std::span<const float> b) {
  EXPECT_EQ(a.size(), b.size());
  float worst = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    worst = std::max(worst, std::fabs(a[i] - b[i]));
  }
  return worst;
}

// Session::Evaluate over a span, the logits as a span of the vocabulary.
Result<std::span<const float>> Eval(Session& session, std::span<const int32_t> tokens,
                                    OpProfile* profile = nullptr) {
  static const int vocab = ReadModelInfo(kModel)->vocab_size;
  Result<const float*> logits = session.Evaluate(tokens.data(), tokens.size(), profile);
  if (!logits.ok()) return logits.error();
  return std::span<const float>(*logits, static_cast<size_t>(vocab));
}

size_t Argmax(std::span<const float> x) {
  return static_cast<size_t>(std::max_element(x.begin(), x.end()) - x.begin());
}

TEST(SessionEvaluateTest, GivesTheLogitsGenerateComputesForTheSamePrompt) {
  std::unique_ptr<Engine> engine = MakeEngine();
  ASSERT_NE(engine, nullptr);
  GenerateRequest request;
  request.prompt = "Once upon a time, Lily saw a big tree";
  request.max_new_tokens = 1;
  request.return_first_token_logits = true;
  Result<GenerateResult> generated = engine->Generate(request);
  ASSERT_TRUE(generated.ok()) << generated.error().ToString();

  Result<std::unique_ptr<Session>> session = engine->OpenSession();
  ASSERT_TRUE(session.ok()) << session.error().ToString();
  EXPECT_EQ((*session)->num_tokens(), 0);
  Result<std::span<const float>> logits = Eval(**session, generated->prompt_tokens);
  ASSERT_TRUE(logits.ok()) << logits.error().ToString();
  EXPECT_EQ((*session)->num_tokens(), static_cast<int>(generated->prompt_tokens.size()));
  ASSERT_EQ(logits->size(), static_cast<size_t>(engine->vocab_size()));
  EXPECT_TRUE(std::equal(logits->begin(), logits->end(), generated->first_token_logits.begin(),
                         generated->first_token_logits.end()));
}

TEST(SessionEvaluateTest, ASequenceMayBeEvaluatedInPiecesTruncatedAndContinued) {
  std::unique_ptr<Engine> engine = MakeEngine();
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> prompt = PromptTokens(*engine);
  ASSERT_GT(prompt.size(), 8u);
  Result<std::unique_ptr<Session>> made = engine->OpenSession();
  ASSERT_TRUE(made.ok());
  Session& session = **made;
  Result<std::span<const float>> whole = Eval(session, prompt);
  ASSERT_TRUE(whole.ok()) << whole.error().ToString();
  const std::vector<float> expected(whole->begin(), whole->end());
  float scale = 0;
  for (float v : expected) scale = std::max(scale, std::fabs(v));

  // Two pieces, from an emptied sequence.
  ASSERT_TRUE(session.Truncate(0).ok());
  const size_t half = prompt.size() / 2;
  ASSERT_TRUE(Eval(session, std::span<const int32_t>(prompt).first(half)).ok());
  Result<std::span<const float>> pieces =
      Eval(session, std::span<const int32_t>(prompt).subspan(half));
  ASSERT_TRUE(pieces.ok()) << pieces.error().ToString();
  EXPECT_EQ(Argmax(*pieces), Argmax(expected));
  EXPECT_LE(MaxAbsDifference(*pieces, expected), 1e-3f * scale);

  // Drop the last token and run it again, alone (the decode graph).
  ASSERT_TRUE(session.Truncate(static_cast<int>(prompt.size()) - 1).ok());
  EXPECT_EQ(session.num_tokens(), static_cast<int>(prompt.size()) - 1);
  Result<std::span<const float>> last = Eval(session, std::span<const int32_t>(prompt).last(1));
  ASSERT_TRUE(last.ok()) << last.error().ToString();
  EXPECT_EQ(Argmax(*last), Argmax(expected));
  EXPECT_LE(MaxAbsDifference(*last, expected), 1e-3f * scale);
}

TEST(SessionEvaluateTest, BadInputIsRefusedAndTheSequenceKept) {
  for (const bool use_reference : {false, true}) {
    SCOPED_TRACE(use_reference ? "reference" : "graphs");
    std::unique_ptr<Engine> engine = MakeEngine(use_reference);
    ASSERT_NE(engine, nullptr);
    Result<std::unique_ptr<Session>> made = engine->OpenSession();
    ASSERT_TRUE(made.ok()) << made.error().ToString();
    Session& session = **made;
    const std::vector<int32_t> prompt = PromptTokens(*engine);
    ASSERT_TRUE(Eval(session, prompt).ok());
    const int held = session.num_tokens();
    EXPECT_EQ(Eval(session, {}).error().code(), StatusCode::kInvalidArgument);
    const int32_t outside[] = {1, engine->vocab_size()};
    EXPECT_EQ(Eval(session, outside).error().code(), StatusCode::kInvalidArgument);
    const int32_t negative[] = {-1};
    EXPECT_EQ(Eval(session, negative).error().code(), StatusCode::kInvalidArgument);
    const std::vector<int32_t> too_many(static_cast<size_t>(engine->context_tokens() - held + 1),
                                        prompt[1]);
    Result<std::span<const float>> overflow = Eval(session, too_many);
    ASSERT_FALSE(overflow.ok());
    EXPECT_EQ(overflow.error().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(overflow.error().message().find("do not fit"), std::string::npos)
        << overflow.error().ToString();
    EXPECT_EQ(session.Truncate(held + 1).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(session.Truncate(-1).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(session.num_tokens(), held);
    // What fits still runs.
    const std::vector<int32_t> fill(static_cast<size_t>(engine->context_tokens() - held),
                                    prompt[1]);
    EXPECT_TRUE(Eval(session, fill).ok());
    EXPECT_EQ(session.num_tokens(), engine->context_tokens());
  }
}

TEST(SessionEvaluateTest, TheReferenceBackendGivesEachSessionItsOwnForwardPass) {
  std::unique_ptr<Engine> graphs = MakeEngine();
  std::unique_ptr<Engine> reference = MakeEngine(/*use_reference=*/true);
  ASSERT_NE(graphs, nullptr);
  ASSERT_NE(reference, nullptr);
  EXPECT_EQ(reference->backend_name(), "reference");
  EXPECT_NE(graphs->backend_name().find("cpu-graphs"), std::string::npos) << graphs->backend_name();
  const std::vector<int32_t> prompt = PromptTokens(*graphs);
  Result<std::unique_ptr<Session>> a = reference->OpenSession();
  Result<std::unique_ptr<Session>> b = reference->OpenSession();
  Result<std::unique_ptr<Session>> g = graphs->OpenSession();
  ASSERT_TRUE(a.ok() && b.ok() && g.ok());
  ASSERT_TRUE(Eval(**a, std::span<const int32_t>(prompt).first(3)).ok());
  Result<std::span<const float>> from_b = Eval(**b, prompt);
  ASSERT_TRUE(from_b.ok());
  const std::vector<float> expected(from_b->begin(), from_b->end());
  // a's sequence is its own: continuing it gives what b computed in one go.
  OpProfile profile;
  Result<std::span<const float>> from_a =
      Eval(**a, std::span<const int32_t>(prompt).subspan(3), &profile);
  ASSERT_TRUE(from_a.ok());
  EXPECT_LE(MaxAbsDifference(*from_a, expected), 1e-4f);
  EXPECT_EQ(profile.matmul_ms + profile.attention_ms + profile.other_ms, 0.0);  // not timed
  Result<std::span<const float>> from_graphs = Eval(**g, prompt);
  ASSERT_TRUE(from_graphs.ok());
  EXPECT_EQ(Argmax(*from_graphs), Argmax(expected));
  EXPECT_EQ(reference->Stats().weights_bytes, 0);
  EXPECT_GT(graphs->Stats().weights_bytes, 0);
}

TEST(SessionEvaluateTest, AProfileTimesEveryKindOfOpAndAddsUp) {
  std::unique_ptr<Engine> engine = MakeEngine();
  ASSERT_NE(engine, nullptr);
  Result<std::unique_ptr<Session>> made = engine->OpenSession();
  ASSERT_TRUE(made.ok());
  const std::vector<int32_t> prompt = PromptTokens(*engine);
  OpProfile profile;
  ASSERT_TRUE(Eval(**made, prompt, &profile).ok());
  EXPECT_GT(profile.matmul_ms, 0.0);
  EXPECT_GT(profile.attention_ms, 0.0);
  EXPECT_GT(profile.other_ms, 0.0);
  EXPECT_GT(profile.matmul_macs, 0.0);
  EXPECT_LE(profile.matmul_int8_macs, profile.matmul_macs);
  EXPECT_LE(profile.matmul_int8_ms, profile.matmul_ms);
  const OpProfile first = profile;
  ASSERT_TRUE(Eval(**made, std::span<const int32_t>(prompt).first(1), &profile).ok());
  EXPECT_GT(profile.matmul_macs, first.matmul_macs);  // added to what it held
  EXPECT_GT(profile.matmul_ms, first.matmul_ms);
  // Bytes of KV per token: K and V of every layer in f16.
  const ModelInfo info = *ReadModelInfo(kModel);
  EXPECT_GT(engine->kv_bytes_per_token(), 0);
  EXPECT_EQ(engine->kv_bytes_per_token() % (4 * info.num_layers), 0);
}

TEST(WeightFormatTest, EveryMatrixMayBePackedInOneFormat) {
  for (const WeightFormat format : {WeightFormat::kAsStored, WeightFormat::kQ8_0,
                                    WeightFormat::kQ4_0, WeightFormat::kF16, WeightFormat::kF32}) {
    Result<WeightFormat> parsed = ParseWeightFormat(WeightFormatName(format));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, format);
  }
  EXPECT_EQ(ParseWeightFormat("q8_0").error().code(), StatusCode::kInvalidArgument);
  // The demo model (F32) through the F16 kernels: the same next token, other bits.
  std::vector<std::vector<float>> logits;
  for (const WeightFormat format : {WeightFormat::kAsStored, WeightFormat::kF16}) {
    EngineOptions options = Options();
    options.weight_format = format;
    Result<std::unique_ptr<Engine>> engine = Engine::Create(options);
    ASSERT_TRUE(engine.ok()) << engine.error().ToString();
    Result<std::unique_ptr<Session>> session = (*engine)->OpenSession();
    ASSERT_TRUE(session.ok());
    Result<std::span<const float>> out = Eval(**session, PromptTokens(**engine));
    ASSERT_TRUE(out.ok());
    logits.emplace_back(out->begin(), out->end());
  }
  EXPECT_EQ(Argmax(logits[0]), Argmax(logits[1]));
  EXPECT_NE(logits[0], logits[1]);
  // Its 172-wide rows are no whole number of Q8_0 blocks: refused, saying so.
  EngineOptions q8 = Options();
  q8.weight_format = WeightFormat::kQ8_0;
  Result<std::unique_ptr<Engine>> refused = Engine::Create(q8);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), StatusCode::kUnimplemented);
  EXPECT_NE(refused.error().message().find("q8_0x8"), std::string::npos)
      << refused.error().ToString();
}

TEST(MachinePeakApiTest, MeasuresTheEnginesKernelsOnItsThreads) {
  std::unique_ptr<Engine> engine = MakeEngine();
  ASSERT_NE(engine, nullptr);
  const MachinePeak peak = engine->MeasureMachinePeak(0.005);
  EXPECT_EQ(peak.threads, engine->num_threads());
  EXPECT_EQ(peak.threads, 2);
  EXPECT_FALSE(peak.kernels.empty());
  EXPECT_NE(engine->backend_name().find(peak.kernels), std::string::npos)
      << engine->backend_name() << " vs " << peak.kernels;
  EXPECT_FALSE(peak.int8_instruction.empty());
  EXPECT_GT(peak.int8_gmacs_per_second, 0);
  EXPECT_GT(peak.float_gmacs_per_second, 0);
  EXPECT_GT(peak.read_gb_per_second, 0);
}

TEST(PromptTokenizerTest, GivesThePromptTokensAnEngineRunsForTheSameRequest) {
  Result<std::unique_ptr<PromptTokenizer>> tokenizer = PromptTokenizer::Open(kModel);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.error().ToString();
  std::unique_ptr<Engine> engine = MakeEngine();
  ASSERT_NE(engine, nullptr);
  GenerateRequest plain;
  plain.prompt = "Once upon a time, Lily saw a big tree";
  GenerateRequest chat;
  chat.messages = {{"system", "You tell stories."}, {"user", "Tell me about <|im_end|> Tom."}};
  chat.documents = {{"park", "Lily and Tom went to the park."}, {"", "The cat was happy."}};
  chat.skills = {{"rhyme", "Answer in rhymes."}};
  GenerateRequest segments;
  segments.segments = {{"document", "The tree was big."}, {"question", "What was big?"}};
  for (GenerateRequest* request : {&plain, &chat, &segments}) {
    request->max_new_tokens = 1;
    Result<GenerateResult> generated = engine->Generate(*request);
    ASSERT_TRUE(generated.ok()) << generated.error().ToString();
    EXPECT_EQ((*tokenizer)->PromptTokens(*request), generated->prompt_tokens);
  }
  EXPECT_EQ(PromptTokenizer::Open("/no/such/model.gguf").error().code(), StatusCode::kNotFound);
}

// A GGUF v3 file with the given metadata strings and no tensors.
void WriteGguf(const std::string& path,
               const std::vector<std::pair<std::string, std::string>>& strings) {
  std::string bytes = "GGUF";
  auto u32 = [&](uint32_t v) { bytes.append(reinterpret_cast<const char*>(&v), 4); };
  auto u64 = [&](uint64_t v) { bytes.append(reinterpret_cast<const char*>(&v), 8); };
  auto str = [&](const std::string& s) {
    u64(s.size());
    bytes += s;
  };
  u32(3);
  u64(0);  // tensors
  u64(strings.size());
  for (const auto& [key, value] : strings) {
    str(key);
    u32(8);  // string
    str(value);
  }
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  std::fclose(f);
}

TEST(InspectModelFileTest, AFileThatCannotRunStillGetsItsInfoWithTheReasons) {
  testing_support::TempDir dir;
  const std::string path = dir.path() + "/mamba.gguf";
  WriteGguf(path, {{"general.architecture", "mamba"}, {"general.name", "not a transformer"}});
  Result<ModelInfo> info = InspectModelFile(path);
  ASSERT_TRUE(info.ok()) << info.error().ToString();
  EXPECT_EQ(info->architecture, "mamba");
  EXPECT_EQ(info->name, "not a transformer");
  EXPECT_EQ(info->gguf_version, 3u);
  EXPECT_EQ(info->num_metadata, 2u);
  EXPECT_EQ(info->num_tensors, 0u);
  EXPECT_FALSE(info->config_error.empty());
  EXPECT_FALSE(info->tokenizer_error.empty());
  EXPECT_EQ(info->vocab_size, 0);
  // Loading it is refused.
  EXPECT_FALSE(ReadModelInfo(path).ok());

  // The demo model: everything, no reasons.
  Result<ModelInfo> demo = InspectModelFile(kModel);
  ASSERT_TRUE(demo.ok()) << demo.error().ToString();
  EXPECT_TRUE(demo->config_error.empty());
  EXPECT_TRUE(demo->tokenizer_error.empty());
  EXPECT_GT(demo->num_parameters, 0u);
  EXPECT_GT(demo->tokenizer_tokens, 0u);
  EXPECT_FALSE(demo->config_summary.empty());
  EXPECT_FALSE(demo->tensor_types.empty());
  EXPECT_EQ(demo->vocab_size, ReadModelInfo(kModel)->vocab_size);

  const std::string truncated = dir.path() + "/truncated.gguf";
  WriteGguf(truncated, {{"general.architecture", "llama"}});
  std::filesystem::resize_file(truncated, 20);
  Result<ModelInfo> corrupt = InspectModelFile(truncated);
  ASSERT_FALSE(corrupt.ok());
  EXPECT_EQ(corrupt.error().code(), StatusCode::kCorrupt) << corrupt.error().ToString();
}

}  // namespace
}  // namespace reprise

namespace reprise {
namespace {

TEST(ReuseDiagnosticsTest, ARequestSaysHowItsPromptWasReusedAndARecallProbeWhyTokensWereNot) {
  EngineOptions options;
  options.model_path = kModel;
  options.context_tokens = 512;
  options.num_threads = 2;
  options.reuse = ReuseMethod::kBlend;
  Result<std::unique_ptr<Engine>> engine = Engine::Create(options);
  ASSERT_TRUE(engine.ok()) << engine.error().ToString();
  std::string story;
  for (int i = 0; i < 12; ++i) story += "Lily saw a big tree in the park and she was happy. ";
  GenerateRequest first;
  first.segments = {{"document", story}, {"question", "What did Lily see?"}};
  first.max_new_tokens = 1;
  first.diagnose = true;
  Result<GenerateResult> a = (*engine)->Generate(first);
  ASSERT_TRUE(a.ok()) << a.error().ToString();
  EXPECT_FALSE(a->diagnostics.plan.empty());
  EXPECT_GE(a->diagnostics.graph_calls, 1);
  ASSERT_FALSE(a->diagnostics.chunks.empty());
  EXPECT_EQ(a->diagnostics.chunks.back().second, static_cast<int>(a->prompt_tokens.size()));
  Result<NamespaceStats> stats = (*engine)->StatsOf("default");
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->chunks, static_cast<int64_t>(a->diagnostics.chunks.size()));

  // The same document after a new opening: an oracle calls every token of it reusable; those
  // computed anew are accounted for, cause by cause.
  GenerateRequest second = first;
  second.segments.insert(second.segments.begin(), {"system", "Answer briefly."});
  Result<std::unique_ptr<PromptTokenizer>> tokenizer = PromptTokenizer::Open(kModel);
  ASSERT_TRUE(tokenizer.ok());
  const std::vector<int32_t> prompt = (*tokenizer)->PromptTokens(second);
  const std::vector<uint8_t> reusable(prompt.size(), 1);
  Result<std::unique_ptr<Session>> session = (*engine)->OpenSession();
  ASSERT_TRUE(session.ok());
  engine::RecallProbe probe{reusable, {}, 32};
  Result<GenerateResult> b = probe.Generate(**session, second);
  ASSERT_TRUE(b.ok()) << b.error().ToString();
  ASSERT_EQ(b->prompt_tokens, prompt);
  ASSERT_TRUE(probe.classified);
  EXPECT_GT(b->reuse.tokens_reused + b->reuse.tokens_recomputed, 0);
  EXPECT_EQ(probe.losses.total(), b->reuse.tokens_new);
  EXPECT_EQ(probe.losses.last_token, 1);
  // A mask of another length is refused.
  engine::RecallProbe short_mask{std::span(reusable).first(reusable.size() - 1), {}, 32};
  EXPECT_EQ(short_mask.Generate(**session, second).error().code(),
            StatusCode::kInvalidArgument);
  // A plain request is not diagnosed: the product API carries no oracle.
  EXPECT_TRUE((*engine)->Generate(second).ok());
}

}  // namespace
}  // namespace reprise
