// `reprise calibrate`: profiles the prefill and recompute graphs at capacities that are
// multiples of 32 and keeps the chosen Lp and Ls for this model and machine (docs/design.md §4).
// `reprise calibrate --activations`: measures the activation ranges the static INT8 schemes
// need (engine/activation_calibration.h) and keeps them for this model.
#include <cstdio>

#include "base/file_util.h"
#include "cli/command.h"
#include "cli/commands.h"
#include "cli/option_checks.h"
#include "cli/paths.h"
#include "cli/progress_bar.h"
#include "engine/activation_calibration.h"
#include "engine/sample_text.h"
#include "reprise/calibration.h"
#include "workload/named_workload.h"

namespace reprise::cli {
namespace {

class CalibrateCommand : public Command {
 public:
  CLI::App* Register(CLI::App& app) override {
    CLI::App* sub = app.add_subcommand(
        "calibrate", "Profile graph latencies and choose the prefill and recompute capacities");
    sub->add_option("-m,--model", model_path_, "GGUF model file")->required();
    sub->add_option("--workload", workload_,
                    "Take the length distribution from this workload (docqa, chat, skills); "
                    "default: a generic spread");
    sub->add_option("--data", data_dir_, "The shared data folder (for --workload)");
    sub->add_option("--max-capacity", options_.max_capacity, "Largest capacity profiled")
        ->default_val(512)
        ->check(IntegerIn(32, 4096));
    sub->add_option("-t,--threads", options_.num_threads, "Threads (0 = all cores)")
        ->default_val(0)
        ->check(IntegerIn(0, kMaxThreads));
    sub->add_option("-r,--repetitions", options_.repetitions, "Runs per point (median)")
        ->default_val(3)
        ->check(IntegerIn(1, 100));
    sub->add_flag("--activations", activations_,
                  "Only measure the activation ranges of the static INT8 schemes (--int8 "
                  "per-tensor / shadow) on a text and keep them for this model");
    sub->add_option("--text", text_path_,
                    "--activations: the calibration text (default: a built-in sample)")
        ->check(CLI::ExistingFile);
    sub->add_option("--activation-tokens", activation_tokens_,
                    "--activations: tokens of the text run, at most")
        ->default_val(512)
        ->check(IntegerIn(1, 1 << 20));
    sub->add_option("--outlier-fraction", outlier_fraction_,
                    "--activations: the shadow scheme's share of float channels, for the table")
        ->default_val(0.01)
        ->check(FiniteIn(0.0, 0.5));
    sub->add_option("--guard-margin", options_.guard_margin,
                    "Quality guard threshold = this x the 99th percentile of honest reuse's "
                    "deviation (lower: more fallbacks to full prefill, better quality)")
        ->default_val(CalibrateOptions{}.guard_margin)
        ->check(FiniteIn(1.0, 1e6));
    return sub;
  }

  int Run() override {
    if (activations_) {
      Result<std::unique_ptr<engine::LoadedModel>> model = engine::LoadedModel::Load(model_path_);
      if (!model.ok()) return PrintError("calibrate", model.error());
      return RunActivations(**model);
    }
    if (!workload_.empty()) {
      Status status = LengthsFromWorkload();
      if (!status.ok()) return PrintError("calibrate", status);
    }
    Result<std::string> cache_dir = FindCacheDir();
    if (!cache_dir.ok()) return PrintError("calibrate", cache_dir.error());
    options_.model_path = model_path_;
    options_.calibration_dir = *cache_dir;
    std::fprintf(stderr, "profiling capacities 32..%d (this takes a while)\n",
                 options_.max_capacity);
    ProgressBar progress(ProgressBar::ForStderr(/*json=*/false));
    const ProgressCallback bar = progress.Callback();
    options_.on_progress = [&bar](int64_t done, int64_t total) {
      ReportProgress(bar, "profiling", done, total, "capacities");
    };
    Result<CalibrationReport> c = CalibrateModel(options_);
    progress.Finish();
    if (!c.ok()) return PrintError("calibrate", c.error());
    std::printf("model %s\nmachine %s\n\n%9s %14s %16s\n", model_path_.c_str(), c->machine.c_str(),
                "capacity", "prefill ms", "recompute ms");
    for (const auto& [capacity, t] : c->prefill_ms) {
      std::printf("%9d %14.2f %16.2f\n", capacity, t, c->recompute_ms.at(capacity));
    }
    std::printf("\nchosen: prefill capacity Lp = %d, recompute capacity Ls = %d\nsaved %s\n",
                c->prefill_capacity, c->recompute_capacity, c->capacities_path.c_str());
    std::printf(
        "\nquality guard: residual deviation of honest reuse over %lld recompute calls: p50 %.3g, "
        "p90 %.3g, p99 %.3g, max %.3g (default token selection)\nthreshold %.3g (%.3g x p%.0f), on "
        "by default\nsaved %s\n",
        static_cast<long long>(c->guard_samples), c->guard_p50, c->guard_p90, c->guard_p99,
        c->guard_max, c->guard_threshold, c->guard_margin, c->guard_quantile * 100,
        c->guard_path.c_str());
    std::printf("thresholds by token selection (--selection):");
    for (const auto& [selection, threshold] : c->guard_thresholds) {
      std::printf(" %s %.3g", selection.c_str(), threshold);
    }
    std::printf("\n");
    return kExitOk;
  }

