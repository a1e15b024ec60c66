#include "tools/speed_bench.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/memory_usage.h"
#include "base/random.h"
#include "engine/graph_backend.h"
#include "engine/loaded_model.h"
#include "engine/reference_backend.h"
#include "graph/executor.h"

namespace reprise::tools {
namespace {

using engine::GraphBackend;
using engine::GraphBackendOptions;
using engine::InferenceBackend;
using engine::LoadedModel;
using engine::ReferenceBackend;

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::vector<int32_t> RandomTokens(int n, int vocab, uint64_t seed) {
  Random rng(seed);
  std::vector<int32_t> tokens(static_cast<size_t>(n));
  for (int32_t& t : tokens) t = static_cast<int32_t>(rng.NextBelow(static_cast<uint64_t>(vocab)));
  return tokens;
}

Result<std::unique_ptr<InferenceBackend>> MakeBackend(const LoadedModel& model,
                                                      const SpeedBenchOptions& options, int context,
                                                      int prefill_capacity) {
  if (options.use_reference) {
    REPRISE_ASSIGN_OR_RETURN(auto backend, ReferenceBackend::Create(model, context));
    return std::unique_ptr<InferenceBackend>(std::move(backend));
  }
  GraphBackendOptions graph_options;
  graph_options.context_tokens = context;
  graph_options.prefill_capacity = prefill_capacity;
  graph_options.num_threads = options.num_threads;
  graph_options.pack = options.pack;
  graph_options.calibration_dir = options.calibration_dir;
  graph_options.out_of_order_groups = options.out_of_order_groups;
  graph_options.out_of_order_window = options.out_of_order_window;
  REPRISE_ASSIGN_OR_RETURN(auto backend, GraphBackend::Create(model, graph_options));
  return std::unique_ptr<InferenceBackend>(std::move(backend));
}

}  // namespace

Result<SpeedBenchResult> RunSpeedBench(const SpeedBenchOptions& options) {
  if (options.repetitions < 1 || options.repetitions > 1000) {
    return InvalidArgumentError("repetitions must be in [1, 1000]");
  }
  for (int length : options.prefill_lengths) {
    if (length < 1 || length > (1 << 20)) {
      return InvalidArgumentError("prompt lengths must be in [1, 1048576]");
    }
  }
  if (options.run_decode && (options.decode_tokens < 1 || options.decode_tokens > (1 << 20))) {
    return InvalidArgumentError("decode tokens must be in [1, 1048576]");
  }
  if (options.prefill_capacity < 0) return InvalidArgumentError("prefill capacity must be >= 0");
  REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<LoadedModel> model,
                           LoadedModel::Load(options.model_path));
  const model::ModelConfig& c = model->config();
  SpeedBenchResult result;
  result.model = options.model_path;
  result.model_file_mb = model->file().file_size_bytes() / 1048576.0;
  const int vocab = c.vocab_size;
  const auto kv_mb = [&](int context) {
    return 2.0 * c.num_layers * c.num_kv_heads * c.head_dim * context * 2 / 1048576.0;
  };

  // Each figure takes a warm-up run and `repetitions` timed ones.
  const int64_t runs_per_figure = options.repetitions + 1;
  const int64_t num_runs =
      runs_per_figure *
      ((options.run_prefill ? static_cast<int64_t>(options.prefill_lengths.size()) : 0) +
       (options.run_decode ? 1 : 0));
  int64_t runs_done = 0;
  const kernels::KernelSet* graph_kernels = nullptr;  // of the profiled prefills
  int graph_threads = 0;
  std::map<int, graph::OpTimes> profiled_times;
  if (options.run_prefill) {
    for (int length : options.prefill_lengths) {
      const int capacity =
          options.prefill_capacity > 0 ? options.prefill_capacity : std::min(length, 128);
      REPRISE_ASSIGN_OR_RETURN(auto backend, MakeBackend(*model, options, length, capacity));
      result.backend = backend->name();
      result.num_threads = backend->num_threads();
      const std::vector<int32_t> prompt = RandomTokens(length, vocab, 42);
      std::vector<double> rates;
      const std::string detail = "pp" + std::to_string(length);
      for (int r = 0; r <= options.repetitions; ++r) {
        ReportProgress(options.progress, "measuring", runs_done++, num_runs, "runs", detail);
        backend->Truncate(0);
        const auto start = std::chrono::steady_clock::now();
        REPRISE_RETURN_IF_ERROR(backend->Append(prompt));
        const double seconds = Seconds(start);
        if (r > 0) rates.push_back(length / seconds);  // run 0 warms up
      }
      result.prefill_tokens_per_second[length] = Median(rates);
      result.kv_cache_mb = std::max(result.kv_cache_mb, kv_mb(length));
      if (auto* graphs = dynamic_cast<GraphBackend*>(backend.get())) {
        graph::OpTimes times;
        backend->Truncate(0);
        graphs->set_op_times(&times);
        Result<std::span<const float>> profiled = backend->Append(prompt);
        graphs->set_op_times(nullptr);
        if (!profiled.ok()) return profiled.error();
        const double total_ms = times.matmul_ms + times.attention_ms + times.other_ms;
        if (total_ms > 0) {
          PrefillProfile& p = result.prefill_profile[length];
          p.matmul_share = times.matmul_ms / total_ms;
          p.attention_share = times.attention_ms / total_ms;
          p.other_share = times.other_ms / total_ms;
          p.matmul_gmacs_per_second =
              times.matmul_ms > 0 ? times.matmul_macs / (times.matmul_ms * 1e6) : 0.0;
          p.int8_matmul_share = times.matmul_ms > 0 ? times.matmul_int8_ms / times.matmul_ms : 0.0;
          graph_kernels = &graphs->kernels();
          graph_threads = backend->num_threads();
          profiled_times[length] = times;
        }
      }
    }
  }
  if (options.run_decode) {
    const int context = options.decode_tokens + 1;
    REPRISE_ASSIGN_OR_RETURN(auto backend,
                             MakeBackend(*model, options, context, std::min(context, 32)));
    result.backend = backend->name();
    result.num_threads = backend->num_threads();
    const std::vector<int32_t> tokens = RandomTokens(options.decode_tokens, vocab, 7);
    std::vector<double> rates;
    const std::string detail = "tg" + std::to_string(options.decode_tokens);
    for (int r = 0; r <= options.repetitions; ++r) {
      ReportProgress(options.progress, "measuring", runs_done++, num_runs, "runs", detail);
      backend->Truncate(0);
      const auto start = std::chrono::steady_clock::now();
      for (int32_t t : tokens) {
        const int32_t one[] = {t};
        REPRISE_RETURN_IF_ERROR(backend->Append(one));
      }
      const double seconds = Seconds(start);
      if (r > 0) rates.push_back(options.decode_tokens / seconds);
    }
    result.decode_tokens_per_second = Median(rates);
    result.kv_cache_mb = std::max(result.kv_cache_mb, kv_mb(context));
  }
  ReportProgress(options.progress, "measuring", runs_done, num_runs, "runs");
  result.peak_rss_mb = PeakRssMb();  // before the peak's buffer
  if (options.measure_peak && graph_kernels != nullptr) {
    result.peak = MeasureMachinePeak(*graph_kernels, graph_threads);
    for (const auto& [length, times] : profiled_times) {
      if (times.matmul_ms <= 0) continue;
      const double float_macs = times.matmul_macs - times.matmul_int8_macs;
      const double ideal_ms = times.matmul_int8_macs / (result.peak->int8_gmacs_per_second * 1e6) +
                              float_macs / (result.peak->float_gmacs_per_second * 1e6);
      result.prefill_profile[length].matmul_peak_fraction = ideal_ms / times.matmul_ms;
    }
  }
  return result;
}

