// Bar charts as inline SVG, for the HTML benchmark reports (cli/html_report.h): grouped bars
// (one bar per series in each category) or stacked bars (the series piled up in each
// category), with a value axis, category labels, a legend and a tooltip per bar. Written by
// our own code so that a report needs no script and no file beside it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace reprise::cli {

struct BarSeries {
  std::string name;            // legend text: "TTFT mean", "llama.cpp"
  std::vector<double> values;  // one per category; NaN or < 0 draws no bar ("n/a")
};

struct BarChart {
  std::string title;
  std::string unit;                     // of the values: "ms", "tokens", "%"
  std::vector<std::string> categories;  // along the horizontal axis
  std::vector<BarSeries> series;
  bool is_stacked = false;
  int width_px = 640;
  int height_px = 300;
};

// The chart as an <svg> element. Every bar is a <rect class="bar"> with a <title> tooltip;
// all text is escaped. A chart without categories or series renders a note saying so.
std::string RenderBarChartSvg(const BarChart& chart);

// `text` with & < > " ' replaced by character references: safe in XML/HTML text and in
// quoted attribute values.
std::string EscapeXml(std::string_view text);

// The fill colour of series `index` (a fixed palette that tells neighbours apart).
std::string_view SeriesColor(size_t index);

// The top of a value axis for data up to `max_value`: 1, 2 or 5 times a power of ten, so that
// five gridlines fall on round values. At least `max_value`; 1 when `max_value` <= 0.
double NiceAxisTop(double max_value);

}  // namespace reprise::cli
