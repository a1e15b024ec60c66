// Byte-level text helpers shared by the tokenizers: UTF-8 sequence boundaries (lenient, so
// that arbitrary bytes never break encoding) and GPT-2's byte-to-unicode mapping, which
// byte-level BPE vocabularies use to store every byte as a printable character.
//
// All functions are pure and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace reprise::tokenizer {

// The length of the well-formed UTF-8 sequence that starts at `text[offset]` (1 to 4), or 0
// when the bytes there are not one (a stray continuation byte, an overlong form, a surrogate,
// a code point past U+10FFFF, or a sequence cut short by the end of `text`).
// Requires: offset < text.size().
size_t ValidUtf8SequenceLength(std::string_view text, size_t offset);

// The number of bytes at the end of `text` that form the beginning of a UTF-8 sequence that
// could still be completed by more bytes (0 to 3). Used to hold back partial characters.
size_t IncompleteUtf8TailLength(std::string_view text);

// Decodes the well-formed sequence at `text[offset]`; nullopt when it is not one.
std::optional<uint32_t> DecodeUtf8At(std::string_view text, size_t offset);

// Appends the UTF-8 form of `code_point` (requires: a Unicode scalar value).
void AppendUtf8(uint32_t code_point, std::string& out);

// GPT-2's byte-to-unicode table: printable Latin-1 bytes map to themselves, the other 68 to
// U+0100 and up. Returns the UTF-8 text of the character that stands for `byte`.
std::string_view ByteToGpt2Char(uint8_t byte);

// `bytes` with every byte replaced by its GPT-2 character (the form of BPE token texts).
std::string BytesToGpt2Text(std::string_view bytes);

// The inverse of BytesToGpt2Text. Characters outside the table (or invalid UTF-8) are copied
// through unchanged, so any token text decodes to something.
std::string Gpt2TextToBytes(std::string_view text);

}  // namespace reprise::tokenizer
