#include "engine/json_matcher.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace reprise::engine {
namespace {

enum Kind : uint8_t { kValue = 1, kObject, kKey, kArray, kString, kNumber, kLiteral };
enum ObjectPhase : uint8_t { kObjectOpen, kObjectAfterKey, kObjectAfterValue, kObjectExpectKey };
enum ArrayPhase : uint8_t { kArrayOpen, kArrayAfterValue, kArrayExpectValue };
enum NumberPhase : uint8_t {
  kSign,
  kZero,
  kInteger,
  kDot,
  kFraction,
  kExponent,
  kExponentSign,
  kExponentDigits
};
enum Flags : uint8_t { kFlagKey = 1, kFlagNegative = 2 };

constexpr int kMaxDigits = 15;          // integer digits generated
constexpr int kMaxFractionDigits = 9;   // fraction digits generated (kept as an integer)
constexpr double kFractionStep = 1e-9;  // the smallest fraction step
constexpr int kMaxExponentDigits = 3;
constexpr size_t kMaxStacks = 256;
constexpr int kMaxAnyOfDepth = 6;

const char* const kBuiltinLiterals[] = {"true", "false", "null"};

const SchemaNode& AnyNode() {
  static const SchemaNode any;
  return any;
}

bool IsDigit(uint8_t b) { return b >= '0' && b <= '9'; }

}  // namespace

std::optional<Utf8Lead> ClassifyUtf8Lead(uint8_t byte) {
  if (byte < 0x80) return Utf8Lead{};
  if (byte >= 0xC2 && byte <= 0xDF) return Utf8Lead{.num_continuation = 1};
  if (byte == 0xE0) return Utf8Lead{.num_continuation = 2, .first_lo = 0xA0};
  if ((byte >= 0xE1 && byte <= 0xEC) || byte == 0xEE || byte == 0xEF) {
    return Utf8Lead{.num_continuation = 2};
  }
  if (byte == 0xED) return Utf8Lead{.num_continuation = 2, .first_hi = 0x9F};
  if (byte == 0xF0) return Utf8Lead{.num_continuation = 3, .first_lo = 0x90};
  if (byte >= 0xF1 && byte <= 0xF3) return Utf8Lead{.num_continuation = 3};
  if (byte == 0xF4) return Utf8Lead{.num_continuation = 3, .first_hi = 0x8F};
  return std::nullopt;
}

JsonMatcher::JsonMatcher(const JsonSchema& schema) : schema_(&schema) {
  Frame root;
  root.kind = kValue;
  root.node = schema.root();
  stacks_.push_back(Stack{root});
}

bool JsonMatcher::Advance(uint8_t byte) {
  std::vector<Stack> next;
  for (const Stack& stack : stacks_) {
    if (next.size() >= kMaxStacks) break;
    if (!stack.empty()) Step(stack, byte, next);
  }
  if (next.empty()) return false;
  // Forks that met again are one stack.
  std::vector<Stack> unique;
  for (Stack& s : next) {
    if (unique.size() >= kMaxStacks) break;
    if (std::find(unique.begin(), unique.end(), s) == unique.end()) unique.push_back(std::move(s));
  }
  stacks_ = std::move(unique);
  return true;
}

bool JsonMatcher::Advance(std::string_view bytes) {
  for (const char c : bytes) {
    if (!Advance(static_cast<uint8_t>(c))) return false;
  }
  return true;
}

bool JsonMatcher::is_accepting() const {
  return std::any_of(stacks_.begin(), stacks_.end(),
                     [&](const Stack& s) { return s.empty() || CanCompleteNow(s); });
}

bool JsonMatcher::is_finished() const {
  return !stacks_.empty() &&
         std::all_of(stacks_.begin(), stacks_.end(), [](const Stack& s) { return s.empty(); });
}

bool JsonMatcher::in_plain_string(int64_t* max_more_chars) const {
  int64_t most = -1;
  for (const Stack& s : stacks_) {
    if (s.empty()) return false;
    const Frame& f = s.back();
    if (f.kind != kString || f.phase != 0 || f.utf8_pending != 0) return false;
    const SchemaNode& n = f.node < 0 ? AnyNode() : schema_->node(f.node);
    if (n.max_length >= 0) {
      const int64_t room = std::max<int64_t>(0, n.max_length - f.count);
      most = most < 0 ? room : std::min(most, room);
    }
  }
  if (stacks_.empty()) return false;
  *max_more_chars = most;
  return true;
}

bool JsonMatcher::CanCompleteNow(const Stack& stack) const {
  return stack.size() == 1 && stack.back().kind == kNumber && NumberCanEnd(stack.back());
}

void JsonMatcher::Complete(Stack stack, std::vector<Stack>& out) const {
  stack.pop_back();
  out.push_back(std::move(stack));
}

