#include "cli/remote_metrics.h"

#include <httplib.h>

#include <charconv>
#include <cstdlib>

namespace reprise::cli {

std::map<std::string, double> ParseRemoteMetrics(std::string_view metrics_text) {
  std::map<std::string, double> out;
  size_t start = 0;
  while (start < metrics_text.size()) {
    size_t end = metrics_text.find('\n', start);
    if (end == std::string_view::npos) end = metrics_text.size();
    const std::string_view line = metrics_text.substr(start, end - start);
    start = end + 1;
    if (!line.starts_with("reprise_remote_")) continue;
    const size_t space = line.rfind(' ');
    if (space == std::string_view::npos) continue;
    const std::string value(line.substr(space + 1));
    char* parsed_end = nullptr;
    const double number = std::strtod(value.c_str(), &parsed_end);
    if (parsed_end == value.c_str() || *parsed_end != '\0') continue;
    out[std::string(line.substr(0, space))] = number;
  }
  return out;
}

Result<std::string> FetchMetrics(const std::string& host_port) {
  const size_t colon = host_port.rfind(':');
  int port = 0;
  if (colon == std::string::npos || colon == 0 ||
      std::from_chars(host_port.data() + colon + 1, host_port.data() + host_port.size(), port)
              .ec != std::errc() ||
      port < 1 || port > 65535) {
    return InvalidArgumentError("--server must be HOST:PORT, not '" + host_port + "'");
  }
  httplib::Client client(host_port.substr(0, colon), port);
  client.set_connection_timeout(5);
  client.set_read_timeout(10);
  const httplib::Result response = client.Get("/metrics");
  if (!response) {
    return UnavailableError("no answer from " + host_port + "/metrics: " +
                            httplib::to_string(response.error()));
  }
  if (response->status != 200) {
    return UnavailableError(host_port + "/metrics answered " + std::to_string(response->status));
  }
  return response->body;
}

}  // namespace reprise::cli
