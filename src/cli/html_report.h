// A self-contained HTML page for benchmark results (`bench ... --report FILE.html`): headings,
// notes, tables and SVG bar charts (cli/svg_bar_chart.h), with the CSS inline and no script,
// font, image or link to fetch, so the file can be mailed, archived or opened offline. Every
// text given to it is escaped.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "cli/svg_bar_chart.h"

namespace reprise::cli {

// Builds a page block by block, in order. Thread-compatible.
class HtmlReport {
 public:
  explicit HtmlReport(std::string title);

  void AddHeading(std::string_view text);
  void AddParagraph(std::string_view text);
  // A table; rows shorter than the header are padded with empty cells.
  void AddTable(const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows);
  // A chart with a caption under it (the caption may be empty).
  void AddChart(const BarChart& chart, std::string_view caption = {});

  // The whole page: <!DOCTYPE html> to </html>.
  std::string Render() const;

 private:
  std::string title_;
  std::string body_;
};

// Fails with a clear error when a report could not be written to `path` later: its folder is
// missing or not writable, or `path` is a folder. Call before long work, so that a bad path
// does not cost a whole benchmark run; then write the page with WriteFileAtomically
// (base/file_util.h). Errors: InvalidArgument, NotFound, IoError.
Status CheckReportPath(const std::string& path);

}  // namespace reprise::cli
