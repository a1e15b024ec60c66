#include "tools/accuracy_bench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "engine/graph_backend.h"
#include "engine/loaded_model.h"
#include "engine/reference_backend.h"
#include "engine/sample_text.h"
#include "engine/sampler.h"  // Argmax
#include "tokenizer/tokenizer.h"
#include "tools/reuse_bench.h"  // SoftmaxKl

namespace reprise::tools {
namespace {

using engine::Argmax;
using engine::GraphBackend;
using engine::InferenceBackend;
using engine::LoadedModel;
using engine::ReferenceBackend;

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
// every token but the last is appended to `backend`.
Result<std::vector<int32_t>> Continue(InferenceBackend& backend, std::span<const float> logits,
                                      int n) {
  std::vector<int32_t> out;
  std::vector<float> last(logits.begin(), logits.end());
  for (int i = 0; i < n; ++i) {
    const int32_t next = Argmax(last);
    out.push_back(next);
    if (i + 1 == n) break;
    const int32_t one[] = {next};
    REPRISE_ASSIGN_OR_RETURN(std::span<const float> l, backend.Append(one));
    last.assign(l.begin(), l.end());
  }
  return out;
}

}  // namespace

Result<AccuracyBenchResult> RunAccuracyBench(const AccuracyBenchOptions& options) {
  if (options.max_tokens < 2 || options.step < 1 || options.continuation_tokens < 1) {
    return InvalidArgumentError("max tokens must be >= 2, step and continuation >= 1");
  }
  REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<LoadedModel> model,
                           LoadedModel::Load(options.model_path));
  std::unique_ptr<LoadedModel> other;
  if (!options.reference_path.empty() && options.reference_path != options.model_path) {
    REPRISE_ASSIGN_OR_RETURN(other, LoadedModel::Load(options.reference_path));
    if (other->config().vocab_size != model->config().vocab_size) {
      return InvalidArgumentError("the reference model has another vocabulary size (" +
                                  std::to_string(other->config().vocab_size) + " vs " +
                                  std::to_string(model->config().vocab_size) + ")");
    }
  }
  const LoadedModel& reference_model = other ? *other : *model;

  tokenizer::EncodeOptions encode;
  encode.add_special = true;
  std::vector<int32_t> tokens = model->tokenizer().Encode(
      options.text.empty() ? engine::SampleText() : std::string_view(options.text), encode);
  const int context =
      std::min(model->config().context_length, reference_model.config().context_length);
  const int limit = std::min(options.max_tokens, context - options.continuation_tokens);
  if (static_cast<int>(tokens.size()) > limit)
    tokens.resize(static_cast<size_t>(std::max(0, limit)));
  if (tokens.size() < 2) return InvalidArgumentError("the text has fewer than two tokens");

  const int capacity = static_cast<int>(tokens.size()) + options.continuation_tokens;
  engine::GraphBackendOptions graph_options;
  graph_options.context_tokens = capacity;
  graph_options.prefill_capacity = std::min(options.step, 128);
  graph_options.num_threads = options.num_threads;
  graph_options.pack = options.pack;
  if (!options.pack_format.empty()) {
    bool known = false;
    for (kernels::PackedFormat format :
         {kernels::PackedFormat::kQ8_0x8, kernels::PackedFormat::kQ4_0x8,
          kernels::PackedFormat::kF16x8, kernels::PackedFormat::kF32x8}) {
      if (options.pack_format == kernels::PackedFormatName(format)) {
        graph_options.pack.force_format = format;
        known = true;
      }
    }
    if (!known) return InvalidArgumentError("unknown packed format '" + options.pack_format + "'");
  }
  graph_options.calibration_dir = options.calibration_dir;
  REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<GraphBackend> graphs,
                           GraphBackend::Create(*model, graph_options));
  REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<ReferenceBackend> reference,
                           ReferenceBackend::Create(reference_model, capacity));

  AccuracyBenchResult result;
  result.model = options.model_path;
  result.reference = other ? options.reference_path : options.model_path;
  result.backend = graphs->name();
  result.int8_scheme = model::Int8SchemeName(options.pack.static_int8.scheme);
  if (options.pack.static_int8.scheme == model::Int8Scheme::kPerTensorShadow) {
    result.outlier_fraction = options.pack.static_int8.outlier_fraction;
  }
  result.tokens = static_cast<int>(tokens.size());
  double kl_sum = 0, top1_sum = 0, entropy_sum = 0;
  std::vector<float> last_graph, last_reference;
  for (size_t begin = 0; begin < tokens.size(); begin += static_cast<size_t>(options.step)) {
    const size_t end = std::min(tokens.size(), begin + static_cast<size_t>(options.step));
    const std::span<const int32_t> piece(tokens.data() + begin, end - begin);
    REPRISE_ASSIGN_OR_RETURN(std::span<const float> g, graphs->Append(piece));
    last_graph.assign(g.begin(), g.end());
    REPRISE_ASSIGN_OR_RETURN(std::span<const float> r, reference->Append(piece));
    last_reference.assign(r.begin(), r.end());
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