void JsonMatcher::CompleteAndFeed(Stack stack, uint8_t byte, std::vector<Stack>& out) const {
  stack.pop_back();
  if (stack.empty()) return;  // nothing may follow the document
  Step(std::move(stack), byte, out);
}

void JsonMatcher::StartValue(Stack stack, int node_index, uint8_t byte, std::vector<Stack>& out,
                             int depth) const {
  const SchemaNode& n = node_index < 0 ? AnyNode() : schema_->node(node_index);
  if (!n.any_of.empty()) {
    // anyOf may nest (or refer back to itself): a bounded number of branches per byte.
    if (depth > kMaxAnyOfDepth || out.size() >= kMaxStacks) return;
    for (const int alternative : n.any_of) StartValue(stack, alternative, byte, out, depth + 1);
    return;
  }
  Frame f;
  f.node = node_index;
  if (n.has_values) {
    for (size_t i = 0; i < n.value_texts.size() && out.size() < kMaxStacks; ++i) {
      const std::string& text = n.value_texts[i];
      if (static_cast<uint8_t>(text[0]) != byte) continue;
      f.kind = kLiteral;
      f.item = static_cast<int32_t>(i);
      f.count = 1;
      Stack s = stack;
      s.push_back(f);
      if (text.size() == 1) {
        Complete(std::move(s), out);
      } else {
        out.push_back(std::move(s));
      }
    }
    return;
  }
  const bool room = stack.size() + 1 < static_cast<size_t>(kMaxJsonDepth);
  if (byte == '{' && (n.types & kTypeObject) && room) {
    f.kind = kObject;
    f.phase = kObjectOpen;
  } else if (byte == '[' && (n.types & kTypeArray) && room) {
    f.kind = kArray;
    f.phase = kArrayOpen;
  } else if (byte == '"' && (n.types & kTypeString)) {
    f.kind = kString;
  } else if ((byte == '-' || IsDigit(byte)) && (n.types & (kTypeNumber | kTypeInteger))) {
    f.kind = kNumber;
    if (byte == '-') {
      f.phase = kSign;
      f.flags = kFlagNegative;
    } else if (byte == '0') {
      f.phase = kZero;
    } else {
      f.phase = kInteger;
      f.value = byte - '0';
      f.digits = 1;
    }
    if (!NumberViable(f)) return;
  } else if ((byte == 't' || byte == 'f') && (n.types & kTypeBoolean)) {
    f.kind = kLiteral;
    f.node = -1;
    f.item = byte == 't' ? 0 : 1;
    f.count = 1;
  } else if (byte == 'n' && (n.types & kTypeNull)) {
    f.kind = kLiteral;
    f.node = -1;
    f.item = 2;
    f.count = 1;
  } else {
    return;
  }
  stack.push_back(f);
  out.push_back(std::move(stack));
}

