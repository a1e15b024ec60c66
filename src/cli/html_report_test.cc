#include "cli/html_report.h"

#include <gtest/gtest.h>

#include <string>

#include "cli/bench_report.h"
#include "support/temp_dir.h"

namespace reprise::cli {
namespace {

TEST(HtmlReportTest, APageWithEscapedTextAndNothingToFetch) {
  HtmlReport page("Bench <1>");
  page.AddHeading("h & h");
  page.AddParagraph("<img onerror=alert(1)>");
  page.AddTable({"a", "b"}, {{"1"}, {"<2>", "3"}});
  page.AddChart(BarChart{"chart", "ms", {"x"}, {{"s", {1}}}}, "cap'tion");
  const std::string html = page.Render();
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<title>Bench &lt;1&gt;</title>"), std::string::npos);
  EXPECT_NE(html.find("<h2>h &amp; h</h2>"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("<tr><td>1</td><td></td></tr>"), std::string::npos) << "padded row";
  EXPECT_NE(html.find("<figcaption>cap&#39;tion</figcaption>"), std::string::npos);
  // Self-contained: no scripts, no external resources of any kind.
  for (const char* banned : {"<script", "<link", "src=", "href=", "url(", "@import"}) {
    EXPECT_EQ(html.find(banned), std::string::npos) << banned;
  }
}

TEST(HtmlReportTest, ReportPathsAreCheckedUpFront) {
  testing_support::TempDir dir;
  EXPECT_TRUE(CheckReportPath(dir.path() + "/r.html").ok());
  EXPECT_EQ(CheckReportPath(dir.path()).code(), StatusCode::kInvalidArgument);
  const Status missing = CheckReportPath(dir.path() + "/no/such/folder/r.html");
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("no/such/folder"), std::string::npos) << missing.message();
  EXPECT_EQ(CheckReportPath("").code(), StatusCode::kInvalidArgument);
}

tools::ReuseBenchResult SampleReuseResult() {
  tools::ReuseBenchResult r;
  r.workload = "docqa <demo>";
  r.model = "m.gguf";
  r.queries = 2;
  for (const char* name : {"none", "blend"}) {
    tools::MethodStats m;
    m.method = name;
    m.queries = 2;
    const bool is_blend = m.method == "blend";
    m.ttft_ms = {is_blend ? 40.0 : 100.0, is_blend ? 20.0 : 100.0};
    m.ttft_ms_mean = is_blend ? 30 : 100;
    m.match_ms_mean = is_blend ? 1 : 0;
    m.kv_prep_ms_mean = is_blend ? 4 : 0;
    m.compute_ms_mean = is_blend ? 25 : 100;
    m.tokens_new = is_blend ? 100 : 1000;
    m.tokens_nonprefix = is_blend ? 700 : 0;
    m.tokens_recomputed = is_blend ? 200 : 0;
    m.top1_agreement = 1;
    m.continuation_agreement = is_blend ? 0.9 : 1;
    m.kl_mean = is_blend ? 0.01 : 0;
    r.methods.push_back(m);
  }
  return r;
}

TEST(BenchReportTest, ReuseReportHasEveryChart) {
  const tools::ReuseBenchResult r = SampleReuseResult();
  const std::string html =
      ReuseBenchReportHtml(std::span(&r, 1), ReportContext{"reprise bench reuse", "cpu", "now"});
  for (const char* title :
       {"Mean time to first token", "Where the time to first token goes", "Prompt tokens by kind",
        "KL divergence", "Agreement with a full prefill", "TTFT per query"}) {
    EXPECT_NE(html.find(title), std::string::npos) << title;
  }
  EXPECT_NE(html.find("docqa &lt;demo&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<demo>"), std::string::npos);
}

TEST(BenchReportTest, ReuseReportWithoutQualitySaysSo) {
  tools::ReuseBenchResult r = SampleReuseResult();
  for (tools::MethodStats& m : r.methods) {
    m.top1_agreement = m.kl_mean = m.continuation_agreement = 0;
  }
  const std::string html = ReuseBenchReportHtml(std::span(&r, 1), ReportContext{});
  EXPECT_EQ(html.find("KL divergence"), std::string::npos);
  EXPECT_NE(html.find("Quality was not measured"), std::string::npos);
}

TEST(BenchReportTest, SpeedReportShowsThePeerWhenMeasured) {
  tools::SpeedBenchResult r;
  r.model = "m.gguf";
  r.prefill_tokens_per_second = {{128, 500}, {512, 400}};
  r.decode_tokens_per_second = 50;
  const std::string alone = SpeedBenchReportHtml(r, {}, 64, ReportContext{});
  EXPECT_EQ(alone.find(">llama.cpp</text>"), std::string::npos);
  EXPECT_NE(alone.find("llama.cpp (not run)"), std::string::npos);
  const std::string side_by_side =
      SpeedBenchReportHtml(r, {{128, 1000}, {512, 800}, {-1, 100}}, 64, ReportContext{});
  EXPECT_NE(side_by_side.find(">llama.cpp</text>"), std::string::npos);
  EXPECT_NE(side_by_side.find("<td>0.50x</td>"), std::string::npos);
  EXPECT_NE(side_by_side.find("tg64"), std::string::npos);
}

}  // namespace
}  // namespace reprise::cli
