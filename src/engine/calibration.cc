#include "engine/calibration.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include <xxhash.h>

#include "base/cpu_features.h"
#include "base/file_util.h"
#include "base/random.h"
#include "engine/graph_backend.h"

namespace reprise::engine {
namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double Interpolate(const std::map<int, double>& table, int capacity) {
  if (table.empty()) return capacity;
  auto hi = table.lower_bound(capacity);
  if (hi == table.end()) return std::prev(hi)->second * capacity / std::prev(hi)->first;
  if (hi->first == capacity || hi == table.begin()) return hi->second * capacity / hi->first;
  auto lo = std::prev(hi);
  const double t = static_cast<double>(capacity - lo->first) / (hi->first - lo->first);
  return lo->second + t * (hi->second - lo->second);
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

std::string MachineDescription(int num_threads) {
  std::string cpu = "unknown cpu";
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  }
  return cpu + ", " + std::to_string(num_threads) + " threads";
}

std::string CalibrationPath(const std::string& dir, uint64_t fingerprint, int num_threads) {
  const std::string machine = MachineDescription(num_threads);
  char name[96];
  std::snprintf(name, sizeof(name), "calibration-%016llx-%016llx.json",
                static_cast<unsigned long long>(fingerprint),
                static_cast<unsigned long long>(XXH3_64bits(machine.data(), machine.size())));
  return dir + "/" + name;
}

double Calibration::PrefillMs(int capacity) const { return Interpolate(prefill_ms, capacity); }
double Calibration::RecomputeMs(int capacity) const { return Interpolate(recompute_ms, capacity); }

std::string Calibration::ToJson() const {
  nlohmann::json j;
  j["model_fingerprint"] = model_fingerprint;
  j["machine"] = machine;
  nlohmann::json p = nlohmann::json::object(), r = nlohmann::json::object();
  for (const auto& [c, t] : prefill_ms) p[std::to_string(c)] = t;
  for (const auto& [c, t] : recompute_ms) r[std::to_string(c)] = t;
  j["prefill_ms"] = p;
  j["recompute_ms"] = r;
  j["prefill_capacity"] = prefill_capacity;
  j["recompute_capacity"] = recompute_capacity;
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<Calibration> Calibration::FromJson(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return CorruptError("calibration: not a JSON object");
  Calibration c;
  try {
    c.model_fingerprint = j.at("model_fingerprint").get<std::string>();
    c.machine = j.at("machine").get<std::string>();
    for (const auto& [k, v] : j.at("prefill_ms").items()) c.prefill_ms[std::stoi(k)] = v.get<double>();
    for (const auto& [k, v] : j.at("recompute_ms").items()) c.recompute_ms[std::stoi(k)] = v.get<double>();
    c.prefill_capacity = j.at("prefill_capacity").get<int>();
    c.recompute_capacity = j.at("recompute_capacity").get<int>();
  } catch (const std::exception& e) {
    return CorruptError(std::string("calibration: ") + e.what());
  }
  if (c.prefill_capacity <= 0 || c.recompute_capacity <= 0) {
    return CorruptError("calibration: capacities must be positive");
  }
  // Latency tables are divided by their capacities and summed: a zero capacity or a negative
  // or non-finite latency would turn every later schedule into nonsense.
  for (const auto* table : {&c.prefill_ms, &c.recompute_ms}) {
    if (table->empty()) return CorruptError("calibration: empty latency table");
    for (const auto& [capacity, ms] : *table) {
      if (capacity <= 0 || !std::isfinite(ms) || ms < 0) {
        return CorruptError("calibration: bad latency entry " + std::to_string(capacity));
      }
    }
  }
  return c;
}

Status SaveCalibration(const Calibration& calibration, const std::string& path) {
  return WriteFileAtomically(path, calibration.ToJson());
}

Result<Calibration> LoadCalibration(const std::string& path) {
  REPRISE_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return Calibration::FromJson(text);
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
      const double p = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      // The cache now holds this call's KV: recompute the same tokens over it.
      start = std::chrono::steady_clock::now();
      REPRISE_RETURN_IF_ERROR(backend->RunRecompute(tokens, positions, positions, forced, capacity));
      const double s = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
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
