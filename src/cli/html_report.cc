// Self-contained HTML pages (see html_report.h).
#include "cli/html_report.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace reprise::cli {
namespace {

// Plain, print-friendly styling; system fonts only (nothing to fetch).
constexpr std::string_view kStyle = R"css(
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       margin: 24px auto; max-width: 1360px; padding: 0 16px; color: #222; background: #fff; }
h1 { font-size: 22px; margin-bottom: 4px; }
h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
p { margin: 6px 0; font-size: 14px; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; }
th { background: #f4f4f4; }
td:first-child, th:first-child { text-align: left; }
figure { display: inline-block; vertical-align: top; margin: 4px; border: 1px solid #e4e4e4;
         border-radius: 4px; padding: 6px; }
figcaption { font-size: 12px; color: #555; max-width: 640px; }
svg.chart text { font-size: 12px; fill: #333; }
svg.chart text.title { font-size: 14px; font-weight: 600; }
svg.chart text.value, svg.chart text.tick { font-size: 11px; fill: #555; }
svg.chart line.grid { stroke: #e6e6e6; }
svg.chart line.axis { stroke: #888; }
)css";

}  // namespace

HtmlReport::HtmlReport(std::string title) : title_(std::move(title)) {}

void HtmlReport::AddHeading(std::string_view text) {
  body_ += "<h2>" + EscapeXml(text) + "</h2>\n";
}

void HtmlReport::AddParagraph(std::string_view text) {
  body_ += "<p>" + EscapeXml(text) + "</p>\n";
}

void HtmlReport::AddTable(const std::vector<std::string>& header,
                          const std::vector<std::vector<std::string>>& rows) {
  body_ += "<table>\n<tr>";
  for (const std::string& h : header) body_ += "<th>" + EscapeXml(h) + "</th>";
  body_ += "</tr>\n";
  for (const std::vector<std::string>& row : rows) {
    body_ += "<tr>";
    for (size_t i = 0; i < std::max(row.size(), header.size()); ++i) {
      body_ += "<td>" + (i < row.size() ? EscapeXml(row[i]) : std::string()) + "</td>";
    }
    body_ += "</tr>\n";
  }
  body_ += "</table>\n";
}

void HtmlReport::AddChart(const BarChart& chart, std::string_view caption) {
  body_ += "<figure>\n" + RenderBarChartSvg(chart);
  if (!caption.empty()) body_ += "<figcaption>" + EscapeXml(caption) + "</figcaption>\n";
  body_ += "</figure>\n";
}

std::string HtmlReport::Render() const {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
         EscapeXml(title_) + "</title>\n<style>" + std::string(kStyle) +
         "</style>\n</head>\n<body>\n<h1>" + EscapeXml(title_) + "</h1>\n" + body_ +
         "</body>\n</html>\n";
}

Status CheckReportPath(const std::string& path) {
  if (path.empty()) return InvalidArgumentError("the report path is empty");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return InvalidArgumentError("the report path " + path + " is a folder");
  }
  std::filesystem::path folder = std::filesystem::path(path).parent_path();
  if (folder.empty()) folder = ".";
  if (!std::filesystem::is_directory(folder, ec)) {
    return NotFoundError("no folder " + folder.string() + " for the report " + path);
  }
  if (::access(folder.c_str(), W_OK) != 0) {
    return IoError("cannot write the report " + path + ": folder " + folder.string() +
                   " is not writable");
  }
  if (std::filesystem::exists(path, ec) && ::access(path.c_str(), W_OK) != 0) {
    return IoError("cannot write the report " + path + ": the file is not writable");
  }
  return Status::Ok();
}

}  // namespace reprise::cli
