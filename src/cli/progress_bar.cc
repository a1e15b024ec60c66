// Rendering of progress on stderr (see progress_bar.h).
#include "cli/progress_bar.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

namespace reprise::cli {
namespace {

// A rate with about three significant digits: "1.23", "45.6", "789".
std::string FormatRate(double per_second) {
  char text[32];
  const int decimals = per_second >= 100 ? 0 : per_second >= 10 ? 1 : 2;
  std::snprintf(text, sizeof(text), "%.*f", decimals, per_second);
  return text;
}

int StderrColumns() {
  winsize size{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 20) return size.ws_col;
  return 100;
}

}  // namespace

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) seconds = 0;
  const int64_t s = static_cast<int64_t>(std::llround(seconds));
  char text[32];
  if (s < 60) {
    std::snprintf(text, sizeof(text), "%llds", static_cast<long long>(s));
  } else if (s < 3600) {
    std::snprintf(text, sizeof(text), "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  } else {
    std::snprintf(text, sizeof(text), "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60));
  }
  return text;
}

ProgressStyle StderrProgressStyle(bool json) {
  if (json) return ProgressStyle::kSilent;
  return ::isatty(STDERR_FILENO) ? ProgressStyle::kBar : ProgressStyle::kLines;
}

ProgressBarOptions ProgressBar::ForStderr(bool json) {
  ProgressBarOptions options;
  options.style = StderrProgressStyle(json);
  if (options.style == ProgressStyle::kBar) options.max_columns = StderrColumns() - 1;
  return options;
}

ProgressBar::ProgressBar(ProgressBarOptions options) : options_(std::move(options)) {}

ProgressBar::~ProgressBar() { Finish(); }

double ProgressBar::Now() const {
  if (options_.clock_seconds) return options_.clock_seconds();
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void ProgressBar::Write(std::string_view text) {
  if (options_.write) {
    options_.write(text);
    return;
  }
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

ProgressCallback ProgressBar::Callback() {
  return [this](const ProgressUpdate& update) { Update(update); };
}

void ProgressBar::StartStage(const ProgressUpdate& update, double now) {
  Finish();
  has_stage_ = true;
  stage_done_ = false;
  stage_.assign(update.stage);
  unit_.assign(update.unit);
  stage_start_s_ = now;
  last_output_s_ = now;
  last_line_percent_step_ = 0;
}

std::string ProgressBar::Describe(const ProgressUpdate& update, double now, bool is_final) const {
  const double elapsed_s = std::max(0.0, now - stage_start_s_);
  std::vector<std::string> parts;
  // Work that counts nothing (no total, nothing done) shows only the time it has taken.
  if (update.total > 0 || update.done > 0) {
    std::string count = std::to_string(update.done);
    if (update.total > 0) count += "/" + std::to_string(update.total);
    if (!update.unit.empty()) count += " " + std::string(update.unit);
    if (update.total > 0) {
      count += " (" + std::to_string(update.done * 100 / update.total) + "%)";
    }
    parts.push_back(count);
  }
  if (update.done > 0 && elapsed_s > 0 && update.total != 1) {  // no rate for one unit
    parts.push_back(FormatRate(update.done / elapsed_s) + " " +
                    std::string(update.unit.empty() ? "units" : update.unit) + "/s");
  }
  if (is_final) {
    parts.push_back(FormatDuration(elapsed_s));
  } else if (update.total > 0 && update.done > 0 && elapsed_s > 0) {
    const double left_s = (update.total - update.done) * elapsed_s / update.done;
    parts.push_back("ETA " + FormatDuration(left_s));
  } else {
    parts.push_back(FormatDuration(elapsed_s) + " so far");
  }
  if (!update.detail.empty() && !is_final) parts.emplace_back(update.detail);
  std::string text;
  for (const std::string& part : parts) text += (text.empty() ? "" : ", ") + part;
  return text;
}

void ProgressBar::DrawBar(const ProgressUpdate& update, double now) {
  const bool is_final = update.total > 0 && update.done >= update.total;
  std::string line = "\r" + std::string(update.stage) + " ";
  if (update.total > 0) {
    const int cells = std::max(1, options_.bar_cells);
    const int full = static_cast<int>(std::min<int64_t>(cells, update.done * cells / update.total));
    line += "[" + std::string(static_cast<size_t>(full), '#') +
            std::string(static_cast<size_t>(cells - full), '.') + "] ";
  }
  line += Describe(update, now, is_final);
  const size_t max_length = static_cast<size_t>(std::max(20, options_.max_columns)) + 1;  // + '\r'
  if (line.size() > max_length) line.resize(max_length);
  line += "\x1b[K";  // clear what a longer earlier line left
  if (is_final) line += "\n";
  Write(line);
  bar_line_open_ = !is_final;
  last_output_s_ = now;
}

void ProgressBar::WriteLine(const ProgressUpdate& update, double now, bool is_final) {
  Write(std::string(update.stage) + ": " + Describe(update, now, is_final) + "\n");
  last_output_s_ = now;
}

void ProgressBar::Update(const ProgressUpdate& update) {
  if (options_.style == ProgressStyle::kSilent) return;
  const double now = Now();
  // A stage that starts again under the same name (its count went down) is a new stage.
  const bool is_new_stage = !has_stage_ || update.stage != stage_ || update.done < done_;
  if (is_new_stage) StartStage(update, now);
  done_ = update.done;
  total_ = update.total;
  detail_.assign(update.detail);
  const bool is_final = update.total > 0 && update.done >= update.total;
  if (stage_done_) return;  // a repeated last update
  if (is_final) stage_done_ = true;
  if (options_.style == ProgressStyle::kBar) {
    if (is_new_stage || is_final || now - last_output_s_ >= options_.redraw_interval_s) {
      DrawBar(update, now);
    }
    return;
  }
  int64_t percent_step = 0;
  if (update.total > 0 && options_.line_percent_step > 0) {
    percent_step = update.done * 100 / update.total / options_.line_percent_step;
  }
  const double since_s = now - last_output_s_;
  const bool passed_step = percent_step > last_line_percent_step_;
  if (is_new_stage || is_final || since_s >= options_.line_interval_s ||
      (passed_step && since_s >= options_.min_line_interval_s)) {
    WriteLine(update, now, is_final);
    last_line_percent_step_ = percent_step;
  }
}

void ProgressBar::PrintLine(std::string_view line) {
  if (bar_line_open_) {
    Write("\r\x1b[K");
    bar_line_open_ = false;
    last_output_s_ = -1e300;  // redraw at the next update
  }
  Write(std::string(line) + "\n");
}

void ProgressBar::Finish() {
  if (!has_stage_) return;
  const double now = Now();
  if (!stage_done_ && options_.style != ProgressStyle::kSilent) {
    const ProgressUpdate last{stage_, done_, total_, unit_, detail_};
    if (options_.style == ProgressStyle::kBar) {
      // Redraw with the final figures, then leave the line.
      DrawBar(last, now);
      if (bar_line_open_) Write("\n");
    } else {
      WriteLine(last, now, /*is_final=*/true);
    }
  }
  bar_line_open_ = false;
  has_stage_ = false;
  stage_done_ = false;
}

}  // namespace reprise::cli
