#include "cli/store_names.h"

#include <cstdio>

#include "reprise/store_admin.h"

namespace reprise::cli {
namespace {

// The length of the valid UTF-8 sequence at the start of `s` that encodes a printable code
// point (no C0/C1 controls, no DEL), or 0.
size_t PrintableUtf8Length(std::string_view s) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = byte(0);
  if (lead >= 0x20 && lead < 0x7f) return 1;
  size_t length;
  uint32_t code;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
    code = lead & 0x1f;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    code = lead & 0x0f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    code = lead & 0x07;
  } else {
    return 0;
  }
  if (s.size() < length) return 0;
  for (size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xc0) != 0x80) return 0;
    code = (code << 6) | (byte(i) & 0x3f);
  }
  const uint32_t min_code = length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000;
  if (code < min_code || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return 0;
  if (code >= 0x80 && code <= 0x9f) return 0;  // C1 controls
  return length;
}

}  // namespace

Result<uint64_t> ParseChunkId(std::string_view text) {
  std::string_view digits = text;
  if (digits.size() >= 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
    digits.remove_prefix(2);
  }
  const std::string shown = "'" + EscapeName(text) + "'";
  if (digits.empty() || digits.size() > 16) {
    return InvalidArgumentError("chunk id " + shown + " must be 1 to 16 hex digits");
  }
  uint64_t id = 0;
  for (char c : digits) {
    int value;
    if (c >= '0' && c <= '9')
      value = c - '0';
    else if (c >= 'a' && c <= 'f')
      value = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      value = c - 'A' + 10;
    else
      return InvalidArgumentError("chunk id " + shown + " is not hex (1 to 16 hex digits)");
    id = id << 4 | static_cast<uint64_t>(value);
  }
  return id;
}

std::string FormatChunkId(uint64_t id) {
  char buffer[20];
  std::snprintf(buffer, sizeof(buffer), "%016llx", static_cast<unsigned long long>(id));
  return buffer;
}

std::string EscapeName(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  size_t i = 0;
  while (i < name.size()) {
    const char c = name[i];
    if (c == '\\') {
      out += "\\\\";
      ++i;
      continue;
    }
    const size_t length = PrintableUtf8Length(name.substr(i));
    if (length > 0) {
      out.append(name.substr(i, length));
      i += length;
      continue;
    }
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      char buffer[8];
      std::snprintf(buffer, sizeof(buffer), "\\x%02x", static_cast<unsigned char>(c));
      out += buffer;
    }
    ++i;
  }
  return out;
}

Status CheckNamespaceName(std::string_view name) {
  Status s = ValidateNamespaceName(name);
  if (s.ok() || name.empty()) return s;
  return s.WithContext("'" + EscapeName(name) + "'");
}

}  // namespace reprise::cli
