#include "store/namespace_name.h"

#include <cstdint>
#include <string>

namespace reprise::store {
namespace {

// Decodes one UTF-8 sequence at `at`; returns its length and sets `code_point`, or 0 when the
// bytes there are not valid UTF-8.
size_t DecodeUtf8(std::string_view s, size_t at, uint32_t* code_point) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const uint8_t lead = byte(at);
  size_t length = 0;
  uint32_t value = 0;
  uint32_t minimum = 0;
  if (lead < 0x80) {
    *code_point = lead;
    return 1;
  } else if ((lead & 0xe0) == 0xc0) {
    length = 2, value = lead & 0x1f, minimum = 0x80;
  } else if ((lead & 0xf0) == 0xe0) {
    length = 3, value = lead & 0x0f, minimum = 0x800;
  } else if ((lead & 0xf8) == 0xf0) {
    length = 4, value = lead & 0x07, minimum = 0x10000;
  } else {
    return 0;
  }
  if (at + length > s.size()) return 0;
  for (size_t i = 1; i < length; ++i) {
    if ((byte(at + i) & 0xc0) != 0x80) return 0;
    value = (value << 6) | (byte(at + i) & 0x3f);
  }
  if (value < minimum || value > 0x10ffff || (value >= 0xd800 && value <= 0xdfff)) return 0;
  *code_point = value;
  return length;
}

}  // namespace

Status ValidateNamespaceName(std::string_view name) {
  if (name.empty()) return InvalidArgumentError("namespace name is empty");
  if (name.size() > kMaxNamespaceNameBytes) {
    return InvalidArgumentError("namespace name of " + std::to_string(name.size()) +
                                " bytes; at most " + std::to_string(kMaxNamespaceNameBytes));
  }
  for (size_t at = 0; at < name.size();) {
    uint32_t code_point = 0;
    const size_t length = DecodeUtf8(name, at, &code_point);
    if (length == 0) {
      return InvalidArgumentError("namespace name is not valid UTF-8 (at byte " +
                                  std::to_string(at) + ")");
    }
    if (code_point < 0x20 || (code_point >= 0x7f && code_point <= 0x9f)) {
      return InvalidArgumentError("namespace name holds a control character (at byte " +
                                  std::to_string(at) + ")");
    }
    at += length;
  }
  return Status::Ok();
}

}  // namespace reprise::store
