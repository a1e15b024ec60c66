#include "tokenizer/text_encoding.h"

#include <array>

namespace reprise::tokenizer {
namespace {

bool IsContinuation(uint8_t byte) { return (byte & 0xC0) == 0x80; }

// The table of GPT-2's bytes_to_unicode(): bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF keep
// their own code point; the remaining bytes, in increasing order, get U+0100, U+0101, ...
struct Gpt2Table {
  std::array<std::string, 256> byte_to_text;
  std::array<int16_t, 324> code_point_to_byte;  // code points 0..323; -1 when unmapped

  Gpt2Table() {
    code_point_to_byte.fill(-1);
    uint32_t next_extra = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      const uint32_t code_point = printable ? b : next_extra++;
      AppendUtf8(code_point, byte_to_text[b]);
      code_point_to_byte[code_point] = static_cast<int16_t>(b);
    }
  }
};

const Gpt2Table& Table() {
  static const Gpt2Table table;
  return table;
}

}  // namespace

size_t ValidUtf8SequenceLength(std::string_view text, size_t offset) {
  const auto* s = reinterpret_cast<const uint8_t*>(text.data()) + offset;
  const size_t available = text.size() - offset;
  const uint8_t lead = s[0];
  if (lead < 0x80) return 1;
  size_t length = 0;
  uint32_t min_code_point = 0;
  uint32_t code_point = 0;
  if ((lead & 0xE0) == 0xC0) {
    length = 2;
    min_code_point = 0x80;
    code_point = lead & 0x1F;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3;
    min_code_point = 0x800;
    code_point = lead & 0x0F;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4;
    min_code_point = 0x10000;
    code_point = lead & 0x07;
  } else {
    return 0;
  }
  if (available < length) return 0;
  for (size_t i = 1; i < length; ++i) {
    if (!IsContinuation(s[i])) return 0;
    code_point = (code_point << 6) | (s[i] & 0x3F);
  }
  if (code_point < min_code_point || code_point > 0x10FFFF) return 0;
  if (code_point >= 0xD800 && code_point <= 0xDFFF) return 0;
  return length;
}

size_t IncompleteUtf8TailLength(std::string_view text) {
  // Look back over at most 3 continuation bytes for a lead byte whose sequence runs past the
  // end of the text.
  const size_t n = text.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto byte = static_cast<uint8_t>(text[n - back]);
    if (IsContinuation(byte)) continue;
    size_t needed = 0;
    if ((byte & 0xE0) == 0xC0) {
      needed = 2;
    } else if ((byte & 0xF0) == 0xE0) {
      needed = 3;
    } else if ((byte & 0xF8) == 0xF0) {
      needed = 4;
    }
    return needed > back ? back : 0;
  }
  return 0;
}

std::optional<uint32_t> DecodeUtf8At(std::string_view text, size_t offset) {
  const size_t length = ValidUtf8SequenceLength(text, offset);
  if (length == 0) return std::nullopt;
  const auto* s = reinterpret_cast<const uint8_t*>(text.data()) + offset;
  if (length == 1) return s[0];
  uint32_t code_point = s[0] & (0x7F >> length);
  for (size_t i = 1; i < length; ++i) code_point = (code_point << 6) | (s[i] & 0x3F);
  return code_point;
}

void AppendUtf8(uint32_t code_point, std::string& out) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xC0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xE0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code_point >> 18));
    out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
}

std::string_view ByteToGpt2Char(uint8_t byte) { return Table().byte_to_text[byte]; }

std::string BytesToGpt2Text(std::string_view bytes) {
  const Gpt2Table& table = Table();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += table.byte_to_text[static_cast<uint8_t>(c)];
  return out;
}

std::string Gpt2TextToBytes(std::string_view text) {
  const Gpt2Table& table = Table();
  std::string out;
  out.reserve(text.size());
  size_t offset = 0;
  while (offset < text.size()) {
    const size_t length = ValidUtf8SequenceLength(text, offset);
    if (length == 0) {
      out += text[offset++];
      continue;
    }
    const uint32_t code_point = *DecodeUtf8At(text, offset);
    if (code_point < table.code_point_to_byte.size() && table.code_point_to_byte[code_point] >= 0) {
      out += static_cast<char>(table.code_point_to_byte[code_point]);
    } else {
      out.append(text.substr(offset, length));
    }
    offset += length;
  }
  return out;
}

}  // namespace reprise::tokenizer
