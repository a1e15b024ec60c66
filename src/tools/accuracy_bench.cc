#include "tools/accuracy_bench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "tools/reuse_bench.h"  // SoftmaxKl

namespace reprise::tools {
namespace {

int32_t Argmax(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

double Entropy(std::span<const float> logits) {
  const double max = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float v : logits) sum += std::exp(v - max);
  const double log_sum = max + std::log(sum);
  double h = 0;
  for (float v : logits) {
    const double lp = v - log_sum;
    h -= std::exp(lp) * lp;
  }
  return h;
}

// The greedy continuation of `n` tokens from `logits` (the distribution after the text);
// every token but the last is appended to `session`'s sequence.
Result<std::vector<int32_t>> Continue(Session& session, std::span<const float> logits, int n) {
  const size_t vocab = logits.size();
  std::vector<int32_t> out;
  std::vector<float> last(logits.begin(), logits.end());
  for (int i = 0; i < n; ++i) {
    const int32_t next = Argmax(last);
    out.push_back(next);
    if (i + 1 == n) break;
    const int32_t one[] = {next};
    REPRISE_ASSIGN_OR_RETURN(const float* l, session.Evaluate(one, 1));
    last.assign(l, l + vocab);
  }
  return out;
}

}  // namespace

Result<AccuracyBenchResult> RunAccuracyBench(const AccuracyBenchOptions& options) {
  if (options.max_tokens < 2 || options.step < 1 || options.continuation_tokens < 1) {
    return InvalidArgumentError("max tokens must be >= 2, step and continuation >= 1");
  }
  REPRISE_ASSIGN_OR_RETURN(const ModelInfo model, ReadModelInfo(options.model_path));
  const bool other =
      !options.reference_path.empty() && options.reference_path != options.model_path;
  const std::string& reference_path = other ? options.reference_path : options.model_path;
  ModelInfo reference_model = model;
  if (other) {
    REPRISE_ASSIGN_OR_RETURN(reference_model, ReadModelInfo(reference_path));
    if (reference_model.vocab_size != model.vocab_size) {
      return InvalidArgumentError("the reference model has another vocabulary size (" +
                                  std::to_string(reference_model.vocab_size) + " vs " +
                                  std::to_string(model.vocab_size) + ")");
    }
  }
  // The engine whose graphs are measured: its context holds the text and the continuation.
  const int context = std::min(model.context_length, reference_model.context_length);
  const int limit = std::min(options.max_tokens, context - options.continuation_tokens);
  EngineOptions graph_options;
  graph_options.model_path = options.model_path;
  graph_options.reuse = ReuseMethod::kNone;
  graph_options.context_tokens = std::max(1, limit) + options.continuation_tokens;
  graph_options.prefill_capacity = std::min(options.step, 128);
  graph_options.num_threads = options.num_threads;
  graph_options.weight_format = options.weight_format;
  graph_options.int8_scheme = options.int8_scheme;
  graph_options.outlier_fraction = options.outlier_fraction;
  graph_options.calibration_dir = options.calibration_dir;
  REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<Engine> graph_engine, Engine::Create(graph_options));
  const size_t vocab = static_cast<size_t>(model.vocab_size);
  std::vector<int32_t> tokens;
  for (const TokenPiece& piece :
       graph_engine->Tokenize(options.text.empty() ? SampleText() : std::string_view(options.text),
                              /*add_special=*/true, /*parse_special=*/false)) {
    tokens.push_back(piece.id);
  }
  if (static_cast<int>(tokens.size()) > limit)
    tokens.resize(static_cast<size_t>(std::max(0, limit)));
  if (tokens.size() < 2) return InvalidArgumentError("the text has fewer than two tokens");

  EngineOptions reference_options;
  reference_options.model_path = reference_path;
  reference_options.use_reference = true;
  reference_options.reuse = ReuseMethod::kNone;
  reference_options.context_tokens = graph_options.context_tokens;
  REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<Engine> reference_engine,
                           Engine::Create(reference_options));
  REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<Session> graphs, graph_engine->OpenSession());
  REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<Session> reference, reference_engine->OpenSession());

  AccuracyBenchResult result;
  result.model = options.model_path;
  result.reference = reference_path;
  result.backend = graph_engine->backend_name();
  result.int8_scheme = Int8SchemeName(options.int8_scheme);
  if (options.int8_scheme == Int8Scheme::kShadow)
    result.outlier_fraction = options.outlier_fraction;
  result.tokens = static_cast<int>(tokens.size());
  double kl_sum = 0, top1_sum = 0, entropy_sum = 0;
  std::vector<float> last_graph, last_reference;
  for (size_t begin = 0; begin < tokens.size(); begin += static_cast<size_t>(options.step)) {
    const size_t end = std::min(tokens.size(), begin + static_cast<size_t>(options.step));
    const std::span<const int32_t> piece(tokens.data() + begin, end - begin);
    REPRISE_ASSIGN_OR_RETURN(const float* g, graphs->Evaluate(piece.data(), piece.size()));
    last_graph.assign(g, g + vocab);
    REPRISE_ASSIGN_OR_RETURN(const float* r, reference->Evaluate(piece.data(), piece.size()));
    last_reference.assign(r, r + vocab);
    const double kl = SoftmaxKl(last_reference, last_graph);
    kl_sum += kl;
    result.kl_max = std::max(result.kl_max, kl);
    top1_sum += Argmax(last_reference) == Argmax(last_graph);
    entropy_sum += Entropy(last_reference);
    ++result.positions;
  }
  result.kl_mean = kl_sum / result.positions;
  result.top1_agreement = top1_sum / result.positions;
  result.reference_entropy_mean = entropy_sum / result.positions;

  REPRISE_ASSIGN_OR_RETURN(std::vector<int32_t> graph_continuation,
                           Continue(*graphs, last_graph, options.continuation_tokens));
  REPRISE_ASSIGN_OR_RETURN(std::vector<int32_t> reference_continuation,
                           Continue(*reference, last_reference, options.continuation_tokens));
  int agree = 0;
  while (agree < options.continuation_tokens &&
         graph_continuation[static_cast<size_t>(agree)] ==
             reference_continuation[static_cast<size_t>(agree)]) {
    ++agree;
  }
  result.continuation_agreement = static_cast<double>(agree) / options.continuation_tokens;
  return result;
}

std::string AccuracyBenchResult::ToJson() const {
  nlohmann::json j = {{"model", model},
                      {"reference", reference},
                      {"backend", backend},
                      {"tokens", tokens},
                      {"positions", positions},
                      {"kl_mean", kl_mean},
                      {"kl_max", kl_max},
                      {"top1_agreement", top1_agreement},
                      {"continuation_agreement", continuation_agreement},
                      {"reference_entropy_mean", reference_entropy_mean}};
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string AccuracyBenchResult::ToText() const {
  char line[512];
  std::snprintf(line, sizeof(line),
                "model %s (%s)\nreference %s (float forward)\n"
                "%d tokens, %d positions: KL mean %.6f max %.6f nats, top-1 %.3f, "
                "continuation %.3f; reference entropy %.3f nats\n",
                model.c_str(), backend.c_str(), reference.c_str(), tokens, positions, kl_mean,
                kl_max, top1_agreement, continuation_agreement, reference_entropy_mean);
  return line;
}

}  // namespace reprise::tools
