// End-to-end test of the HTML benchmark reports in a real browser: `bench reuse` and
// `bench prefill` write their `--report`, headless Chromium renders it, and a probe script
// (added to a copy of the page; the report itself has no script) measures every chart's bars
// after layout. Skips when Chromium is not installed (Debian package `chromium`).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "support/shell_command.h"
#include "support/temp_dir.h"

namespace reprise {
namespace {

using testing_support::ReadWholeFile;
using testing_support::RunShell;
using testing_support::ShellOutcome;

// The Chromium binary on PATH, or "" when there is none.
std::string FindChromium() {
  const ShellOutcome o = RunShell("command -v chromium || command -v chromium-browser");
  if (o.exit_code != 0) return "";
  std::string path = o.out.substr(0, o.out.find('\n'));
  return path;
}

// Appended to a copy of a report: after layout, counts the charts and the bars whose
// rendered box has a non-zero width and height, and writes the counts into the page.
constexpr const char* kProbe = R"html(
<script>
const lines = [];
for (const chart of document.querySelectorAll('svg.chart')) {
  let bars = 0, visible = 0;
  for (const bar of chart.querySelectorAll('rect.bar')) {
    ++bars;
    const box = bar.getBoundingClientRect();
    if (box.width > 0 && box.height > 0) ++visible;
  }
  const title = chart.querySelector('text.title').textContent;
  lines.push(`chart visible=${visible} bars=${bars} title=${title}`);
}
const out = document.createElement('pre');
out.id = 'probe';
out.textContent = lines.join('\n') + '\nprobe done';
document.body.appendChild(out);
</script>
)html";

// What the probe saw of one chart.
struct RenderedChart {
  int visible_bars = 0, bars = 0;
  std::string title;
};

// Renders `report` in headless Chromium with the probe and returns what it saw of each chart.
std::vector<RenderedChart> RenderAndProbe(const std::string& chromium, const std::string& report,
                                          const std::string& dir) {
  const std::string probed = dir + "/probed.html";
  {
    std::ofstream out(probed);
    out << ReadWholeFile(report) << kProbe;
  }
  const ShellOutcome o =
      RunShell(chromium + " --headless --no-sandbox --disable-gpu --user-data-dir=" + dir +
               "/profile --dump-dom file://" + probed);
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("probe done"), std::string::npos) << "the probe did not run; rendered DOM:\n"
                                                         << o.out.substr(0, 2000) << o.err;
  static const std::regex kChart(R"(chart visible=(\d+) bars=(\d+) title=([^\n]*))");
  std::vector<RenderedChart> charts;
  for (std::sregex_iterator it(o.out.begin(), o.out.end(), kChart), end; it != end; ++it) {
    charts.push_back({std::stoi((*it)[1]), std::stoi((*it)[2]), (*it)[3]});
  }
  return charts;
}

class ReportRenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = FindChromium();
    if (chromium_.empty()) {
      GTEST_SKIP() << "chromium is not installed (apt-get install --no-install-recommends "
                      "chromium): the HTML reports are not rendered";
    }
  }
  std::string chromium_;
  testing_support::TempDir dir_;
};

TEST_F(ReportRenderTest, ReuseReportRendersItsCharts) {
  // A data folder holding the demo kit's HotpotQA slice as the distractor workload.
  const std::string data = dir_.path() + "/data";
  std::filesystem::create_directories(data + "/workloads/hotpotqa");
  std::filesystem::copy_file(REPRISE_SOURCE_DIR "/data/demo/hotpotqa_demo_30.jsonl",
                             data + "/workloads/hotpotqa/hotpotqa_distractor_100.jsonl");
  const std::string report = dir_.path() + "/reuse.html";
  const ShellOutcome bench =
      RunShell(REPRISE_CLI_PATH " bench reuse -m " REPRISE_SOURCE_DIR
                                "/data/demo/stories260K.gguf --workload docqa-distractor "
                                "--queries 3 --top-chunks 3 --chunk-tokens 64 -t 1 --data " +
               data + " --report " + report);
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  const std::vector<RenderedChart> charts = RenderAndProbe(chromium_, report, dir_.path());
  // TTFT, time split, tokens by kind, KL, agreement, TTFT per query.
  ASSERT_EQ(charts.size(), 6u);
  for (const RenderedChart& chart : charts) {
    EXPECT_GE(chart.bars, 4) << chart.title;  // one per method at least
    // Every method can agree exactly with a full prefill on this small run (KL 0): that
    // chart may be flat. Every other chart draws bars with an area.
    if (chart.title.rfind("KL", 0) != 0) {
      EXPECT_GT(chart.visible_bars, 0) << chart.title;
    }
  }
}

TEST_F(ReportRenderTest, SpeedReportRendersItsCharts) {
  const std::string model = dir_.path() + "/tiny.gguf";
  ASSERT_EQ(RunShell(REPRISE_CLI_PATH " make-model --shape tiny -o " + model).exit_code, 0);
  const std::string report = dir_.path() + "/speed.html";
  const ShellOutcome bench = RunShell(REPRISE_CLI_PATH " bench prefill -m " + model +
                                      " --lengths 16,32 -r 1 -t 1 --report " + report);
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  const std::vector<RenderedChart> charts = RenderAndProbe(chromium_, report, dir_.path());
  ASSERT_EQ(charts.size(), 1u);
  EXPECT_EQ(charts[0].title, "Prefill speed by prompt length");
  EXPECT_EQ(charts[0].bars, 2);
  EXPECT_EQ(charts[0].visible_bars, 2);
}

TEST(ReportPathTest, AnUnwritableReportPathFailsBeforeTheBench) {
  const ShellOutcome o = RunShell(REPRISE_CLI_PATH
                                  " bench prefill -m /nonexistent.gguf "
                                  "--report /no/such/folder/r.html");
  EXPECT_EQ(o.exit_code, 1) << o.err;
  EXPECT_NE(o.err.find("no folder /no/such/folder"), std::string::npos) << o.err;
}

}  // namespace
}  // namespace reprise
