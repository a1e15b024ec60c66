#include "engine/calibrator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "base/cpu_features.h"
#include "base/file_util.h"
#include "base/random.h"
#include "engine/graph_backend.h"
#include "engine/guard_calibration.h"
#include "reprise/calibration.h"

namespace reprise::engine {
namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::map<int, double> DefaultLengths() {
  // A broad spread: short questions, chunks of 100-500 tokens, long documents.
  return {{16, 2}, {32, 2}, {64, 2}, {128, 3}, {200, 3}, {256, 3}, {384, 2}, {512, 2}, {1024, 1}};
}

}  // namespace

int ChooseCapacity(const std::map<int, double>& latency_ms, const std::map<int, double>& lengths) {
  int best = 0;
  double best_cost = INFINITY;
  for (const auto& [capacity, t] : latency_ms) {
    double cost = 0;
    for (const auto& [n, f] : lengths) cost += f * std::ceil(static_cast<double>(n) / capacity) * t;
    if (cost < best_cost) {
      best_cost = cost;
      best = capacity;
    }
  }
  return best;
}

Result<Calibration> Calibrate(const LoadedModel& model, const CalibrationOptions& options) {
  if (options.min_capacity < 1 || options.step < 1 || options.max_capacity < options.min_capacity) {
    return InvalidArgumentError("bad capacity range");
  }
  // Each point is the median of the repetitions: none would leave nothing to take it of.
  if (options.repetitions < 1 || options.repetitions > 1000) {
    return InvalidArgumentError("repetitions must be in [1, 1000], not " +
                                std::to_string(options.repetitions));
  }
  Calibration c;
  char hex[24];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(model.fingerprint()));
  c.model_fingerprint = hex;
  const int max = options.max_capacity;
  // One backend per capacity (graphs are fixed-shape); weights and threads are shared.
  std::shared_ptr<const model::PackedWeights> weights;
  std::shared_ptr<ThreadPool> pool;
  Random rng(5);
  const int vocab = model.config().vocab_size;
  int threads = 1;
  const int num_capacities = (max - options.min_capacity) / options.step + 1;
  for (int capacity = options.min_capacity; capacity <= max; capacity += options.step) {
    const std::string detail = "capacity " + std::to_string(capacity);
    ReportProgress(options.progress, "profiling", (capacity - options.min_capacity) / options.step,
                   num_capacities, "capacities", detail);
    GraphBackendOptions o;
    o.context_tokens = 2 * max;
    o.prefill_capacity = capacity;
    o.recompute_capacity = capacity;
    o.recompute_ratio = options.recompute_ratio;
    o.check_layer = std::min(1, model.config().num_layers - 1);
    o.num_threads = options.num_threads;
    o.strict_shapes = true;  // a call costs its full capacity, as on a static-graph NPU
    o.shared_weights = weights;
    o.shared_pool = pool;
    REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<GraphBackend> backend, GraphBackend::Create(model, o));
    weights = backend->shared_weights();
    pool = backend->shared_pool();
    threads = backend->num_threads();
    std::vector<int32_t> tokens(static_cast<size_t>(capacity)), positions(tokens.size());
    std::vector<uint8_t> forced(tokens.size(), 0);
    for (size_t i = 0; i < tokens.size(); ++i) {
      tokens[i] = static_cast<int32_t>(rng.NextBelow(static_cast<uint64_t>(vocab)));
      positions[i] = static_cast<int32_t>(i);
    }
    std::vector<double> prefill, recompute;
    for (int r = 0; r <= options.repetitions; ++r) {
      backend->Truncate(0);
      auto start = std::chrono::steady_clock::now();
      REPRISE_RETURN_IF_ERROR(backend->RunPrefill(tokens, positions, positions, capacity));
      const double p =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      // The cache now holds this call's KV: recompute the same tokens over it.
      start = std::chrono::steady_clock::now();
      REPRISE_RETURN_IF_ERROR(
          backend->RunRecompute(tokens, positions, positions, forced, capacity));
      const double s =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      if (r > 0) {  // the first run warms up
        prefill.push_back(p);
        recompute.push_back(s);
      }
    }
    c.prefill_ms[capacity] = Median(prefill);
    c.recompute_ms[capacity] = Median(recompute);
  }
  ReportProgress(options.progress, "profiling", num_capacities, num_capacities, "capacities");
  c.machine = MachineDescription(threads);
  c.prefill_capacity = ChooseCapacity(
      c.prefill_ms, options.prefill_lengths.empty() ? DefaultLengths() : options.prefill_lengths);
  c.recompute_capacity =
      ChooseCapacity(c.recompute_ms, options.recompute_lengths.empty() ? DefaultLengths()
                                                                       : options.recompute_lengths);
  return c;
}

}  // namespace reprise::engine