std::string SpeedBenchResult::ToJson() const {
  nlohmann::json j;
  j["model"] = model;
  j["backend"] = backend;
  j["threads"] = num_threads;
  nlohmann::json prefill = nlohmann::json::object();
  for (const auto& [length, tps] : prefill_tokens_per_second) {
    prefill[std::to_string(length)] = tps;
  }
  j["prefill_tps"] = prefill;
  nlohmann::json profile = nlohmann::json::object();
  for (const auto& [length, p] : prefill_profile) {
    profile[std::to_string(length)] = {{"matmul_share", p.matmul_share},
                                       {"attention_share", p.attention_share},
                                       {"other_share", p.other_share},
                                       {"matmul_gmacs_per_s", p.matmul_gmacs_per_second},
                                       {"int8_matmul_share", p.int8_matmul_share},
                                       {"matmul_peak_fraction", p.matmul_peak_fraction}};
  }
  j["prefill_profile"] = profile;
  if (peak.has_value()) {
    j["machine_peak"] = {{"kernels", peak->kernels},
                         {"threads", peak->threads},
                         {"int8_instruction", peak->int8_instruction},
                         {"int8_gmacs_per_s", peak->int8_gmacs_per_second},
                         {"float_instruction", peak->float_instruction},
                         {"float_gmacs_per_s", peak->float_gmacs_per_second},
                         {"read_gb_per_s", peak->read_gb_per_second}};
  }
  j["decode_tps"] = decode_tokens_per_second;
  j["peak_rss_mb"] = peak_rss_mb;
  j["model_file_mb"] = model_file_mb;
  j["kv_cache_mb"] = kv_cache_mb;
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string SpeedBenchResult::ToText() const {
  std::string s;
  char line[256];
  std::snprintf(line, sizeof(line), "model %s\nbackend %s\n", model.c_str(), backend.c_str());
  s += line;
  for (const auto& [length, tps] : prefill_tokens_per_second) {
    std::snprintf(line, sizeof(line), "prefill %5d tokens: %8.1f tok/s", length, tps);
    s += line;
    const auto profile = prefill_profile.find(length);
    if (profile != prefill_profile.end()) {
      const PrefillProfile& p = profile->second;
      std::snprintf(line, sizeof(line),
                    "   time: matmul %2.0f%%, attention %2.0f%%, other %2.0f%%; matmuls %.0f "
                    "GMAC/s",
                    100 * p.matmul_share, 100 * p.attention_share, 100 * p.other_share,
                    p.matmul_gmacs_per_second);
      s += line;
      if (p.matmul_peak_fraction > 0) {
        std::snprintf(line, sizeof(line), " = %.0f%% of peak", 100 * p.matmul_peak_fraction);
        s += line;
      }
    }
    s += "\n";
  }
  if (peak.has_value()) s += peak->ToText();
  if (decode_tokens_per_second > 0) {
    std::snprintf(line, sizeof(line), "decode:              %8.1f tok/s\n",
                  decode_tokens_per_second);
    s += line;
  }
  std::snprintf(line, sizeof(line),
                "peak RSS %.1f MiB (model file %.1f MiB + KV %.1f MiB = %.1f MiB; ratio %.2f)\n",
                peak_rss_mb, model_file_mb, kv_cache_mb, model_file_mb + kv_cache_mb,
                peak_rss_mb / (model_file_mb + kv_cache_mb));
  s += line;
  return s;
}

}  // namespace reprise::tools
