#include "engine/activation_calibration.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

#include "base/file_util.h"
#include "graph/execution_context.h"
#include "graph/executor.h"
#include "kernels/matmul_scratch.h"
#include "model/graph_compiler.h"

namespace reprise::engine {

Result<model::ActivationCalibration> MeasureActivations(const model::PackedWeights& weights,
                                                        ThreadPool& pool,
                                                        const kernels::KernelSet& kernels,
                                                        std::span<const int32_t> tokens,
                                                        int chunk) {
  if (tokens.empty()) return InvalidArgumentError("activation calibration: no tokens");
  if (chunk < 1) return InvalidArgumentError("activation calibration: chunk must be positive");
  const model::ModelConfig& c = weights.config();
  model::CompileOptions options;
  options.observe_activations = true;
  REPRISE_ASSIGN_OR_RETURN(graph::CompiledGraph graph,
                           model::Compile(weights, graph::GraphKind::kPrefill, chunk, options));
  REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<graph::ExecutionContext> context,
                           graph::ExecutionContext::Create(graph));
  // A plain f16 cache for the whole text: [layer][kv head][slot][dim].
  const auto slots = static_cast<int64_t>(tokens.size());
  const int64_t layer_values = c.num_kv_heads * slots * c.head_dim;
  std::vector<uint16_t> k(static_cast<size_t>(c.num_layers * layer_values));
  std::vector<uint16_t> v(k.size());
  std::vector<int32_t> slot_positions(static_cast<size_t>(slots), -1);
  std::vector<graph::KvLayerView> layers;
  for (int l = 0; l < c.num_layers; ++l) {
    layers.push_back({k.data() + l * layer_values, v.data() + l * layer_values});
  }
  const graph::KvBinding binding{layers, slots, slot_positions.data(), c.num_kv_heads, c.head_dim};
  context->BindKv(binding);
  graph::Executor executor(pool, kernels);
  graph::ActivationStats stats;
  executor.set_activation_stats(&stats);
  std::vector<int32_t> positions;
  for (int64_t begin = 0; begin < slots; begin += chunk) {
    const int64_t end = std::min<int64_t>(slots, begin + chunk);
    positions.clear();
    for (int64_t p = begin; p < end; ++p) positions.push_back(static_cast<int32_t>(p));
    REPRISE_RETURN_IF_ERROR(context->SetInputs(
        tokens.subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin)), positions,
        positions, end));
    executor.Run(*context);
  }
  model::ActivationCalibration calibration;
  calibration.tokens = slots;
  calibration.channel_absmax = std::move(stats.channel_absmax);
  return calibration;
}

Result<model::ActivationCalibration> MeasureModelActivations(
    const LoadedModel& model, ThreadPool& pool, const kernels::KernelSet& kernels,
    std::string_view text, int64_t max_tokens, const model::PackOptions& pack) {
  model::PackOptions per_block = pack;
  per_block.static_int8 = {};
  per_block.activation_calibration = nullptr;
  REPRISE_ASSIGN_OR_RETURN(
      std::unique_ptr<model::PackedWeights> weights,
      model::PackedWeights::Create(model.file(), model.config(), pool, per_block));
  std::vector<int32_t> tokens =
      model.tokenizer().Encode(text, tokenizer::EncodeOptions{true, false});
  const auto limit = static_cast<size_t>(
      std::max<int64_t>(0, std::min<int64_t>(max_tokens, model.config().context_length)));
  if (tokens.size() > limit) tokens.resize(limit);
  REPRISE_ASSIGN_OR_RETURN(model::ActivationCalibration measured,
                           MeasureActivations(*weights, pool, kernels, tokens));
  char hex[24];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(model.fingerprint()));
  measured.model_fingerprint = hex;
  return measured;
}

Result<model::ActivationCalibration> CalibrateActivations(const LoadedModel& model,
                                                          std::string_view text, int64_t max_tokens,
                                                          int num_threads) {
  REPRISE_ASSIGN_OR_RETURN(
      std::unique_ptr<ThreadPool> pool,
      ThreadPool::Create(
          {.num_threads = num_threads, .thread_start = kernels::ReserveThreadMatMulScratch}));
  return MeasureModelActivations(model, *pool, kernels::BestKernels(), text, max_tokens);
}

std::string DescribeActivationCalibration(const model::ActivationCalibration& calibration,
                                          double outlier_fraction) {
  model::StaticInt8Options shadow;
  shadow.scheme = Int8Scheme::kShadow;
  shadow.outlier_fraction = outlier_fraction;
  const std::vector<model::ActivationQuant> plan = model::PlanStaticInt8(calibration, shadow);
  std::string out;
  char line[160];
  std::snprintf(line, sizeof(line), "%5s  %-10s %8s %11s %11s %9s %9s\n", "layer", "point",
                "channels", "max |x|", "median", "max/med", "outliers");
  out += line;
  for (size_t p = 0; p < calibration.channel_absmax.size(); ++p) {
    std::vector<float> sorted = calibration.channel_absmax[p];
    if (sorted.empty()) continue;
    std::sort(sorted.begin(), sorted.end());
    const float median = sorted[sorted.size() / 2];
    const float max = sorted.back();
    std::snprintf(line, sizeof(line), "%5zu  %-10s %8zu %11.4g %11.4g %9.1f %9zu\n",
                  p / model::kActivationPointsPerLayer,
                  model::ActivationPointName(
                      static_cast<model::ActivationPoint>(p % model::kActivationPointsPerLayer)),
                  sorted.size(), max, median, median > 0 ? max / median : 0.0,
                  plan[p].outliers.size());
    out += line;
  }
  return out;
}

std::string ActivationCalibrationToJson(const model::ActivationCalibration& calibration) {
  nlohmann::json j;
  j["format"] = "reprise-activation-calibration-1";
  j["model_fingerprint"] = calibration.model_fingerprint;
  j["tokens"] = calibration.tokens;
  j["channel_absmax"] = calibration.channel_absmax;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<model::ActivationCalibration> ActivationCalibrationFromJson(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return CorruptError("activation calibration: not a JSON object");
  }
  model::ActivationCalibration c;
  try {
    if (j.at("format").get<std::string>() != "reprise-activation-calibration-1") {
      return CorruptError("activation calibration: unknown format");
    }
    c.model_fingerprint = j.at("model_fingerprint").get<std::string>();
    c.tokens = j.at("tokens").get<int64_t>();
    c.channel_absmax = j.at("channel_absmax").get<std::vector<std::vector<float>>>();
  } catch (const std::exception& e) {
    return CorruptError(std::string("activation calibration: ") + e.what());
  }
  if (c.tokens < 1) return CorruptError("activation calibration: no tokens");
  for (const auto& point : c.channel_absmax) {
    for (float value : point) {
      if (!std::isfinite(value) || value < 0) {
        return CorruptError("activation calibration: a negative or non-finite range");
      }
    }
  }
  return c;
}

std::string ActivationCalibrationPath(const std::string& dir, uint64_t fingerprint) {
  char name[64];
  std::snprintf(name, sizeof(name), "activations-%016llx.json",
                static_cast<unsigned long long>(fingerprint));
  return dir + "/" + name;
}

Status SaveActivationCalibration(const model::ActivationCalibration& calibration,
                                 const std::string& path) {
  return WriteFileAtomically(path, ActivationCalibrationToJson(calibration));
}

Result<model::ActivationCalibration> LoadActivationCalibration(const std::string& path) {
  REPRISE_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return ActivationCalibrationFromJson(text);
}

}  // namespace reprise::engine
