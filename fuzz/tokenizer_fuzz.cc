// libFuzzer target for the tokenizers: SentencePiece-style (with and without byte fallback)
// and byte-level BPE under every supported pre-tokenizer, built from small vocabularies
// defined here. The first input byte picks the vocabulary and the options (parse_special,
// add_special, skip_special); the rest is the text to encode and, read as int32s, ids to
// decode. Checked properties (a failure traps):
//   * encoding never crashes and yields only valid ids;
//   * without parsed specials, Decode(Encode(x)) == x where the vocabulary can spell every
//     byte (byte-level BPE; SPM with byte tokens, except text holding U+2581 itself, which
//     SPM reads as its space marker, or a user-defined token's text, after which SPM adds a
//     space as llama.cpp does);
//   * decoding any ids (negative, out of range) never crashes, and streaming them through a
//     StreamingDecoder gives the same text as Decode.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/streaming_decoder.h"
#include "tokenizer/text_encoding.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace {

using reprise::tokenizer::DecodeOptions;
using reprise::tokenizer::EncodeOptions;
using reprise::tokenizer::StreamingDecoder;
using reprise::tokenizer::TokenId;
using reprise::tokenizer::Tokenizer;
using reprise::tokenizer::TokenType;
using reprise::tokenizer::Vocab;
using reprise::tokenizer::VocabKind;

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";

void Add(Vocab& v, std::string text, TokenType type, float score = 0.0f) {
  v.tokens.push_back(std::move(text));
  v.token_types.push_back(type);
  v.scores.push_back(score);
}

// An SPM vocabulary: <unk>, <s>, </s>, optionally the 256 byte tokens, a few pieces, a
// control token that looks like a chat marker and a user-defined one.
Vocab SpmVocab(bool byte_fallback, bool space_prefix) {
  Vocab v;
  v.kind = VocabKind::kSpm;
  Add(v, "<unk>", TokenType::kUnknown);
  Add(v, "<s>", TokenType::kControl);
  Add(v, "</s>", TokenType::kControl);
  if (byte_fallback) {
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", b);
      Add(v, name, TokenType::kByte);
    }
  }
  Add(v, "<|im_start|>", TokenType::kControl);
  Add(v, "<think>", TokenType::kUserDefined);
  float score = -1.0f;
  for (const char* piece : {"\xE2\x96\x81",
                            "a",
                            "b",
                            "c",
                            "e",
                            "h",
                            "t",
                            "\xE2\x96\x81"
                            "a",
                            "\xE2\x96\x81"
                            "the",
                            "th",
                            "he",
                            "the",
                            "ab",
                            "abc",
                            "\xC3\xA9",
                            "\xE2\x96\x81\xC3\xA9",
                            "<",
                            ">",
                            "|",
                            "\xE2\x96\x81\xE2\x96\x81"}) {
    Add(v, piece, TokenType::kNormal, score);
    score -= 1.0f;
  }
  v.bos_id = 1;
  v.eos_id = 2;
  v.unk_id = 0;
  v.add_bos = true;
  v.add_space_prefix = space_prefix;
  return v;
}

// A byte-level BPE vocabulary: the 256 byte characters, merges building a few words, and the
// ChatML specials; `pre` names the pre-tokenizer.
Vocab BpeVocab(std::string pre) {
  using reprise::tokenizer::ByteToGpt2Char;
  Vocab v;
  v.kind = VocabKind::kBpe;
  v.pre = std::move(pre);
  v.add_space_prefix = false;
  for (int b = 0; b < 256; ++b)
    Add(v, std::string(ByteToGpt2Char(static_cast<uint8_t>(b))), TokenType::kNormal);
  const std::string sp(ByteToGpt2Char(' '));
  const std::pair<std::string, std::string> merges[] = {
      {"t", "h"},  {"th", "e"},  {sp, "the"}, {sp, "a"},  {"a", "b"},
      {"ab", "c"}, {"\n", "\n"}, {sp, sp},    {"1", "2"}, {"12", "3"}};
  for (const auto& [l, r] : merges) {
    v.merges.push_back(l + " " + r);
    Add(v, l + r, TokenType::kNormal);
  }
  Add(v, "<|endoftext|>", TokenType::kControl);
  Add(v, "<|im_start|>", TokenType::kControl);
  Add(v, "<|im_end|>", TokenType::kControl);
  Add(v, "<think>", TokenType::kUserDefined);
  v.scores.clear();
  v.eos_id = static_cast<TokenId>(v.tokens.size() - 4);
  v.eot_id = static_cast<TokenId>(v.tokens.size() - 2);
  return v;
}

