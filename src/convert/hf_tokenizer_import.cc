#include "convert/hf_tokenizer_import.h"

#include <filesystem>
#include <limits>
#include <map>
#include <system_error>

#include "convert/json_util.h"

namespace reprise::convert {
namespace {

using tokenizer::TokenId;
using tokenizer::TokenType;
using tokenizer::Vocab;
using tokenizer::VocabKind;

bool IsByteToken(const std::string& text) {
  return text.size() == 6 && text.compare(0, 3, "<0x") == 0 && text[5] == '>' &&
         std::isxdigit(static_cast<unsigned char>(text[3])) &&
         std::isxdigit(static_cast<unsigned char>(text[4]));
}

// True when any element of the (possibly nested) pre_tokenizer/decoder is of `type`.
bool HasComponent(const nlohmann::json& node, std::string_view type) {
  if (node.is_object()) {
    auto t = node.find("type");
    if (t != node.end() && t->is_string() && t->get<std::string>() == type) return true;
    for (const auto& [key, value] : node.items()) {
      if (HasComponent(value, type)) return true;
    }
  } else if (node.is_array()) {
    for (const auto& value : node) {
      if (HasComponent(value, type)) return true;
    }
  }
  return false;
}

// The regex string of the first Split component, or "".
std::string SplitRegex(const nlohmann::json& node) {
  if (node.is_object()) {
    auto t = node.find("type");
    if (t != node.end() && t->is_string() && t->get<std::string>() == "Split") {
      auto pattern = node.find("pattern");
      if (pattern != node.end() && pattern->is_object()) {
        auto regex = pattern->find("Regex");
        if (regex != pattern->end() && regex->is_string()) return regex->get<std::string>();
      }
    }
    for (const auto& [key, value] : node.items()) {
      std::string found = SplitRegex(value);
      if (!found.empty()) return found;
    }
  } else if (node.is_array()) {
    for (const auto& value : node) {
      std::string found = SplitRegex(value);
      if (!found.empty()) return found;
    }
  }
  return "";
}

std::string DetectBytePre(const nlohmann::json& tok, const nlohmann::json& config) {
  const std::string regex = SplitRegex(tok.value("pre_tokenizer", nlohmann::json()));
  if (regex.find("\\p{N}{1,3}") != std::string::npos) return "llama-bpe";
  if (regex.find("\\p{N}|") != std::string::npos || regex.find("\\p{N}]") != std::string::npos) {
    return "qwen2";
  }
  const std::string model_type = StringOr(config, "model_type", "");
  if (model_type == "qwen2" || model_type == "qwen3") return "qwen2";
  if (HasComponent(tok.value("pre_tokenizer", nlohmann::json()), "Digits")) return "smollm";
  return "gpt2";
}

// A token named by tokenizer_config.json: a string or {"content": ...}.
std::optional<std::string> ConfigTokenText(const nlohmann::json& tc, std::string_view key) {
  if (!tc.is_object()) return std::nullopt;
  auto it = tc.find(key);
  if (it == tc.end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    return (*it)["content"].get<std::string>();
  }
  return std::nullopt;
}

std::optional<TokenId> ConfigId(const nlohmann::json& config, std::string_view key) {
  auto it = config.find(key);
  if (it == config.end()) return std::nullopt;
  const nlohmann::json* value = &*it;
  if (value->is_array() && !value->empty()) value = &(*value)[0];
  if (!value->is_number_integer()) return std::nullopt;
  // An id that does not fit a token id is ignored like a missing one, never truncated.
  if (value->is_number_unsigned()) {
    const uint64_t id = value->get<uint64_t>();
    if (id > static_cast<uint64_t>(std::numeric_limits<TokenId>::max())) return std::nullopt;
    return static_cast<TokenId>(id);
  }
  const int64_t id = value->get<int64_t>();
  if (id < std::numeric_limits<TokenId>::min() || id > std::numeric_limits<TokenId>::max()) {
    return std::nullopt;
  }
  return static_cast<TokenId>(id);
}

std::string ChatTemplate(const nlohmann::json& tc) {
  if (!tc.is_object()) return "";
  auto it = tc.find("chat_template");
  if (it == tc.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array()) {
    for (const auto& entry : *it) {
      if (entry.is_object() && StringOr(entry, "name", "") == "default" &&
          entry.contains("template") && entry["template"].is_string()) {
        return entry["template"].get<std::string>();
      }
    }
  }
  return "";
}

}  // namespace

Result<Vocab> ImportHfTokenizer(const std::string& dir, const nlohmann::json& config,
                                int vocab_size) {
  REPRISE_ASSIGN_OR_RETURN(nlohmann::json tok, ReadJsonFile(dir + "/tokenizer.json"));
  nlohmann::json tc = nlohmann::json::object();
  std::error_code ec;
  if (std::filesystem::exists(dir + "/tokenizer_config.json", ec)) {
    REPRISE_ASSIGN_OR_RETURN(tc, ReadJsonFile(dir + "/tokenizer_config.json"));
  }
  const std::string what = dir + "/tokenizer.json";
  if (!tok.is_object() || !tok.contains("model") || !tok["model"].is_object()) {
    return CorruptError(what + ": no 'model' object");
  }
  const nlohmann::json& model = tok["model"];
  REPRISE_ASSIGN_OR_RETURN(std::string type, RequiredJson<std::string>(model, "type", what));
  if (type != "BPE") {
    return UnimplementedError(what + ": tokenizer model '" + type +
                              "' is not supported (BPE only)");
  }
  // Ids are read one by one: nlohmann's conversion of a float such as 1e93 to an integer is
  // undefined behaviour (found by fuzz/convert_fuzz), so only JSON integers in range are taken.
  if (!model.contains("vocab") || !model["vocab"].is_object()) {
    return CorruptError(what + ": 'model.vocab' must be an object of token ids");
  }
  std::map<std::string, int64_t> vocab_map;
  for (const auto& [text, value] : model["vocab"].items()) {
    if (!value.is_number_integer()) {
      return CorruptError(what + ": the id of a vocabulary token is not an integer");
    }
    const bool fits = value.is_number_unsigned()
                          ? value.get<uint64_t>() < (1u << 24)
                          : value.get<int64_t>() >= 0 && value.get<int64_t>() < (1 << 24);
    if (!fits) return CorruptError(what + ": a vocabulary token id is out of range");
    vocab_map[text] = value.get<int64_t>();
  }
  REPRISE_ASSIGN_OR_RETURN(std::optional<bool> byte_fallback,
                           OptionalJson<bool>(model, "byte_fallback", what));
  const bool byte_level = HasComponent(tok.value("pre_tokenizer", nlohmann::json()), "ByteLevel") ||
                          HasComponent(tok.value("decoder", nlohmann::json()), "ByteLevel");
  Vocab vocab;
  if (byte_level) {
    vocab.kind = VocabKind::kBpe;
    vocab.pre = DetectBytePre(tok, config);
  } else if (byte_fallback.value_or(false) ||
             HasComponent(tok.value("decoder", nlohmann::json()), "ByteFallback")) {
    vocab.kind = VocabKind::kSpm;
  } else {
    return UnimplementedError(what +
                              ": a BPE tokenizer that is neither byte-level nor "
                              "SentencePiece-style (byte_fallback) is not supported");
  }

  // Ids: base vocab plus added tokens; the table must be dense.
  int64_t max_id = -1;
  for (const auto& [text, id] : vocab_map) {
    if (id < 0 || id >= (1 << 24)) return CorruptError(what + ": token id " + std::to_string(id));
    max_id = std::max(max_id, id);
  }
  struct Added {
    std::string text;
    bool special;
  };
  std::map<int64_t, Added> added;
  if (tok.contains("added_tokens") && tok["added_tokens"].is_array()) {
    for (const auto& entry : tok["added_tokens"]) {
      REPRISE_ASSIGN_OR_RETURN(int64_t id, RequiredJson<int64_t>(entry, "id", what));
      REPRISE_ASSIGN_OR_RETURN(std::string content,
                               RequiredJson<std::string>(entry, "content", what));
      REPRISE_ASSIGN_OR_RETURN(std::optional<bool> special,
                               OptionalJson<bool>(entry, "special", what));
      if (id < 0 || id >= (1 << 24)) {
        return CorruptError(what + ": added token id " + std::to_string(id));
      }
      added[id] = Added{content, special.value_or(false)};
      max_id = std::max(max_id, id);
    }
  }
  const int64_t num_tokens = std::max<int64_t>(max_id + 1, vocab_size);
  if (num_tokens <= 0 || num_tokens > (1 << 24)) {
    return CorruptError(what + ": vocabulary size " + std::to_string(num_tokens));
  }
  vocab.tokens.assign(static_cast<size_t>(num_tokens), "");
  vocab.token_types.assign(static_cast<size_t>(num_tokens), TokenType::kUnused);
  std::vector<bool> filled(static_cast<size_t>(num_tokens), false);
  for (const auto& [text, id] : vocab_map) {
    if (id < 0) return CorruptError(what + ": negative token id");
    vocab.tokens[static_cast<size_t>(id)] = text;
    vocab.token_types[static_cast<size_t>(id)] =
        vocab.kind == VocabKind::kSpm && IsByteToken(text) ? TokenType::kByte : TokenType::kNormal;
    filled[static_cast<size_t>(id)] = true;
  }
  for (const auto& [id, token] : added) {
    if (id < 0) return CorruptError(what + ": negative added token id");
    vocab.tokens[static_cast<size_t>(id)] = token.text;
    vocab.token_types[static_cast<size_t>(id)] =
        token.special ? TokenType::kControl : TokenType::kUserDefined;
    filled[static_cast<size_t>(id)] = true;
  }
  for (size_t i = 0; i < filled.size(); ++i) {
    if (!filled[i]) vocab.tokens[i] = "[PAD" + std::to_string(i) + "]";
  }
  if (vocab.kind == VocabKind::kSpm) {
    vocab.scores.resize(vocab.tokens.size());
    for (size_t i = 0; i < vocab.scores.size(); ++i) vocab.scores[i] = -static_cast<float>(i);
  }

  if (model.contains("merges") && model["merges"].is_array()) {
    for (const auto& merge : model["merges"]) {
      if (merge.is_string()) {
        vocab.merges.push_back(merge.get<std::string>());
      } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
                 merge[1].is_string()) {
        vocab.merges.push_back(merge[0].get<std::string>() + " " + merge[1].get<std::string>());
      } else {
        return CorruptError(what + ": a merge is neither \"a b\" nor [a, b]");
      }
    }
  }
  if (vocab.kind == VocabKind::kSpm) vocab.merges.clear();  // SPM merges by score

