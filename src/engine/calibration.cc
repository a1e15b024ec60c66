#include "engine/calibration.h"

#include <xxhash.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/cpu_features.h"
#include "base/file_util.h"

namespace reprise::engine {
namespace {

double Interpolate(const std::map<int, double>& table, int capacity) {
  if (table.empty()) return capacity;
  auto hi = table.lower_bound(capacity);
  if (hi == table.end()) return std::prev(hi)->second * capacity / std::prev(hi)->first;
  if (hi->first == capacity || hi == table.begin()) return hi->second * capacity / hi->first;
  auto lo = std::prev(hi);
  const double t = static_cast<double>(capacity - lo->first) / (hi->first - lo->first);
  return lo->second + t * (hi->second - lo->second);
}

}  // namespace

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

bool ApplyCalibration(const std::string& dir, uint64_t fingerprint, ReuseOptions* reuse) {
  if (dir.empty()) return false;
  const int threads =
      reuse->num_threads > 0 ? reuse->num_threads : GetCpuFeatures().num_usable_cores;
  Result<Calibration> calibration = LoadCalibration(CalibrationPath(dir, fingerprint, threads));
  if (!calibration.ok()) return false;
  reuse->prefill_capacity = calibration->prefill_capacity;
  reuse->recompute_capacity = calibration->recompute_capacity;
  reuse->prefill_latency_ms = calibration->PrefillMs(calibration->prefill_capacity);
  reuse->recompute_latency_ms = calibration->RecomputeMs(calibration->recompute_capacity);
  return true;
}

double ComputeMsPerToken(const ReuseOptions& reuse) {
  if (reuse.prefill_latency_ms <= 0 || reuse.prefill_capacity <= 0) return 0.0;
  return reuse.prefill_latency_ms / reuse.prefill_capacity;
}

}  // namespace reprise::engine
