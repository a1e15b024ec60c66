#include "tools/speed_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/memory_usage.h"
#include "base/random.h"

namespace reprise::tools {
namespace {

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

// An engine whose context holds `context` tokens, computing nothing but what it is given: no
// reuse, no caches.
Result<std::unique_ptr<Engine>> MakeEngine(const SpeedBenchOptions& options, int context,
                                           int prefill_capacity) {
  EngineOptions engine;
  engine.model_path = options.model_path;
  engine.context_tokens = context;
  engine.prefill_capacity = prefill_capacity;
  engine.num_threads = options.num_threads;
  engine.use_reference = options.use_reference;
  engine.reuse = ReuseMethod::kNone;
  engine.int8_scheme = options.int8_scheme;
  engine.outlier_fraction = options.outlier_fraction;
  engine.calibration_dir = options.calibration_dir;
  engine.out_of_order_groups = options.out_of_order_groups;
  engine.out_of_order_window = options.out_of_order_window;
  return Engine::Create(engine);
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
  REPRISE_ASSIGN_OR_RETURN(const ModelInfo info, ReadModelInfo(options.model_path));
  SpeedBenchResult result;
  result.model = options.model_path;
  result.model_file_mb = static_cast<double>(info.file_bytes) / 1048576.0;
  const int vocab = info.vocab_size;
  // K and V in f16 for every layer: from the hyper-parameters the engine reports.
  double kv_bytes_per_token = 0;

  // Each figure takes a warm-up run and `repetitions` timed ones.
  const int64_t runs_per_figure = options.repetitions + 1;
  const int64_t num_runs =
      runs_per_figure *
      ((options.run_prefill ? static_cast<int64_t>(options.prefill_lengths.size()) : 0) +
       (options.run_decode ? 1 : 0));
  int64_t runs_done = 0;
  std::map<int, OpProfile> profiles;
  const auto note_engine = [&](const Engine& engine) {
    result.backend = engine.backend_name();
    result.num_threads = engine.num_threads();
    result.packed_weights_mb = static_cast<double>(engine.Stats().weights_bytes) / 1048576.0;
    kv_bytes_per_token = static_cast<double>(engine.kv_bytes_per_token());
  };
  if (options.run_prefill) {
    for (int length : options.prefill_lengths) {
      const int capacity =
          options.prefill_capacity > 0 ? options.prefill_capacity : std::min(length, 128);
      REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine,
                               MakeEngine(options, length, capacity));
      note_engine(*engine);
      REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, engine->OpenSession());
      const std::vector<int32_t> prompt = RandomTokens(length, vocab, 42);
      std::vector<double> rates;
      const std::string detail = "pp" + std::to_string(length);
      for (int r = 0; r <= options.repetitions; ++r) {
        ReportProgress(options.progress, "measuring", runs_done++, num_runs, "runs", detail);
        REPRISE_RETURN_IF_ERROR(session->Truncate(0));
        const auto start = std::chrono::steady_clock::now();
        REPRISE_RETURN_IF_ERROR(session->Evaluate(prompt));
        const double seconds = Seconds(start);
        if (r > 0) rates.push_back(length / seconds);  // run 0 warms up
      }
      result.prefill_tokens_per_second[length] = Median(rates);
      result.kv_cache_mb = std::max(result.kv_cache_mb, kv_bytes_per_token * length / 1048576.0);
      if (options.use_reference) continue;  // nothing to profile
      OpProfile times;
      REPRISE_RETURN_IF_ERROR(session->Truncate(0));
      REPRISE_RETURN_IF_ERROR(session->Evaluate(prompt, &times));
      const double total_ms = times.matmul_ms + times.attention_ms + times.other_ms;
      if (total_ms > 0) {
        PrefillProfile& p = result.prefill_profile[length];
        p.matmul_share = times.matmul_ms / total_ms;
        p.attention_share = times.attention_ms / total_ms;
        p.other_share = times.other_ms / total_ms;
        p.matmul_gmacs_per_second =
            times.matmul_ms > 0 ? times.matmul_macs / (times.matmul_ms * 1e6) : 0.0;
        p.int8_matmul_share = times.matmul_ms > 0 ? times.matmul_int8_ms / times.matmul_ms : 0.0;
        profiles[length] = times;
      }
    }
  }
  if (options.run_decode) {
    const int context = options.decode_tokens + 1;
    REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine,
                             MakeEngine(options, context, std::min(context, 32)));
    note_engine(*engine);
    REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, engine->OpenSession());
    const std::vector<int32_t> tokens = RandomTokens(options.decode_tokens, vocab, 7);
    std::vector<double> rates;
    const std::string detail = "tg" + std::to_string(options.decode_tokens);
    for (int r = 0; r <= options.repetitions; ++r) {
      ReportProgress(options.progress, "measuring", runs_done++, num_runs, "runs", detail);
      REPRISE_RETURN_IF_ERROR(session->Truncate(0));
      const auto start = std::chrono::steady_clock::now();
      for (size_t i = 0; i < tokens.size(); ++i) {
        REPRISE_RETURN_IF_ERROR(session->Evaluate(&tokens[i], 1));
      }
      const double seconds = Seconds(start);
      if (r > 0) rates.push_back(options.decode_tokens / seconds);
    }
    result.decode_tokens_per_second = Median(rates);
    result.kv_cache_mb = std::max(result.kv_cache_mb, kv_bytes_per_token * context / 1048576.0);
  }
  ReportProgress(options.progress, "measuring", runs_done, num_runs, "runs");
  result.peak_rss_mb = PeakRssMb();  // before the peak's buffer
  if (options.measure_peak && !profiles.empty()) {
    // On the kernels and threads the profiled graphs ran with: an engine made as theirs were.
    REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, MakeEngine(options, 1, 1));
    result.peak = engine->MeasureMachinePeak();
    for (const auto& [length, times] : profiles) {
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
  if (peak.has_value()) s += MachinePeakText(*peak);
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

std::string MachinePeakText(const MachinePeak& peak) {
  char line[256];
  std::snprintf(line, sizeof(line),
                "peak on %d thread%s (%s kernels): int8 %.0f GMAC/s (%s), float %.0f GMAC/s "
                "(%s), memory read %.1f GB/s\n",
                peak.threads, peak.threads == 1 ? "" : "s", peak.kernels.c_str(),
                peak.int8_gmacs_per_second, peak.int8_instruction.c_str(),
                peak.float_gmacs_per_second, peak.float_instruction.c_str(),
                peak.read_gb_per_second);
  return line;
}

}  // namespace reprise::tools
