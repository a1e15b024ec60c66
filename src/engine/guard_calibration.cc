#include "engine/guard_calibration.h"

#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "base/check.h"
#include "base/file_util.h"
#include "base/logging.h"
#include "base/mutex.h"
#include "base/random.h"
#include "engine/compiled_model.h"
#include "engine/sample_text.h"
#include "kv/memory_chunk_cache.h"

namespace reprise::engine {
namespace {

// The sample text's sentences, grouped into `n` documents of about equal length, using at
// most `max_tokens` tokens in all.
std::vector<std::string> Documents(const tokenizer::Tokenizer& tok, int n, int max_tokens) {
  const std::string_view text = SampleText();
  std::vector<std::string> sentences;
  size_t begin = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if ((text[i] == '.' || text[i] == '!' || text[i] == '?') &&
        (i + 1 == text.size() || text[i + 1] == ' ' || text[i + 1] == '\n')) {
      sentences.emplace_back(text.substr(begin, i + 1 - begin));
      begin = i + 1;
    }
  }
  if (begin < text.size()) sentences.emplace_back(text.substr(begin));
  // Keep the sentences that fit the token budget, then cut them into n groups.
  std::vector<std::string> kept;
  int tokens = 0;
  for (std::string& s : sentences) {
    const int t = static_cast<int>(tok.Encode(s, tokenizer::EncodeOptions{false, false}).size());
    if (tokens + t > max_tokens) break;
    tokens += t;
    kept.push_back(std::move(s));
  }
  std::vector<std::string> docs;
  const size_t per_doc = std::max<size_t>(1, kept.size() / static_cast<size_t>(std::max(n, 1)));
  for (size_t i = 0; i < kept.size(); i += per_doc) {
    std::string doc;
    for (size_t j = i; j < std::min(kept.size(), i + per_doc); ++j) doc += kept[j];
    if (docs.size() == static_cast<size_t>(n)) {
      docs.back() += doc;  // the remainder joins the last document
    } else {
      docs.push_back(std::move(doc));
    }
  }
  return docs;
}

double Quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0.0;
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(sorted.size() - 1, lo + 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace

Result<GuardCalibration> CalibrateGuard(const LoadedModel& model, const ReuseOptions& reuse,
                                        const GuardCalibrationOptions& options) {
  if (options.num_documents < 2 || options.num_orders < 1 || !(options.quantile > 0) ||
      !(options.quantile <= 1) || !(options.margin >= 1)) {
    return InvalidArgumentError("guard calibration: bad options");
  }
  if (reuse.compiled == nullptr) {
    return InvalidArgumentError("guard calibration: no compiled model to measure");
  }
  ReuseOptions blend = reuse;
  blend.method = ReuseMethod::kBlend;
  blend.guard_deviation = 0.0;
  blend.decode_batcher = nullptr;  // prefills only
  const PromptSegment question{"question", "\nWhat happened next?", false, {}};
  const int budget = std::min(blend.context_tokens, model.config().context_length) - 64;
  const std::vector<std::string> texts =
      Documents(model.tokenizer(), options.num_documents, std::min(budget, 1024));
  if (texts.size() < 2) {
    return InvalidArgumentError("guard calibration: the context is too short for the text");
  }
  std::vector<PromptSegment> documents;
  for (const std::string& t : texts) documents.push_back({"document", t, false, {}});

  kv::MemoryChunkCache cache(int64_t{4} << 30);
  REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<ReuseSession> session,
                           ReuseSession::Create(model, blend, &cache));
  for (const PromptSegment& doc : documents) {  // each cached alone
    Result<PrefillResult> warmed = session->Prefill(std::span(&doc, 1));
    if (!warmed.ok()) return warmed.error();
    Result<double> stored = session->StoreChunks(*warmed);
    if (!stored.ok()) return stored.error();
  }
  GuardCalibration out;
  int recompute_calls = 0;
  Random random(options.seed);
  std::vector<size_t> order(documents.size());
  for (int k = 0; k < options.num_orders; ++k) {
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    if (k == 0) {
      std::reverse(order.begin(), order.end());
    } else {
      for (size_t i = order.size() - 1; i > 0; --i) {
        std::swap(order[i], order[random.NextBelow(i + 1)]);
      }
    }
    std::vector<PromptSegment> prompt;
    for (size_t i : order) prompt.push_back(documents[i]);
    prompt.push_back(question);
    REPRISE_ASSIGN_OR_RETURN(const PrefillResult prefill, session->Prefill(prompt));
    const PrefillReport& report = prefill.report;
    // A call that left no reused row (all recomputed, or none) has nothing to guard: 0.
    for (const double r : report.residual_deviations) {
      ++recompute_calls;
      if (r > 0) out.residuals.push_back(r);
    }
  }
  if (recompute_calls == 0) {
    return InvalidArgumentError("guard calibration: no recompute call ran");
  }
  out.key = GuardCalibrationKey(reuse);
  out.quantile = options.quantile;
  out.margin = options.margin;
  if (out.residuals.empty()) return out;  // every reused token recomputed: nothing to guard
  std::sort(out.residuals.begin(), out.residuals.end());
  out.p50 = Quantile(out.residuals, 0.5);
  out.p90 = Quantile(out.residuals, 0.9);
  out.p99 = Quantile(out.residuals, 0.99);
  out.max = out.residuals.back();
  out.threshold = options.margin * Quantile(out.residuals, options.quantile);
  if (!(out.threshold > 0)) {
    return InvalidArgumentError("guard calibration: every residual was 0");
  }
  return out;
}

std::string GuardCalibration::ToJson() const {
  nlohmann::json j;
  j["key"] = key;
  j["threshold"] = threshold;
  j["quantile"] = quantile;
  j["margin"] = margin;
  j["p50"] = p50;
  j["p90"] = p90;
  j["p99"] = p99;
  j["max"] = max;
  j["residuals"] = residuals;
  return j.dump(2);
}

Result<GuardCalibration> GuardCalibration::FromJson(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return CorruptError("guard calibration: not a JSON object");
  }
  GuardCalibration c;
  try {
    c.key = j.at("key").get<std::string>();
    c.threshold = j.at("threshold").get<double>();
    c.quantile = j.at("quantile").get<double>();
    c.margin = j.at("margin").get<double>();
    c.p50 = j.at("p50").get<double>();
    c.p90 = j.at("p90").get<double>();
    c.p99 = j.at("p99").get<double>();
    c.max = j.at("max").get<double>();
    c.residuals = j.at("residuals").get<std::vector<double>>();
  } catch (const std::exception& e) {
    return CorruptError(std::string("guard calibration: ") + e.what());
  }
  // 0 only when no reused token was left (nothing to guard).
  if (!std::isfinite(c.threshold) || c.threshold < 0 || c.threshold > 1e6 ||
      (c.threshold == 0) != c.residuals.empty()) {
    return CorruptError("guard calibration: bad threshold");
  }
  return c;
}

