// JsonMatcher: the grammar of a compiled JsonSchema (json_schema.h) as a byte-level
// recognizer, for constrained decoding: it says which bytes may come next, so that a token
// mask (token_constraint.h) can keep the model's output valid by construction.
//
// The state is a small set of stacks of frames (a pushdown automaton run
// nondeterministically: anyOf, enum literals and object keys fork it; dead stacks are
// dropped). Every byte either keeps at least one stack alive or is refused. No stack is ever
// deeper than kMaxJsonDepth values, so the state stays small.
//
// A value type: copy it to try a byte without committing. Borrows the JsonSchema, which must
// outlive it. Thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "engine/json_schema.h"

namespace reprise::engine {

// What a UTF-8 lead byte starts (RFC 3629, no overlongs or surrogates): how many
// continuation bytes follow, and the range of the first of them (the others are 0x80-0xBF).
// Bytes that start no character (continuations, 0xC0, 0xC1, 0xF5-0xFF) give nullopt.
struct Utf8Lead {
  uint8_t num_continuation = 0;
  uint8_t first_lo = 0x80, first_hi = 0xBF;
};
std::optional<Utf8Lead> ClassifyUtf8Lead(uint8_t byte);

class JsonMatcher {
 public:
  explicit JsonMatcher(const JsonSchema& schema);

  // Consumes `byte`; false (and the state unchanged) when no valid document continues so.
  bool Advance(uint8_t byte);
  // Advance for each byte, stopping at the first refused one (false; the state then holds
  // the bytes before it).
  bool Advance(std::string_view bytes);

  // The bytes so far form a complete valid document (generation may stop here).
  bool is_accepting() const;
  // Complete, and no byte may follow (generation must stop here).
  bool is_finished() const;
  // No stack alive (only after a failed Advance of several bytes).
  bool is_dead() const { return stacks_.empty(); }

  // Inside a string with no length limit left to check and at a character boundary, on every
  // stack: any run of plain string characters (no quote, backslash or control byte; whole
  // UTF-8 characters) may follow, and `max_more_chars` (-1: no limit) says how many.
  bool in_plain_string(int64_t* max_more_chars) const;

  struct Frame {
    uint8_t kind = 0;
    uint8_t phase = 0;
    uint8_t flags = 0;
    uint8_t utf8_lo = 0, utf8_hi = 0;  // strings: the next continuation byte's range
    uint8_t utf8_pending = 0;          // strings: continuation bytes still to come
    int32_t node = -1;                 // schema node; -1 = any value
    int32_t item = 0;    // object: property; literal: which; array: count; number: fraction
    int64_t count = 0;   // string: code points; literal/key: position; number: fraction digits
    uint64_t seen = 0;   // object: declared properties present
    double value = 0.0;  // number: the integer part's magnitude
    int32_t digits = 0;  // number: integer digits
    bool operator==(const Frame&) const = default;
  };
  using Stack = std::vector<Frame>;

 private:
  void Step(Stack stack, uint8_t byte, std::vector<Stack>& out) const;
  void StartValue(Stack stack, int node, uint8_t byte, std::vector<Stack>& out, int depth) const;
  void Complete(Stack stack, std::vector<Stack>& out) const;
  void CompleteAndFeed(Stack stack, uint8_t byte, std::vector<Stack>& out) const;
  bool NumberCanEnd(const Frame& f) const;
  bool NumberViable(const Frame& f) const;
  // A number's magnitude so far (integer part and fraction digits).
  static double Magnitude(const Frame& f);
  bool CanCompleteNow(const Stack& stack) const;

  const JsonSchema* schema_;
  std::vector<Stack> stacks_;
};

}  // namespace reprise::engine