  auto find_id = [&](const std::optional<std::string>& text) -> std::optional<TokenId> {
    if (!text) return std::nullopt;
    for (size_t i = 0; i < vocab.tokens.size(); ++i) {
      if (vocab.tokens[i] == *text) return static_cast<TokenId>(i);
    }
    return std::nullopt;
  };
  vocab.bos_id = find_id(ConfigTokenText(tc, "bos_token"));
  if (!vocab.bos_id) vocab.bos_id = ConfigId(config, "bos_token_id");
  vocab.eos_id = find_id(ConfigTokenText(tc, "eos_token"));
  if (!vocab.eos_id) vocab.eos_id = ConfigId(config, "eos_token_id");
  vocab.pad_id = find_id(ConfigTokenText(tc, "pad_token"));
  if (vocab.kind == VocabKind::kSpm) {
    vocab.unk_id = find_id(ConfigTokenText(tc, "unk_token"));
    if (!vocab.unk_id && model.contains("unk_token") && model["unk_token"].is_string()) {
      vocab.unk_id = find_id(model["unk_token"].get<std::string>());
    }
    if (vocab.unk_id) vocab.token_types[static_cast<size_t>(*vocab.unk_id)] = TokenType::kUnknown;
  }
  // End-of-turn markers of the chat formats we know.
  if (auto eot = find_id(std::string("<|eot_id|>")))
    vocab.eot_id = eot;
  else if (auto im_end = find_id(std::string("<|im_end|>")))
    vocab.eot_id = im_end;
  if (auto eom = find_id(std::string("<|eom_id|>"))) vocab.eom_id = eom;

