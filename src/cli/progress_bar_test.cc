#include "cli/progress_bar.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace reprise::cli {
namespace {

// A bar with a hand-moved clock that records what it writes.
struct Harness {
  explicit Harness(ProgressStyle style) {
    ProgressBarOptions options;
    options.style = style;
    options.clock_seconds = [this] { return now_s; };
    options.write = [this](std::string_view text) { written += text; };
    options.bar_cells = 10;
    bar = std::make_unique<ProgressBar>(options);
  }
  void Update(int64_t done, int64_t total, std::string_view detail = {}) {
    bar->Update(ProgressUpdate{"queries", done, total, "queries", detail});
  }
  std::vector<std::string> Lines() const {
    std::vector<std::string> lines;
    size_t start = 0;
    for (size_t i = 0; i < written.size(); ++i) {
      if (written[i] == '\n') {
        lines.push_back(written.substr(start, i - start));
        start = i + 1;
      }
    }
    return lines;
  }

  double now_s = 100.0;
  std::string written;
  std::unique_ptr<ProgressBar> bar;
};

TEST(ProgressBarTest, FormatsDurationsForPeople) {
  EXPECT_EQ(FormatDuration(0), "0s");
  EXPECT_EQ(FormatDuration(42.4), "42s");
  EXPECT_EQ(FormatDuration(187), "3m07s");
  EXPECT_EQ(FormatDuration(7500), "2h05m");
  EXPECT_EQ(FormatDuration(-1), "0s");
}

TEST(ProgressBarTest, BarShowsRateAndEta) {
  Harness h(ProgressStyle::kBar);
  h.Update(0, 20);
  h.now_s += 10;
  h.Update(5, 20, "blend");  // 0.5 queries/s, 15 left -> 30 s
  const std::string last = h.written.substr(h.written.rfind('\r'));
  EXPECT_NE(last.find("queries [##........] 5/20 queries (25%)"), std::string::npos) << last;
  EXPECT_NE(last.find("0.50 queries/s"), std::string::npos) << last;
  EXPECT_NE(last.find("ETA 30s"), std::string::npos) << last;
  EXPECT_NE(last.find("blend"), std::string::npos) << last;
  EXPECT_EQ(h.written.find('\n'), std::string::npos) << "a bar is redrawn in place";
}

TEST(ProgressBarTest, BarRedrawsAtMostTenTimesASecond) {
  Harness h(ProgressStyle::kBar);
  h.Update(0, 1000);
  const size_t draws_before = std::count(h.written.begin(), h.written.end(), '\r');
  for (int i = 1; i < 100; ++i) {
    h.now_s += 0.001;
    h.Update(i, 1000);
  }
  EXPECT_EQ(std::count(h.written.begin(), h.written.end(), '\r'), draws_before);
  h.now_s += 0.2;
  h.Update(100, 1000);
  EXPECT_EQ(std::count(h.written.begin(), h.written.end(), '\r'), draws_before + 1);
}

TEST(ProgressBarTest, BarEndsItsLineWhenDone) {
  Harness h(ProgressStyle::kBar);
  h.Update(0, 4);
  h.now_s += 2;
  h.Update(4, 4);
  ASSERT_EQ(h.Lines().size(), 1u);
  EXPECT_NE(h.Lines()[0].find("[##########] 4/4 queries (100%), 2.00 queries/s, 2s"),
            std::string::npos)
      << h.written;
  h.bar->Finish();
  EXPECT_EQ(h.Lines().size(), 1u) << "nothing more once the stage is complete";
}

TEST(ProgressBarTest, MessagesClearTheBarAndTheBarComesBack) {
  Harness h(ProgressStyle::kBar);
  h.Update(1, 4);
  h.bar->PrintLine("warning: something");
  EXPECT_NE(h.written.find("\r\x1b[Kwarning: something\n"), std::string::npos);
  const size_t size = h.written.size();
  h.now_s += 0.01;
  h.Update(2, 4);
  EXPECT_GT(h.written.size(), size) << "redrawn at once after a message";
}

TEST(ProgressBarTest, LinesAtTheStartEveryTenPercentAndAtTheEnd) {
  Harness h(ProgressStyle::kLines);
  for (int i = 0; i <= 100; ++i) {
    h.Update(i, 100);
    h.now_s += 0.5;  // 50 s in all: steps of 10% every 5 s
  }
  const std::vector<std::string> lines = h.Lines();
  ASSERT_EQ(lines.size(), 11u) << h.written;
  EXPECT_EQ(lines[0], "queries: 0/100 queries (0%), 0s so far");
  EXPECT_EQ(lines[1], "queries: 10/100 queries (10%), 2.00 queries/s, ETA 45s");
  EXPECT_EQ(lines[10], "queries: 100/100 queries (100%), 2.00 queries/s, 50s");
  for (const std::string& line : lines) EXPECT_EQ(line.find('\r'), std::string::npos);
}

TEST(ProgressBarTest, LinesNoMoreThanOncePerSecondOnFastWork) {
  Harness h(ProgressStyle::kLines);
  for (int i = 0; i <= 1000; ++i) {
    h.Update(i, 1000);
    h.now_s += 0.001;  // all of it in one second
  }
  EXPECT_EQ(h.Lines().size(), 2u) << h.written;  // the start and the end
}

TEST(ProgressBarTest, LinesEveryFiveSecondsOnSlowWork) {
  Harness h(ProgressStyle::kLines);
  h.Update(0, 1000);
  for (int i = 1; i <= 5; ++i) {
    h.now_s += 2.6;  // 0.5% per update: no 10% step for a long time
    h.Update(i, 1000);
  }
  EXPECT_EQ(h.Lines().size(), 3u) << h.written;  // start, after 5.2 s, after 10.4 s
}

TEST(ProgressBarTest, UnknownTotalShowsCountAndRate) {
  Harness h(ProgressStyle::kLines);
  h.bar->Update(ProgressUpdate{"gc", 0, 0, "files", {}});
  h.now_s += 6;
  h.bar->Update(ProgressUpdate{"gc", 30, 0, "files", {}});
  h.bar->Finish();
  const std::vector<std::string> lines = h.Lines();
  ASSERT_EQ(lines.size(), 3u) << h.written;
  EXPECT_EQ(lines[1], "gc: 30 files, 5.00 files/s, 6s so far");
  EXPECT_EQ(lines[2], "gc: 30 files, 5.00 files/s, 6s");
}

TEST(ProgressBarTest, WorkThatCountsNothingShowsItsTime) {
  Harness h(ProgressStyle::kLines);
  h.bar->Update(ProgressUpdate{"verifying 12 chunks", 0, 0, "", {}});
  h.now_s += 7;
  h.bar->Finish();
  const std::vector<std::string> lines = h.Lines();
  ASSERT_EQ(lines.size(), 2u) << h.written;
  EXPECT_EQ(lines[0], "verifying 12 chunks: 0s so far");
  EXPECT_EQ(lines[1], "verifying 12 chunks: 7s");
}

TEST(ProgressBarTest, ANewStageEndsThePreviousOne) {
  Harness h(ProgressStyle::kLines);
  h.Update(3, 10);
  h.now_s += 1;
  h.bar->Update(ProgressUpdate{"writing", 0, 2, "files", {}});
  const std::vector<std::string> lines = h.Lines();
  ASSERT_EQ(lines.size(), 3u) << h.written;
  EXPECT_EQ(lines[1], "queries: 3/10 queries (30%), 3.00 queries/s, 1s");
  EXPECT_EQ(lines[2], "writing: 0/2 files (0%), 0s so far");
}

TEST(ProgressBarTest, SilentWritesNoProgress) {
  Harness h(ProgressStyle::kSilent);
  for (int i = 0; i <= 10; ++i) {
    h.Update(i, 10);
    h.now_s += 10;
  }
  h.bar->Finish();
  EXPECT_EQ(h.written, "");
}

TEST(ProgressBarTest, TheDestructorEndsAnOpenBar) {
  std::string written;
  {
    ProgressBarOptions options;
    options.style = ProgressStyle::kBar;
    options.clock_seconds = [] { return 1.0; };
    options.write = [&](std::string_view text) { written += text; };
    ProgressBar bar(options);
    bar.Update(ProgressUpdate{"layers", 1, 30, "layers", {}});
  }
  ASSERT_FALSE(written.empty());
  EXPECT_EQ(written.back(), '\n');
}

}  // namespace
}  // namespace reprise::cli