namespace reprise {

Result<CalibrationReport> CalibrateModel(const CalibrateOptions& options) {
  if (options.calibration_dir.empty()) {
    return InvalidArgumentError("no folder to keep the calibration in");
  }
  if (!(options.guard_margin >= 1.0 && options.guard_margin <= 1e6)) {
    return InvalidArgumentError("the guard margin must be in [1, 1e6]");
  }
  if (options.num_threads < 0) return InvalidArgumentError("threads must be >= 0");
  // engine::Calibrate checks these too, but only after the model is loaded and the folder made.
  engine::CalibrationOptions profile;
  if (options.max_capacity < profile.min_capacity || options.max_capacity > 65536) {
    return InvalidArgumentError("the largest capacity must be in [" +
                                std::to_string(profile.min_capacity) + ", 65536]");
  }
  if (options.repetitions < 1 || options.repetitions > 1000) {
    return InvalidArgumentError("repetitions must be in [1, 1000]");
  }
  REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<engine::LoadedModel> model,
                           engine::LoadedModel::Load(options.model_path));
  REPRISE_RETURN_IF_ERROR(CreateDirectories(options.calibration_dir));
  profile.max_capacity = options.max_capacity;
  profile.num_threads = options.num_threads;
  profile.repetitions = options.repetitions;
  profile.recompute_ratio = options.recompute_ratio;
  profile.prefill_lengths = options.prefill_lengths;
  profile.recompute_lengths = options.recompute_lengths;
  if (options.on_progress) {
    profile.progress = [&](const ProgressUpdate& update) {
      options.on_progress(update.done, update.total);
    };
  }
  REPRISE_ASSIGN_OR_RETURN(const engine::Calibration c, engine::Calibrate(*model, profile));
  CalibrationReport report;
  report.machine = c.machine;
  report.prefill_ms = c.prefill_ms;
  report.recompute_ms = c.recompute_ms;
  report.prefill_capacity = c.prefill_capacity;
  report.recompute_capacity = c.recompute_capacity;
  // Where an engine on as many threads looks for it (engine::ApplyCalibration).
  const int threads =
      options.num_threads > 0 ? options.num_threads : GetCpuFeatures().num_usable_cores;
  report.capacities_path =
      engine::CalibrationPath(options.calibration_dir, model->fingerprint(), threads);
  REPRISE_RETURN_IF_ERROR(engine::SaveCalibration(c, report.capacities_path));

  // The quality guard's threshold, measured with the chosen graphs, for each token selection
  // (the residual depends on which tokens a selection leaves); the report's figures are those
  // of the engine's default selection.
  engine::CompiledModelOptions compiled;
  compiled.num_threads = options.num_threads;
  REPRISE_ASSIGN_OR_RETURN(std::shared_ptr<const engine::CompiledModel> compiled_model,
                           engine::CompiledModel::Create(*model, compiled));
  engine::ReuseOptions reuse;
  reuse.compiled = compiled_model;
  reuse.num_threads = options.num_threads;
  reuse.recompute_ratio = options.recompute_ratio;
  reuse.prefill_capacity = c.prefill_capacity;
  reuse.recompute_capacity = c.recompute_capacity;
  reuse.context_tokens = std::min(model->config().context_length, 4096);
  engine::GuardCalibrationOptions guard_options;
  guard_options.margin = options.guard_margin;
  const TokenSelection default_selection = EngineOptions{}.token_selection;
  for (const TokenSelection selection : kTokenSelections) {
    reuse.selection = selection;
    REPRISE_ASSIGN_OR_RETURN(const engine::GuardCalibration guard,
                             engine::CalibrateGuard(*model, reuse, guard_options));
    const std::string path = engine::GuardCalibrationPath(options.calibration_dir, guard.key);
    REPRISE_RETURN_IF_ERROR(engine::SaveGuardCalibration(guard, path));
    report.guard_thresholds[TokenSelectionName(selection)] = guard.threshold;
    if (selection != default_selection) continue;
    report.guard_path = path;
    report.guard_samples = static_cast<int64_t>(guard.residuals.size());
    report.guard_p50 = guard.p50;
    report.guard_p90 = guard.p90;
    report.guard_p99 = guard.p99;
    report.guard_max = guard.max;
    report.guard_quantile = guard.quantile;
    report.guard_margin = guard.margin;
    report.guard_threshold = guard.threshold;
  }
  return report;
}

}  // namespace reprise