void JsonMatcher::Step(Stack stack, uint8_t byte, std::vector<Stack>& out) const {
  Frame& f = stack.back();
  const SchemaNode& n = f.node < 0 ? AnyNode() : schema_->node(f.node);
  switch (f.kind) {
    case kValue: {
      const int node = f.node;
      stack.pop_back();
      StartValue(std::move(stack), node, byte, out, 0);
      return;
    }
    case kObject: {
      const bool declared = !n.properties.empty();
      const bool free_keys = !declared && n.additional_properties;
      auto required_met = [&] {
        for (size_t p = 0; p < n.properties.size(); ++p) {
          if (n.properties[p].required && !(f.seen >> p & 1)) return false;
        }
        return true;
      };
      auto has_key_left = [&] {
        if (free_keys) return true;
        for (size_t p = 0; p < n.properties.size(); ++p) {
          if (!(f.seen >> p & 1)) return true;
        }
        return false;
      };
      auto start_key = [&] {
        if (free_keys) {
          f.phase = kObjectAfterKey;
          f.item = -1;
          Frame key;
          key.kind = kString;
          key.flags = kFlagKey;
          stack.push_back(key);
          out.push_back(std::move(stack));
          return;
        }
        for (size_t p = 0; p < n.properties.size(); ++p) {
          if (f.seen >> p & 1) continue;
          f.phase = kObjectAfterKey;
          f.item = static_cast<int32_t>(p);
          Stack s = stack;
          Frame key;
          key.kind = kKey;
          key.node = f.node;
          key.item = static_cast<int32_t>(p);
          s.push_back(key);
          out.push_back(std::move(s));
        }
      };
      switch (f.phase) {
        case kObjectOpen:
          if (byte == '}' && required_met()) return Complete(std::move(stack), out);
          if (byte == '"' && has_key_left()) return start_key();
          return;
        case kObjectAfterKey: {
          if (byte != ':') return;
          f.phase = kObjectAfterValue;
          Frame value;
          value.kind = kValue;
          value.node = f.item >= 0 ? n.properties[static_cast<size_t>(f.item)].node : -1;
          stack.push_back(value);
          out.push_back(std::move(stack));
          return;
        }
        case kObjectAfterValue:
          if (byte == '}' && required_met()) return Complete(std::move(stack), out);
          if (byte == ',' && has_key_left()) {
            f.phase = kObjectExpectKey;
            out.push_back(std::move(stack));
          }
          return;
        case kObjectExpectKey:
          if (byte == '"') start_key();
          return;
      }
      return;
    }
    case kKey: {
      const std::string& name = n.properties[static_cast<size_t>(f.item)].escaped;
      if (f.count < static_cast<int64_t>(name.size())) {
        if (static_cast<uint8_t>(name[static_cast<size_t>(f.count)]) != byte) return;
        ++f.count;
        out.push_back(std::move(stack));
        return;
      }
      if (byte != '"') return;
      const int32_t property = f.item;
      stack.pop_back();
      stack.back().seen |= uint64_t{1} << property;
      out.push_back(std::move(stack));
      return;
    }
    case kArray: {
      const bool can_add = n.max_items < 0 || f.item < n.max_items;
      auto start_item = [&] {
        if (!can_add) return;
        ++f.item;
        f.phase = kArrayAfterValue;
        StartValue(std::move(stack), n.items, byte, out, 0);
      };
      switch (f.phase) {
        case kArrayOpen:
          if (byte == ']') {
            if (n.min_items == 0) Complete(std::move(stack), out);
            return;
          }
          return start_item();
        case kArrayAfterValue:
          if (byte == ']' && f.item >= n.min_items) return Complete(std::move(stack), out);
          if (byte == ',' && can_add) {
            f.phase = kArrayExpectValue;
            out.push_back(std::move(stack));
          }
          return;
        case kArrayExpectValue:
          return start_item();
      }
      return;
    }
    case kString: {
      const bool is_key = f.flags & kFlagKey;
      const int64_t max_length = is_key ? -1 : n.max_length;
      const int64_t min_length = is_key ? 0 : n.min_length;
      auto add_char = [&] {
        if (max_length >= 0 && f.count >= max_length) return false;
        ++f.count;
        return true;
      };
      if (f.phase == 1) {  // after a backslash
        static const std::string_view kEscapes = "\"\\/bfnrt";
        if (kEscapes.find(static_cast<char>(byte)) == std::string_view::npos) return;
        if (!add_char()) return;
        f.phase = 0;
        out.push_back(std::move(stack));
        return;
      }
      if (f.utf8_pending > 0) {
        if (byte < f.utf8_lo || byte > f.utf8_hi) return;
        --f.utf8_pending;
        f.utf8_lo = 0x80;
        f.utf8_hi = 0xBF;
        out.push_back(std::move(stack));
        return;
      }
      if (byte == '"') {
        if (f.count >= min_length) Complete(std::move(stack), out);
        return;
      }
      if (byte == '\\') {
        if (max_length >= 0 && f.count >= max_length) return;  // no room for what it escapes
        f.phase = 1;
        out.push_back(std::move(stack));
        return;
      }
      if (byte < 0x20) return;
      const std::optional<Utf8Lead> lead = ClassifyUtf8Lead(byte);
      if (!lead) return;  // not UTF-8
      if (!add_char()) return;
      f.utf8_pending = lead->num_continuation;
      f.utf8_lo = lead->first_lo;
      f.utf8_hi = lead->first_hi;
      out.push_back(std::move(stack));
      return;
    }
    case kNumber: {
      const bool integer_only = !(n.types & kTypeNumber);
      const bool ranged = n.minimum.has_value() || n.maximum.has_value();
      const int digit = IsDigit(byte) ? byte - '0' : -1;
      auto keep_if_viable = [&] {
        if (NumberViable(f)) out.push_back(std::move(stack));
      };
      switch (f.phase) {
        case kSign:
          if (digit == 0) {
            f.phase = kZero;
            return keep_if_viable();
          }
          if (digit > 0) {
            f.phase = kInteger;
            f.value = digit;
            f.digits = 1;
            return keep_if_viable();
          }
          return;
        case kZero:
        case kInteger:
          if (digit >= 0 && f.phase == kInteger) {
            if (f.digits >= kMaxDigits) return;
            f.value = f.value * 10 + digit;
            ++f.digits;
            return keep_if_viable();
          }
          if (byte == '.' && !integer_only) {
            f.phase = kDot;
            return keep_if_viable();
          }
          if ((byte == 'e' || byte == 'E') && !integer_only && !ranged) {
            f.phase = kExponent;
            out.push_back(std::move(stack));
            return;
          }
          break;
        case kDot:
        case kFraction:
          if (digit >= 0) {
            if (f.count >= kMaxFractionDigits) return;
            ++f.count;
            f.item = f.item * 10 + digit;  // the fraction's digits as an integer
            f.phase = kFraction;
            return keep_if_viable();
          }
          if (f.phase == kDot) return;
          if ((byte == 'e' || byte == 'E') && !ranged) {
            f.phase = kExponent;
            out.push_back(std::move(stack));
            return;
          }
          break;
        case kExponent:
          if (byte == '+' || byte == '-') {
            f.phase = kExponentSign;
            out.push_back(std::move(stack));
            return;
          }
          [[fallthrough]];
        case kExponentSign:
          if (digit < 0) return;
          f.phase = kExponentDigits;
          f.digits = 1;  // now the exponent's
          out.push_back(std::move(stack));
          return;
        case kExponentDigits:
          if (digit >= 0) {
            if (f.digits >= kMaxExponentDigits) return;
            ++f.digits;
            out.push_back(std::move(stack));
            return;
          }
          break;
      }
      // Not part of the number: it ends here, and the byte is its parent's.
      if (NumberCanEnd(f)) CompleteAndFeed(std::move(stack), byte, out);
      return;
    }
    case kLiteral: {
      const std::string_view text =
          f.node < 0 ? std::string_view(kBuiltinLiterals[f.item])
                     : std::string_view(n.value_texts[static_cast<size_t>(f.item)]);
      if (static_cast<uint8_t>(text[static_cast<size_t>(f.count)]) != byte) return;
      ++f.count;
      if (f.count == static_cast<int64_t>(text.size())) return Complete(std::move(stack), out);
      out.push_back(std::move(stack));
      return;
    }
    default:
      return;
  }
}

