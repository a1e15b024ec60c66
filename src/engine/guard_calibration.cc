#include "engine/guard_calibration.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "base/logging.h"
#include "base/random.h"
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
  ReuseOptions blend = reuse;
  blend.method = ReuseMethod::kBlend;
  blend.guard_deviation = 0.0;
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
    Result<PrefillReport> warmed = session->Prefill(std::span(&doc, 1));
    if (!warmed.ok()) return warmed.error();
    Result<double> stored = session->StoreChunks();
    if (!stored.ok()) return stored.error();
  }
  GuardCalibration out;
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
    REPRISE_ASSIGN_OR_RETURN(PrefillReport report, session->Prefill(prompt));
    // A call that left no reused row (all recomputed, or none) has nothing to guard: 0.
    for (const double r : report.residual_deviations) {
      if (r > 0) out.residuals.push_back(r);
    }
  }
  if (out.residuals.empty()) {
    return InvalidArgumentError("guard calibration: no recompute call ran");
  }
  std::sort(out.residuals.begin(), out.residuals.end());
  out.p50 = Quantile(out.residuals, 0.5);
  out.p90 = Quantile(out.residuals, 0.9);
  out.p99 = Quantile(out.residuals, 0.99);
  out.max = out.residuals.back();
  out.quantile = options.quantile;
  out.margin = options.margin;
  out.threshold = options.margin * Quantile(out.residuals, options.quantile);
  if (!(out.threshold > 0)) {
    return InvalidArgumentError("guard calibration: every residual was 0");
  }
  return out;
}

std::string GuardCalibration::ToJson() const {
  nlohmann::json j;
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
  if (!std::isfinite(c.threshold) || c.threshold <= 0 || c.threshold > 1e6) {
    return CorruptError("guard calibration: bad threshold");
  }
  return c;
}

std::string GuardCalibrationPath(const std::string& dir, uint64_t fingerprint,
                                 graph::SelectionKey selection) {
  char name[96];
  std::snprintf(name, sizeof(name), "guard-%016llx-%s.json",
                static_cast<unsigned long long>(fingerprint), SelectionName(selection));
  return dir + "/" + name;
}

Status SaveGuardCalibration(const GuardCalibration& calibration, const std::string& path) {
  return WriteFileAtomically(path, calibration.ToJson());
}

Result<GuardCalibration> LoadGuardCalibration(const std::string& path) {
  REPRISE_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return GuardCalibration::FromJson(text);
}

std::optional<GuardCalibration> ResolveQualityGuard(const LoadedModel& model,
                                                    const std::string& dir, bool measure_if_missing,
                                                    ReuseOptions* reuse) {
  if (reuse->guard_deviation != kGuardCalibrated) return std::nullopt;
  reuse->guard_deviation = 0.0;  // off unless a calibration says otherwise
  if (dir.empty()) return std::nullopt;
  const std::string path = GuardCalibrationPath(dir, model.fingerprint(), reuse->selection);
  std::error_code ignored;
  std::filesystem::create_directories(dir, ignored);
  Result<GuardCalibration> calibration = LoadGuardCalibration(path);
  if (!calibration.ok() && measure_if_missing) {
    calibration = CalibrateGuard(model, *reuse);
    if (calibration.ok()) {
      Status saved = SaveGuardCalibration(*calibration, path);
      if (!saved.ok()) {
        REPRISE_LOG(kWarning) << "the quality guard's calibration was not saved: "
                              << saved.ToString();
      }
    } else {
      REPRISE_LOG(kWarning) << "quality guard off: " << calibration.error().ToString();
    }
  }
  if (!calibration.ok()) return std::nullopt;
  reuse->guard_deviation = calibration->threshold;
  return std::move(calibration).value();
}

}  // namespace reprise::engine
