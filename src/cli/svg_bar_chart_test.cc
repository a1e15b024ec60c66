#include "cli/svg_bar_chart.h"

#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <string>
#include <vector>

namespace reprise::cli {
namespace {

// The heights of the bars (<rect class="bar">) in `svg`, in order.
std::vector<double> BarHeights(const std::string& svg) {
  static const std::regex kBar(R"re(<rect class="bar"[^>]* height="([0-9.]+)")re");
  std::vector<double> heights;
  for (std::sregex_iterator it(svg.begin(), svg.end(), kBar), end; it != end; ++it) {
    heights.push_back(std::stod((*it)[1]));
  }
  return heights;
}

TEST(SvgBarChartTest, EscapesMarkup) {
  EXPECT_EQ(EscapeXml("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  EXPECT_EQ(EscapeXml("plain ü"), "plain ü");
}

TEST(SvgBarChartTest, NiceAxisTops) {
  EXPECT_EQ(NiceAxisTop(0), 1);
  EXPECT_EQ(NiceAxisTop(-3), 1);
  EXPECT_EQ(NiceAxisTop(NAN), 1);
  EXPECT_EQ(NiceAxisTop(37), 50);
  EXPECT_EQ(NiceAxisTop(100), 100);
  EXPECT_EQ(NiceAxisTop(101), 125);
  EXPECT_NEAR(NiceAxisTop(0.0042), 0.005, 1e-12);
  EXPECT_EQ(NiceAxisTop(812), 1000);
}

TEST(SvgBarChartTest, GroupedBarsAreProportional) {
  BarChart chart{"TTFT", "ms", {"none", "blend"}, {{"docqa", {200, 50}}, {"chat", {100, 25}}}};
  const std::string svg = RenderBarChartSvg(chart);
  const std::vector<double> heights = BarHeights(svg);
  ASSERT_EQ(heights.size(), 4u) << svg;
  // Order: category by category, series within.
  EXPECT_NEAR(heights[0] / heights[1], 2.0, 0.01);
  EXPECT_NEAR(heights[0] / heights[2], 4.0, 0.02);
  EXPECT_NEAR(heights[1] / heights[3], 4.0, 0.02);
  EXPECT_NE(svg.find("<title>chat, blend: 25 ms</title>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">docqa</text>"), std::string::npos) << "legend";
}

TEST(SvgBarChartTest, StackedBarsPileUp) {
  BarChart chart{"split", "ms", {"blend"}, {{"match", {1}}, {"prep", {3}}, {"compute", {6}}}};
  chart.is_stacked = true;
  const std::string svg = RenderBarChartSvg(chart);
  const std::vector<double> heights = BarHeights(svg);
  ASSERT_EQ(heights.size(), 3u);
  EXPECT_NEAR(heights[2] / heights[0], 6.0, 0.05);
  // Each segment sits on the one before: y of segment i+1 + its height = y of segment i.
  static const std::regex kY(R"re(<rect class="bar"[^>]* y="([0-9.]+)")re");
  std::vector<double> ys;
  for (std::sregex_iterator it(svg.begin(), svg.end(), kY), end; it != end; ++it) {
    ys.push_back(std::stod((*it)[1]));
  }
  ASSERT_EQ(ys.size(), 3u);
  EXPECT_NEAR(ys[1] + heights[1], ys[0], 0.11);
  EXPECT_NEAR(ys[2] + heights[2], ys[1], 0.11);
}

TEST(SvgBarChartTest, MissingValuesDrawNoBar) {
  BarChart chart{"q", "%", {"a", "b"}, {{"s", {NAN, 5}}}};
  EXPECT_EQ(BarHeights(RenderBarChartSvg(chart)).size(), 1u);
  chart.series[0].values = {-1, 5};
  EXPECT_EQ(BarHeights(RenderBarChartSvg(chart)).size(), 1u);
  chart.series[0].values = {};  // shorter than the categories
  EXPECT_EQ(BarHeights(RenderBarChartSvg(chart)).size(), 0u);
}

TEST(SvgBarChartTest, EmptyChartSaysSo) {
  const std::string svg = RenderBarChartSvg(BarChart{"nothing", "ms", {}, {}});
  EXPECT_NE(svg.find("no data"), std::string::npos);
  EXPECT_EQ(BarHeights(svg).size(), 0u);
}

TEST(SvgBarChartTest, TextIsEscapedEverywhere) {
  BarChart chart{"<script>alert(1)</script>", "\"ms\"", {"<b>"}, {{"a&b", {1}}}};
  const std::string svg = RenderBarChartSvg(chart);
  EXPECT_EQ(svg.find("<script"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("<b>"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("a&b"), std::string::npos) << svg;
  EXPECT_NE(svg.find("&lt;script&gt;"), std::string::npos) << svg;
}

}  // namespace
}  // namespace reprise::cli