double JsonMatcher::Magnitude(const Frame& f) {
  return f.value + f.item / std::pow(10.0, static_cast<double>(f.count));
}

bool JsonMatcher::NumberCanEnd(const Frame& f) const {
  if (f.phase != kZero && f.phase != kInteger && f.phase != kFraction &&
      f.phase != kExponentDigits) {
    return false;
  }
  if (f.phase == kExponentDigits) return true;  // only without a range
  const SchemaNode& n = f.node < 0 ? AnyNode() : schema_->node(f.node);
  const double magnitude = f.phase == kFraction ? Magnitude(f) : f.value;
  const double x = f.flags & kFlagNegative ? -magnitude : magnitude;
  if (n.minimum && (n.exclusive_minimum ? x <= *n.minimum : x < *n.minimum)) return false;
  if (n.maximum && (n.exclusive_maximum ? x >= *n.maximum : x > *n.maximum)) return false;
  return true;
}

bool JsonMatcher::NumberViable(const Frame& f) const {
  const SchemaNode& n = f.node < 0 ? AnyNode() : schema_->node(f.node);
  if (!n.minimum && !n.maximum) return true;
  const bool integer_only = !(n.types & kTypeNumber);
  const bool negative = f.flags & kFlagNegative;
  const double inf = std::numeric_limits<double>::infinity();
  const double lo = n.minimum.value_or(-inf);
  const double hi = n.maximum.value_or(inf);
  // Whether some value in the magnitudes [a, b] (a point when a == b), signed, is in range.
  auto hits = [&](double a, double b) {
    double low = negative ? -b : a;
    double high = negative ? -a : b;
    const bool above_lo = n.exclusive_minimum ? high > lo : high >= lo;
    const bool below_hi = n.exclusive_maximum ? low < hi : low <= hi;
    return above_lo && below_hi;
  };
  switch (f.phase) {
    case kSign:
      return hits(0, inf);
    case kZero:
      return integer_only ? hits(0, 0) : hits(0, 1 - kFractionStep);
    case kInteger: {
      if (hits(f.value, f.value)) return true;
      if (!integer_only && hits(f.value, f.value + 1 - kFractionStep)) return true;
      double scale = 1;
      for (int j = f.digits; j < kMaxDigits; ++j) {
        scale *= 10;
        const double last = (f.value + 1) * scale - (integer_only ? 1 : kFractionStep);
        if (hits(f.value * scale, last)) return true;
      }
      return false;
    }
    case kDot:
      return hits(f.value, f.value + 1 - kFractionStep);
    case kFraction: {
      // More digits add less than one step of the last: at most that, less the smallest step.
      const double v = Magnitude(f);
      const double room = std::pow(10.0, -static_cast<double>(f.count)) - kFractionStep;
      return hits(v, v + std::max(0.0, room));
    }
    default:
      return true;
  }
}

}  // namespace reprise::engine