  REPRISE_ASSIGN_OR_RETURN(std::optional<bool> add_bos,
                           OptionalJson<bool>(tc, "add_bos_token", "tokenizer_config.json"));
  REPRISE_ASSIGN_OR_RETURN(std::optional<bool> add_eos,
                           OptionalJson<bool>(tc, "add_eos_token", "tokenizer_config.json"));
  // A BOS in the post-processor template also means "add BOS".
  const bool template_bos = vocab.bos_id && tok.contains("post_processor") &&
                            DumpJsonText(tok["post_processor"])
                                    .find("\"" + vocab.tokens[static_cast<size_t>(*vocab.bos_id)] +
                                          "\"") != std::string::npos;
  vocab.add_bos = add_bos.value_or(template_bos || vocab.kind == VocabKind::kSpm);
  vocab.add_eos = add_eos.value_or(false);
  if (vocab.kind == VocabKind::kSpm) {
    const std::string normalizer = DumpJsonText(tok.value("normalizer", nlohmann::json()));
    const std::string pre = DumpJsonText(tok.value("pre_tokenizer", nlohmann::json()));
    vocab.add_space_prefix = normalizer.find("Prepend") != std::string::npos ||
                             (pre.find("Metaspace") != std::string::npos &&
                              pre.find("\"prepend_scheme\":\"never\"") == std::string::npos);
  }
  vocab.chat_template = ChatTemplate(tc);
  REPRISE_RETURN_IF_ERROR(vocab.Validate().WithContext(what));
  return vocab;
}

}  // namespace reprise::convert
