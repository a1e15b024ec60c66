#include "server/stop_sequences.h"

#include <algorithm>

namespace reprise::server {

StopSequences::StopSequences(std::vector<std::string> sequences)
    : sequences_(std::move(sequences)) {}

std::string StopSequences::Feed(std::string_view piece) {
  if (found_) return "";
  held_.append(piece);
  // The earliest complete stop sequence ends the text.
  size_t cut = std::string::npos;
  for (const std::string& s : sequences_) cut = std::min(cut, held_.find(s));
  if (cut != std::string::npos) {
    found_ = true;
    std::string out = held_.substr(0, cut);
    held_.clear();
    return out;
  }
  // Keep the longest tail that is a proper prefix of some stop sequence.
  size_t keep = 0;
  for (const std::string& s : sequences_) {
    const size_t longest = std::min(s.size() - 1, held_.size());
    for (size_t n = longest; n > keep; --n) {
      if (held_.compare(held_.size() - n, n, s, 0, n) == 0) {
        keep = n;
        break;
      }
    }
  }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopSequences::Flush() {
  std::string out = found_ ? "" : held_;
  held_.clear();
  return out;
}

}  // namespace reprise::server
