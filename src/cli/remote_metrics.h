// `reprise cache stats --server HOST:PORT`: what a running server's remote tier did (its
// /metrics' reprise_remote_* counters: hits, misses, bad values, unavailable, chunks sent,
// bytes). The counters live in the serving process; the store folder does not keep them.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "base/status.h"

namespace reprise::cli {

// The reprise_remote_* samples of a Prometheus text, by name with labels
// ("reprise_remote_lookups_total{result=\"hit\"}" -> 5). Empty: the server has no remote tier.
std::map<std::string, double> ParseRemoteMetrics(std::string_view metrics_text);

// GETs http://`host_port`/metrics. Errors: InvalidArgument (not HOST:PORT), Unavailable (no
// answer, or not 200).
Result<std::string> FetchMetrics(const std::string& host_port);

}  // namespace reprise::cli
