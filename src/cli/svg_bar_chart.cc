// SVG bar charts (see svg_bar_chart.h).
#include "cli/svg_bar_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

namespace reprise::cli {
namespace {

constexpr int kNumGridSteps = 5;
constexpr double kMarginLeftPx = 64, kMarginRightPx = 16, kMarginTopPx = 46;
constexpr double kAxisLabelsPx = 52;  // below the plot: category labels (two lines)
constexpr double kLegendRowPx = 20;
constexpr double kCharPx = 6.5;  // the mean width of a character of 12 px text

// `text` cut to at most `max_bytes` bytes, between UTF-8 characters, with "…" when cut.
std::string Shorten(const std::string& text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t cut = max_bytes > 1 ? max_bytes - 1 : 0;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "…";
}

// `text` in at most two lines of about `max_chars` characters, broken at spaces; what does
// not fit is cut with "…".
std::vector<std::string> WrapLabel(const std::string& text, size_t max_chars) {
  std::vector<std::string> lines(1);
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    start = end + 1;
    if (word.empty()) continue;
    std::string& line = lines.back();
    if (line.empty() || line.size() + 1 + word.size() <= max_chars) {
      line += (line.empty() ? "" : " ") + word;
    } else if (lines.size() < 2) {
      lines.push_back(word);
    } else {
      line += " " + word;  // the rest goes on the last line and is cut below
    }
  }
  for (std::string& line : lines) line = Shorten(line, max_chars);
  return lines;
}

bool HasValue(double v) { return std::isfinite(v) && v >= 0; }

// A value for an axis or a bar label: "0", "12.5", "1234", "0.0031".
std::string FormatValue(double v) {
  char text[32];
  const double a = std::fabs(v);
  if (a == 0) return "0";
  if (a >= 1000) {
    std::snprintf(text, sizeof(text), "%.0f", v);
  } else if (a >= 10) {
    std::snprintf(text, sizeof(text), "%.1f", v);
  } else if (a >= 0.01) {
    std::snprintf(text, sizeof(text), "%.2f", v);
  } else {
    std::snprintf(text, sizeof(text), "%.2g", v);
  }
  std::string s = text;
  // "12.0" -> "12", "0.50" -> "0.5"
  if (s.find('.') != std::string::npos && s.find('e') == std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

std::string Px(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", v);
  return text;
}

}  // namespace

std::string EscapeXml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string_view SeriesColor(size_t index) {
  static constexpr std::string_view kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                                  "#76b7b2", "#edc948", "#b07aa1", "#9c755f"};
  return kPalette[index % std::size(kPalette)];
}

double NiceAxisTop(double max_value) {
  if (!(max_value > 0) || !std::isfinite(max_value)) return 1;
  const double raw_step = max_value / kNumGridSteps;
  const double power = std::pow(10.0, std::floor(std::log10(raw_step)));
  double step = 10 * power;
  for (double m : {1.0, 2.0, 2.5, 5.0}) {
    if (m * power >= raw_step * (1 - 1e-12)) {
      step = m * power;
      break;
    }
  }
  return step * kNumGridSteps;
}

std::string RenderBarChartSvg(const BarChart& chart) {
  const double width = std::max(200, chart.width_px);
  const size_t num_categories = chart.categories.size();
  const size_t num_series = chart.series.size();
  // Legend entries in rows, each as wide as its text (about 7 px per character).
  std::vector<std::pair<double, size_t>> legend_at;  // x and row of each entry
  {
    double x = 20;
    size_t row = 0;
    for (const BarSeries& s : chart.series) {
      const double entry_width = 17 + 7.0 * static_cast<double>(s.name.size()) + 18;
      if (x > 20 && x + entry_width > width - 10) {
        x = 20;
        ++row;
      }
      legend_at.emplace_back(x, row);
      x += entry_width;
    }
  }
  const size_t legend_rows = legend_at.empty() ? 0 : legend_at.back().second + 1;
  const double height = std::max(160, chart.height_px) + legend_rows * kLegendRowPx;
  const double plot_left = kMarginLeftPx, plot_right = width - kMarginRightPx;
  const double plot_top = kMarginTopPx;
  const double plot_bottom = height - kAxisLabelsPx - legend_rows * kLegendRowPx;
  const double plot_height = plot_bottom - plot_top;

  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"" +
                    Px(width) + "\" height=\"" + Px(height) + "\" viewBox=\"0 0 " + Px(width) +
                    " " + Px(height) + "\" role=\"img\" aria-label=\"" + EscapeXml(chart.title) +
                    "\">\n";
  svg += "<text class=\"title\" x=\"" + Px(width / 2) + "\" y=\"20\" text-anchor=\"middle\">" +
         EscapeXml(chart.title) + "</text>\n";
  if (num_categories == 0 || num_series == 0) {
    svg += "<text class=\"note\" x=\"" + Px(width / 2) + "\" y=\"" + Px(height / 2) +
           "\" text-anchor=\"middle\">no data</text>\n</svg>\n";
    return svg;
  }

  // The axis covers the tallest bar (grouped) or the tallest pile (stacked).
  double max_value = 0;
  for (size_t c = 0; c < num_categories; ++c) {
    double pile = 0;
    for (const BarSeries& s : chart.series) {
      const double v = c < s.values.size() && HasValue(s.values[c]) ? s.values[c] : 0;
      pile += v;
      max_value = std::max(max_value, v);
    }
    if (chart.is_stacked) max_value = std::max(max_value, pile);
  }
  const double axis_top = NiceAxisTop(max_value);
  const auto y_of = [&](double v) { return plot_bottom - v / axis_top * plot_height; };

  // Gridlines and value labels.
  for (int i = 0; i <= kNumGridSteps; ++i) {
    const double v = axis_top * i / kNumGridSteps;
    const std::string y = Px(y_of(v));
    svg += "<line class=\"grid\" x1=\"" + Px(plot_left) + "\" x2=\"" + Px(plot_right) + "\" y1=\"" +
           y + "\" y2=\"" + y + "\"/>\n";
    svg += "<text class=\"tick\" x=\"" + Px(plot_left - 6) + "\" y=\"" + y +
           "\" dy=\"0.32em\" text-anchor=\"end\">" + EscapeXml(FormatValue(v)) + "</text>\n";
  }
  if (!chart.unit.empty()) {
    svg += "<text class=\"unit\" x=\"12\" y=\"" + Px((plot_top + plot_bottom) / 2) +
           "\" text-anchor=\"middle\" transform=\"rotate(-90 12 " +
           Px((plot_top + plot_bottom) / 2) + ")\">" + EscapeXml(chart.unit) + "</text>\n";
  }

  // Bars.
  const double slot = (plot_right - plot_left) / static_cast<double>(num_categories);
  const double group_width = slot * 0.78;
  const double bar_width =
      chart.is_stacked ? group_width : group_width / static_cast<double>(num_series);
  // Category labels wrap onto two lines of the slot's width; when even a short word does not
  // fit, only every k-th category is labelled.
  const size_t chars_per_line = static_cast<size_t>(std::max(0.0, slot / kCharPx));
  size_t label_every = 1;
  if (chars_per_line < 4) {
    size_t longest = 1;
    for (const std::string& c : chart.categories) longest = std::max(longest, c.size());
    label_every = static_cast<size_t>(std::ceil(std::min<double>(longest, 12) * kCharPx / slot));
  }
  const size_t label_chars = std::max<size_t>(chars_per_line, 4);
  for (size_t c = 0; c < num_categories; ++c) {
    const double group_left = plot_left + slot * static_cast<double>(c) + (slot - group_width) / 2;
    double pile = 0;
    for (size_t s = 0; s < num_series; ++s) {
      const BarSeries& series = chart.series[s];
      const double value = c < series.values.size() ? series.values[c] : NAN;
      const std::string tooltip = series.name + ", " + chart.categories[c] + ": " +
                                  (HasValue(value) ? FormatValue(value) + " " + chart.unit : "n/a");
      if (!HasValue(value)) continue;
      const double x = chart.is_stacked ? group_left : group_left + bar_width * s;
      const double base = chart.is_stacked ? pile : 0;
      const double top = y_of(base + value);
      const double bar_height = y_of(base) - top;
      svg += "<rect class=\"bar\" x=\"" + Px(x) + "\" y=\"" + Px(top) + "\" width=\"" +
             Px(std::max(1.0, bar_width - 1)) + "\" height=\"" + Px(bar_height) + "\" fill=\"" +
             std::string(SeriesColor(s)) + "\"><title>" + EscapeXml(tooltip) + "</title></rect>\n";
      const std::string value_label = FormatValue(value);
      // Value labels (11 px text) only over bars at least as wide as they are.
      if (!chart.is_stacked && value_label.size() * kCharPx * 0.9 <= bar_width) {
        svg += "<text class=\"value\" x=\"" + Px(x + bar_width / 2) + "\" y=\"" + Px(top - 3) +
               "\" text-anchor=\"middle\">" + EscapeXml(value_label) + "</text>\n";
      }
      pile += value;
    }
    if (c % label_every == 0) {
      const std::string x = Px(plot_left + slot * (static_cast<double>(c) + 0.5));
      svg += "<text class=\"category\" x=\"" + x + "\" y=\"" + Px(plot_bottom + 16) +
             "\" text-anchor=\"middle\">";
      const std::vector<std::string> lines = WrapLabel(chart.categories[c], label_chars);
      for (size_t i = 0; i < lines.size(); ++i) {
        svg += "<tspan x=\"" + x + "\" dy=\"" + (i == 0 ? "0" : "1.15em") + "\">" +
               EscapeXml(lines[i]) + "</tspan>";
      }
      svg += "</text>\n";
    }
  }
  svg += "<line class=\"axis\" x1=\"" + Px(plot_left) + "\" x2=\"" + Px(plot_right) + "\" y1=\"" +
         Px(plot_bottom) + "\" y2=\"" + Px(plot_bottom) + "\"/>\n";

  // Legend.
  for (size_t s = 0; s < num_series; ++s) {
    const double x = legend_at[s].first;
    const double y = plot_bottom + kAxisLabelsPx - 6 + kLegendRowPx * legend_at[s].second;
    svg += "<rect class=\"swatch\" x=\"" + Px(x) + "\" y=\"" + Px(y - 10) +
           "\" width=\"12\" height=\"12\" fill=\"" + std::string(SeriesColor(s)) + "\"/>";
    svg += "<text class=\"legend\" x=\"" + Px(x + 17) + "\" y=\"" + Px(y) + "\">" +
           EscapeXml(chart.series[s].name) + "</text>\n";
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace reprise::cli