struct Entry {
  std::unique_ptr<Tokenizer> tokenizer;
  bool round_trips;  // every byte can be spelled
  bool spm;
};

std::vector<Entry>& Tokenizers() {
  static std::vector<Entry>* all = [] {
    auto* out = new std::vector<Entry>();
    auto add = [out](Vocab v, bool round_trips) {
      const bool spm = v.kind == VocabKind::kSpm;
      auto t = Tokenizer::Create(std::move(v));
      if (!t.ok()) {
        std::fprintf(stderr, "fuzz vocabulary rejected: %s\n", t.error().ToString().c_str());
        std::abort();
      }
      out->push_back({std::move(t).value(), round_trips, spm});
    };
    add(SpmVocab(true, true), true);
    add(SpmVocab(true, false), true);
    add(SpmVocab(false, true), false);
    for (const char* pre : {"llama-bpe", "qwen2", "gpt2", "smollm", "default"}) {
      add(BpeVocab(pre), true);
    }
    return out;
  }();
  return *all;
}

void Trap(bool failed) {
  if (failed) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::vector<Entry>& tokenizers = Tokenizers();
  const uint8_t selector = data[0];
  const Entry& entry = tokenizers[(selector & 0x0f) % tokenizers.size()];
  const Tokenizer& tok = *entry.tokenizer;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

  EncodeOptions encode;
  encode.parse_special = (selector & 0x10) != 0;
  encode.add_special = (selector & 0x20) != 0;
  const std::vector<TokenId> ids = tok.Encode(text, encode);
  for (TokenId id : ids) Trap(!tok.IsValid(id));

  DecodeOptions decode;
  decode.skip_special = (selector & 0x40) != 0;
  decode.strip_leading_space = (selector & 0x80) == 0;
  const std::string decoded = tok.Decode(ids, decode);
  // SPM exceptions (llama.cpp behaves the same): U+2581 in the text reads as a space, and
  // with add_space_prefix a space is added after every special or user-defined token (the
  // always-recognised "<think>" here).
  const bool spm_exception =
      entry.spm && (text.find(kSpmSpace) != text.npos ||
                    (tok.vocab().add_space_prefix && text.find("<think>") != text.npos));
  if (entry.round_trips && !encode.parse_special && !encode.add_special && !decode.skip_special &&
      decode.strip_leading_space && !spm_exception) {
    if (decoded != text) {
      std::fprintf(stderr, "round trip failed: %zu bytes in, %zu out\n", text.size(),
                   decoded.size());
      __builtin_trap();
    }
  }

  // The input read as ids: anything, including negative and out-of-range values.
  std::vector<TokenId> raw((size - 1) / 4);
  if (!raw.empty()) std::memcpy(raw.data(), data + 1, raw.size() * 4);
  for (TokenId& id : raw) {
    // Mostly small ids (reach real tokens), sometimes the raw value.
    if ((id & 0x40000000) == 0) id = static_cast<TokenId>(static_cast<uint32_t>(id) % 700) - 20;
    (void)tok.TokenText(id);
    (void)tok.TokenPiece(id);
    (void)tok.IsSpecial(id);
    (void)tok.IsEndOfGeneration(id);
  }
  const std::string whole = tok.Decode(raw, decode);
  StreamingDecoder stream(tok, decode);
  std::string streamed;
  for (TokenId id : raw) streamed += stream.Push(id);
  streamed += stream.Flush();
  Trap(streamed != whole);
  return 0;
}
