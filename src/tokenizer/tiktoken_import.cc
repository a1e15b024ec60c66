#include "tokenizer/tiktoken_import.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <unordered_map>
#include <utility>

#include "base/file_util.h"
#include "tokenizer/text_encoding.h"

namespace reprise::tokenizer {
namespace {

constexpr size_t kLlama3NumRanks = 128000;
constexpr size_t kLlama3NumSpecials = 256;
constexpr size_t kQwenNumRanks = 151643;

// Minimal Jinja templates in the models' formats, so that chat-format detection (and other
// engines reading the GGUF) see what the models expect. FormatChat renders the same layout.
constexpr std::string_view kLlama3ChatTemplate =
    "{{- bos_token }}{%- for message in messages %}{{- '<|start_header_id|>' + message['role'] "
    "+ '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
    "{%- endif %}";
constexpr std::string_view kChatMlTemplate =
    "{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n' }}{%- endfor %}{%- if add_generation_prompt %}"
    "{{- '<|im_start|>assistant\\n' }}{%- endif %}";

int Base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Standard base64 with optional '=' padding; nullopt on any other character.
std::optional<std::string> DecodeBase64(std::string_view text) {
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t buffer = 0;
  int num_bits = 0;
  for (char c : text) {
    const int value = Base64Value(c);
    if (value < 0) return std::nullopt;
    buffer = (buffer << 6) | static_cast<uint32_t>(value);
    num_bits += 6;
    if (num_bits >= 8) {
      num_bits -= 8;
      out += static_cast<char>((buffer >> num_bits) & 0xFF);
    }
  }
  return out;
}

std::vector<std::string> Llama3Specials() {
  std::vector<std::string> names = {"<|begin_of_text|>",
                                    "<|end_of_text|>",
                                    "<|reserved_special_token_0|>",
                                    "<|reserved_special_token_1|>",
                                    "<|finetune_right_pad_id|>",
                                    "<|step_id|>",
                                    "<|start_header_id|>",
                                    "<|end_header_id|>",
                                    "<|eom_id|>",
                                    "<|eot_id|>",
                                    "<|python_tag|>",
                                    "<|image|>"};
  // The rest are reserved, numbered on from 2.
  for (size_t n = 2; names.size() < kLlama3NumSpecials; ++n) {
    names.push_back("<|reserved_special_token_" + std::to_string(n) + "|>");
  }
  return names;
}

// Qwen2.5 / Qwen3 added tokens from 151643 on. The "<|...|>" ones are control tokens; the tool
// and thinking tags are user-defined (Hugging Face marks them special=false, and llama.cpp's
// converter types them so), which makes them visible in decoded text.
std::vector<std::pair<std::string, TokenType>> QwenSpecials() {
  std::vector<std::pair<std::string, TokenType>> specials;
  for (const char* name :
       {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
        "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
        "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>"}) {
    specials.emplace_back(name, TokenType::kControl);
  }
  specials.emplace_back("<tool_call>", TokenType::kUserDefined);
  specials.emplace_back("</tool_call>", TokenType::kUserDefined);
  for (const char* name : {"<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
                           "<|repo_name|>", "<|file_sep|>"}) {
    specials.emplace_back(name, TokenType::kControl);
  }
  for (const char* name : {"<tool_response>", "</tool_response>", "<think>", "</think>"}) {
    specials.emplace_back(name, TokenType::kUserDefined);
  }
  return specials;
}

// The last two parts of BPE replayed on `token` with ranks below `rank`, or false.
bool ReplaySplit(std::string_view token, size_t rank,
                 const std::unordered_map<std::string_view, size_t>& rank_of,
                 std::vector<std::pair<size_t, size_t>>& parts) {
  parts.clear();
  for (size_t i = 0; i < token.size(); ++i) parts.emplace_back(i, 1);  // (offset, length)
  while (parts.size() > 2) {
    size_t best_rank = rank;
    size_t best = parts.size();
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      auto it = rank_of.find(token.substr(parts[i].first, parts[i].second + parts[i + 1].second));
      if (it != rank_of.end() && it->second < best_rank) {
        best_rank = it->second;
        best = i;
      }
    }
    if (best == parts.size()) return false;
    parts[best].second += parts[best + 1].second;
    parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
  for (const auto& [offset, length] : parts) {
    auto it = rank_of.find(token.substr(offset, length));
    if (it == rank_of.end() || it->second >= rank) return false;
  }
  return true;
}

std::string MergeText(std::string_view left, std::string_view right) {
  return BytesToGpt2Text(left) + " " + BytesToGpt2Text(right);
}

}  // namespace

Result<std::vector<std::string>> ParseTiktokenRanks(std::string_view contents) {
  std::vector<std::string> by_rank;
  std::vector<bool> seen;
  size_t line_number = 0;
  size_t start = 0;
  while (start < contents.size()) {
    size_t end = contents.find('\n', start);
    if (end == std::string_view::npos) end = contents.size();
    std::string_view line = contents.substr(start, end - start);
    start = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const size_t space = line.find(' ');
    auto bad_line = [&](std::string_view why) {
      return CorruptError("tiktoken line " + std::to_string(line_number) + ": " + std::string(why));
    };
    if (space == std::string_view::npos) return bad_line("expected '<base64> <rank>'");
    std::optional<std::string> bytes = DecodeBase64(line.substr(0, space));
    if (!bytes || bytes->empty()) return bad_line("bad base64 token");
    const std::string_view rank_text = line.substr(space + 1);
    size_t rank = 0;
    auto [ptr, error] =
        std::from_chars(rank_text.data(), rank_text.data() + rank_text.size(), rank);
    if (error != std::errc() || ptr != rank_text.data() + rank_text.size()) {
      return bad_line("bad rank");
    }
    if (rank >= (1u << 24)) return bad_line("rank too large");
    if (rank >= by_rank.size()) {
      by_rank.resize(rank + 1);
      seen.resize(rank + 1, false);
    }
    if (seen[rank]) return bad_line("rank " + std::to_string(rank) + " appears twice");
    seen[rank] = true;
    by_rank[rank] = std::move(*bytes);
  }
  for (size_t rank = 0; rank < seen.size(); ++rank) {
    if (!seen[rank])
      return CorruptError("tiktoken file has no token of rank " + std::to_string(rank));
  }
  if (by_rank.empty()) return CorruptError("tiktoken file has no tokens");
  return by_rank;
}

std::vector<std::string> MergesFromRanks(const std::vector<std::string>& ranked_bytes,
                                         MergeRecovery recovery) {
  std::unordered_map<std::string_view, size_t> rank_of;
  rank_of.reserve(ranked_bytes.size());
  for (size_t rank = 0; rank < ranked_bytes.size(); ++rank) {
    rank_of.try_emplace(ranked_bytes[rank], rank);
  }
  std::vector<std::string> merges;
  merges.reserve(ranked_bytes.size() * (recovery == MergeRecovery::kAllSplits ? 3 : 1));
  std::vector<std::pair<size_t, size_t>> parts;
  struct Split {
    size_t left_rank;
    size_t right_rank;
    size_t at;
  };
  std::vector<Split> splits;
  for (size_t rank = 0; rank < ranked_bytes.size(); ++rank) {
    const std::string_view token = ranked_bytes[rank];
    if (token.size() < 2) continue;
    if (recovery == MergeRecovery::kReplay) {
      if (ReplaySplit(token, rank, rank_of, parts) && parts.size() == 2) {
        merges.push_back(MergeText(token.substr(0, parts[1].first), token.substr(parts[1].first)));
      }
      continue;
    }
    splits.clear();
    for (size_t at = 1; at < token.size(); ++at) {
      auto left = rank_of.find(token.substr(0, at));
      auto right = rank_of.find(token.substr(at));
      if (left != rank_of.end() && right != rank_of.end()) {
        splits.push_back(Split{left->second, right->second, at});
      }
    }
    std::sort(splits.begin(), splits.end(), [](const Split& a, const Split& b) {
      return a.left_rank != b.left_rank ? a.left_rank < b.left_rank : a.right_rank < b.right_rank;
    });
    for (const Split& split : splits) {
      merges.push_back(MergeText(token.substr(0, split.at), token.substr(split.at)));
    }
  }
  return merges;
}

Result<Vocab> VocabFromTiktoken(const std::string& path, TiktokenFamily family) {
  REPRISE_ASSIGN_OR_RETURN(std::string contents, ReadFileToString(path));
  REPRISE_ASSIGN_OR_RETURN(std::vector<std::string> ranked_bytes, ParseTiktokenRanks(contents));
  const size_t expected = family == TiktokenFamily::kLlama3 ? kLlama3NumRanks : kQwenNumRanks;
  if (ranked_bytes.size() != expected) {
    return CorruptError(path + " has " + std::to_string(ranked_bytes.size()) +
                        " ranks; this tokenizer family has " + std::to_string(expected));
  }
  Vocab vocab;
  vocab.kind = VocabKind::kBpe;
  vocab.add_space_prefix = false;
  vocab.add_eos = false;
  vocab.merges =
      MergesFromRanks(ranked_bytes, family == TiktokenFamily::kLlama3 ? MergeRecovery::kAllSplits
                                                                      : MergeRecovery::kReplay);
  vocab.tokens.reserve(ranked_bytes.size() + kLlama3NumSpecials);
  for (const std::string& bytes : ranked_bytes) vocab.tokens.push_back(BytesToGpt2Text(bytes));
  vocab.token_types.assign(ranked_bytes.size(), TokenType::kNormal);
  const auto first_special = static_cast<TokenId>(ranked_bytes.size());

  if (family == TiktokenFamily::kLlama3) {
    for (std::string& name : Llama3Specials()) {
      vocab.tokens.push_back(std::move(name));
      vocab.token_types.push_back(TokenType::kControl);
    }
    vocab.pre = "llama-bpe";
    vocab.bos_id = first_special;      // <|begin_of_text|>
    vocab.eos_id = first_special + 1;  // <|end_of_text|>
    vocab.eom_id = first_special + 8;  // <|eom_id|>
    vocab.eot_id = first_special + 9;  // <|eot_id|>
    vocab.add_bos = true;
    vocab.chat_template = std::string(kLlama3ChatTemplate);
  } else {
    for (auto& [name, type] : QwenSpecials()) {
      vocab.tokens.push_back(std::move(name));
      vocab.token_types.push_back(type);
    }
    vocab.pre = "qwen2";
    vocab.bos_id = first_special;      // <|endoftext|>, never added
    vocab.eos_id = first_special;      // <|endoftext|>
    vocab.eot_id = first_special + 2;  // <|im_end|>
    vocab.pad_id = first_special;
    vocab.add_bos = false;
    vocab.chat_template = std::string(kChatMlTemplate);
  }
  REPRISE_RETURN_IF_ERROR(vocab.Validate());
  return vocab;
}

}  // namespace reprise::tokenizer
