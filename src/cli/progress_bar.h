// How the command line shows the progress of long work (base/progress.h) on stderr: a bar
// with the rate and the time left when stderr is a terminal, plain periodic lines when it is
// not (a log file, CI), and nothing at all with --json. The clock and the output are injected
// so that the rendering is tested without a terminal or real time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "base/progress.h"

namespace reprise::cli {

enum class ProgressStyle {
  kBar,     // one line redrawn in place ("\r"), for a terminal
  kLines,   // a line now and then, for a file or pipe
  kSilent,  // nothing (--json: stdout carries the result, stderr stays quiet)
};

struct ProgressBarOptions {
  ProgressStyle style = ProgressStyle::kLines;
  std::function<double()> clock_seconds;        // monotonic; empty = std::chrono::steady_clock
  std::function<void(std::string_view)> write;  // empty = stderr, flushed
  double redraw_interval_s = 0.1;               // kBar: redraw at most this often
  double line_interval_s = 5.0;      // kLines: a line at least this often while work goes on...
  int line_percent_step = 10;        // ...and when the percentage passes a multiple of this,
  double min_line_interval_s = 1.0;  // ...but not more often than this
  int bar_cells = 24;
  int max_columns = 100;  // kBar: longer lines are cut (a wrapped line cannot be redrawn)
};

// The style for stderr: kSilent with `json`, kBar when stderr is a terminal, else kLines.
ProgressStyle StderrProgressStyle(bool json);

// Renders the updates of one piece of work, stage after stage. A new stage name ends the
// previous stage. Thread-compatible: the work calls it from one thread at a time.
class ProgressBar {
 public:
  explicit ProgressBar(ProgressBarOptions options);
  // Ends an open bar line, so that what is printed next starts on a line of its own.
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // A bar on stderr in StderrProgressStyle(json), with the real clock.
  static ProgressBarOptions ForStderr(bool json);

  void Update(const ProgressUpdate& update);
  // A callback that forwards to Update; valid while this object lives.
  ProgressCallback Callback();
  // Prints `line` (without its newline) on a line of its own; a bar is redrawn below it at
  // the next update. In kSilent style the line is printed too: it is a message, not progress.
  void PrintLine(std::string_view line);
  // Ends the current stage: a bar gets its newline; a stage that ended before reaching its
  // total gets its last line. Call before printing results or errors.
  void Finish();

 private:
  double Now() const;
  void Write(std::string_view text);
  void StartStage(const ProgressUpdate& update, double now);
  std::string Describe(const ProgressUpdate& update, double now, bool is_final) const;
  void DrawBar(const ProgressUpdate& update, double now);
  void WriteLine(const ProgressUpdate& update, double now, bool is_final);

  ProgressBarOptions options_;
  bool has_stage_ = false;
  bool stage_done_ = false;     // the stage reached its total and was shown complete
  bool bar_line_open_ = false;  // a bar is drawn and the cursor is still on its line
  std::string stage_, unit_, detail_;
  int64_t done_ = 0, total_ = 0;
  double stage_start_s_ = 0, last_output_s_ = 0;
  int64_t last_line_percent_step_ = 0;
};

// "42s", "3m07s", "2h05m": a duration for people.
std::string FormatDuration(double seconds);

}  // namespace reprise::cli
