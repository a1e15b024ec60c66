// Finds OpenAI `stop` sequences in streamed text. Text that might be the start of a stop
// sequence is held back until the next piece decides it, so a client never sees any part of
// a stop sequence, even one split across tokens.
//
// Thread-compatible.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace reprise::server {

class StopSequences {
 public:
  explicit StopSequences(std::vector<std::string> sequences);

  // Feeds the next piece; returns the text now safe to send. After a stop sequence is found,
  // returns the text before it and `found()` turns true; later calls return "".
  std::string Feed(std::string_view piece);
  // The text held back, once generation has ended without a stop sequence.
  std::string Flush();
  bool found() const { return found_; }

 private:
  std::vector<std::string> sequences_;
  std::string held_;
  bool found_ = false;
};

}  // namespace reprise::server