std::string GuardCalibrationKey(const ReuseOptions& reuse) {
  REPRISE_CHECK(reuse.compiled != nullptr);
  const int num_layers = reuse.compiled->config().num_layers;
  char key[768];
  std::snprintf(
      key, sizeof(key),
      "kv %016llx; selection %s, probe %d; r %.6g; capacities %d/%d; check layer %d%s%s; "
      "forced first %d; min deviation %.6g, stable %.6g over %d, repair %d; chunks %d %s; "
      "match %d, %d candidates; scheduler %s",
      static_cast<unsigned long long>(reuse.compiled->kv_fingerprint()),
      TokenSelectionName(reuse.selection),
      reuse.selection == TokenSelection::kDeviation ? 0 : reuse.query_probe_tokens,
      reuse.recompute_ratio, reuse.prefill_capacity, reuse.recompute_capacity,
      std::min(reuse.check_layer, num_layers - 1), reuse.deviation_includes_v ? ", K+V" : "",
      reuse.refresh_check_layer ? ", refreshed" : "", reuse.force_first_tokens,
      reuse.recompute_min_deviation, reuse.stable_min_deviation, reuse.stable_context_tokens,
      reuse.stable_repair_tokens, reuse.chunk_tokens, ChunkingModeName(reuse.chunking),
      reuse.min_match_tokens, reuse.max_candidates, ScheduleStrategyName(reuse.scheduler));
  return key;
}

std::string GuardCalibrationPath(const std::string& dir, std::string_view key) {
  char name[64];
  std::snprintf(name, sizeof(name), "guard-%016llx.json",
                static_cast<unsigned long long>(XXH3_64bits(key.data(), key.size())));
  return dir + "/" + name;
}

Status SaveGuardCalibration(const GuardCalibration& calibration, const std::string& path) {
  return WriteFileAtomically(path, calibration.ToJson());
}

Result<GuardCalibration> LoadGuardCalibration(const std::string& path) {
  REPRISE_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return GuardCalibration::FromJson(text);
}

Status ResolveQualityGuard(const LoadedModel& model, const std::string& dir, ReuseOptions* reuse) {
  if (reuse->guard_deviation != kGuardCalibrated) return Status::Ok();
  const std::string key = GuardCalibrationKey(*reuse);
  // Thresholds measured or read in this process, by key: engines and sessions of the same
  // settings measure once.
  static Mutex mutex;
  static std::map<std::string, double> known;
  MutexLock lock(mutex);  // one measurement at a time, each once
  if (auto it = known.find(key); it != known.end()) {
    reuse->guard_deviation = it->second;
    return Status::Ok();
  }
  const std::string path = dir.empty() ? std::string() : GuardCalibrationPath(dir, key);
  Result<GuardCalibration> calibration = NotFoundError("not measured");
  if (!path.empty()) {
    calibration = LoadGuardCalibration(path);
    if (calibration.ok() && calibration->key != key) {
      calibration = NotFoundError("the kept calibration is of other settings");
    }
  }
  if (!calibration.ok()) {
    REPRISE_LOG(kInfo) << "measuring blend's quality guard for " << key;
    calibration = CalibrateGuard(model, *reuse);
    if (calibration.ok() && !path.empty()) {
      std::error_code ignored;
      std::filesystem::create_directories(dir, ignored);
      Status saved = SaveGuardCalibration(*calibration, path);
      if (!saved.ok()) {
        REPRISE_LOG(kWarning) << "the quality guard's calibration was not saved: "
                              << saved.ToString();
      }
    }
  }
  if (!calibration.ok()) {
    return InvalidArgumentError(
        "blend's quality guard cannot be calibrated at these settings (" +
        calibration.error().message() +
        "): give it a threshold (EngineOptions::quality_guard, --guard), or 0 to run "
        "blend unguarded");
  }
  if (calibration->threshold == 0) {
    REPRISE_LOG(kInfo) << "quality guard: blend recomputes every reused token at these settings; "
                          "nothing to guard";
  }
  known.emplace(key, calibration->threshold);
  reuse->guard_deviation = calibration->threshold;
  return Status::Ok();
}

}  // namespace reprise::engine