 private:
  int RunActivations(const engine::LoadedModel& model) {
    std::string text(engine::SampleText());
    if (!text_path_.empty()) {
      Result<std::string> read = ReadFileToString(text_path_);
      if (!read.ok()) return PrintError("calibrate", read.error());
      text = std::move(*read);
    }
    Result<model::ActivationCalibration> measured =
        engine::CalibrateActivations(model, text, activation_tokens_, options_.num_threads);
    if (!measured.ok()) return PrintError("calibrate", measured.error());
    Result<std::string> cache_dir = FindCacheDir();
    if (!cache_dir.ok()) return PrintError("calibrate", cache_dir.error());
    const std::string path = engine::ActivationCalibrationPath(*cache_dir, model.fingerprint());
    Status saved = engine::SaveActivationCalibration(*measured, path);
    if (!saved.ok()) return PrintError("calibrate", saved);
    std::printf("model %s\nactivation ranges over %lld tokens of %s\n\n%s\nsaved %s\n",
                model_path_.c_str(), static_cast<long long>(measured->tokens),
                text_path_.empty() ? "the built-in sample text" : text_path_.c_str(),
                engine::DescribeActivationCalibration(*measured, outlier_fraction_).c_str(),
                path.c_str());
    return kExitOk;
  }

  Status LengthsFromWorkload() {
    if (data_dir_.empty()) {
      std::optional<std::string> found = FindSharedDataDir();
      if (!found) return NotFoundError("no shared data folder (give --data)");
      data_dir_ = *found;
    }
    REPRISE_ASSIGN_OR_RETURN(std::unique_ptr<engine::LoadedModel> model,
                             engine::LoadedModel::Load(model_path_));
    const tokenizer::Tokenizer& tok = model->tokenizer();
    workload::WorkloadOptions wl;
    wl.data_dir = data_dir_;
    wl.num_queries = 50;
    wl.count_tokens = [&tok](std::string_view text) {
      return static_cast<int>(tok.Encode(text, tokenizer::EncodeOptions{false, false}).size());
    };
    REPRISE_ASSIGN_OR_RETURN(workload::Workload work, workload::BuildNamedWorkload(workload_, wl));
    // Reused pieces are context segments; new pieces are the questions (and, cold, everything).
    for (const workload::Request& r : work.requests) {
      for (const workload::Segment& s : r.segments) {
        const int n = std::max(1, wl.count_tokens(s.text));
        if (workload::IsContextRole(s.role))
          options_.recompute_lengths[n] += 1;
        else
          options_.prefill_lengths[n] += 1;
      }
    }
    return Status::Ok();
  }

  std::string model_path_, workload_, data_dir_, text_path_;
  bool activations_ = false;
  int64_t activation_tokens_ = 512;
  double outlier_fraction_ = 0.01;
  CalibrateOptions options_;
};

}  // namespace

std::unique_ptr<Command> NewCalibrateCommand() { return std::make_unique<CalibrateCommand>(); }

}  // namespace reprise::cli
