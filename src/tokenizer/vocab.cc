#include "tokenizer/vocab.h"

#include <string>

#include "base/logging.h"

namespace reprise::tokenizer {
namespace {

// What an out-of-range special token id in the metadata means for the model.
enum class IdPolicy : uint8_t {
  kReject,  // BOS, EOS, unknown: prompts and stopping depend on them; a bad id is an error
  kDrop,    // EOT, EOM, padding: the model is usable without them; a bad id is dropped with a
            // warning (some converters write the vocabulary size as the padding id)
};

// Reads an optional special token id. -1 (as a signed value, or 0xFFFFFFFF as an unsigned
// 32-bit one) is how converters write "none" and yields nullopt.
Result<std::optional<TokenId>> ReadOptionalId(const gguf::GgufFile& file, std::string_view key,
                                              size_t num_tokens, IdPolicy policy) {
  if (!file.HasKey(key)) return std::optional<TokenId>();
  REPRISE_ASSIGN_OR_RETURN(int64_t id, file.GetI64(key));
  if (id == -1 || id == int64_t{0xFFFFFFFF}) return std::optional<TokenId>();
  if (id >= 0 && static_cast<uint64_t>(id) < num_tokens) {
    return std::optional<TokenId>(static_cast<TokenId>(id));
  }
  const std::string what = "metadata '" + std::string(key) + "' = " + std::to_string(id) +
                           " is not a token id (the vocabulary has " + std::to_string(num_tokens) +
                           " tokens)";
  if (policy == IdPolicy::kReject) return CorruptError(what);
  REPRISE_LOG(kWarning) << what << "; ignored";
  return std::optional<TokenId>();
}

}  // namespace

bool DefaultAddBos(VocabKind kind, std::string_view pre) {
  if (kind == VocabKind::kSpm) return true;
  // The BPE pre-tokenizers for which llama.cpp turns add_bos on (Llama 3 and relatives).
  for (std::string_view name : {"llama3", "llama-v3", "llama-bpe", "falcon3", "pixtral", "tekken",
                                "chameleon", "stablelm2"}) {
    if (pre == name) return true;
  }
  return false;
}

Status Vocab::Validate() const {
  if (tokens.empty()) return CorruptError("tokenizer has no tokens");
  if (tokens.size() > kMaxVocabTokens) {
    return CorruptError("tokenizer has " + std::to_string(tokens.size()) +
                        " tokens; at most 2^30 are supported (token ids are 32-bit)");
  }
  if (!scores.empty() && scores.size() != tokens.size()) {
    return CorruptError("tokenizer.ggml.scores has " + std::to_string(scores.size()) +
                        " entries for " + std::to_string(tokens.size()) + " tokens");
  }
  if (!token_types.empty() && token_types.size() != tokens.size()) {
    return CorruptError("tokenizer.ggml.token_type has " + std::to_string(token_types.size()) +
                        " entries for " + std::to_string(tokens.size()) + " tokens");
  }
  for (TokenType t : token_types) {
    if (static_cast<int32_t>(t) < 0 || static_cast<int32_t>(t) > 6) {
      return CorruptError("tokenizer.ggml.token_type holds an unknown type " +
                          std::to_string(static_cast<int32_t>(t)));
    }
  }
  for (const auto& id : {bos_id, eos_id, eot_id, eom_id, unk_id, pad_id}) {
    if (id && (*id < 0 || static_cast<size_t>(*id) >= tokens.size())) {
      return CorruptError("special token id " + std::to_string(*id) + " out of range");
    }
  }
  if (kind == VocabKind::kBpe && merges.empty()) {
    return CorruptError("BPE tokenizer without tokenizer.ggml.merges");
  }
  return Status::Ok();
}

Result<Vocab> ReadVocabFromGguf(const gguf::GgufFile& file) {
  Vocab vocab;
  if (!file.HasKey("tokenizer.ggml.model")) {
    return NotFoundError("the model file has no tokenizer (tokenizer.ggml.model missing)");
  }
  REPRISE_ASSIGN_OR_RETURN(std::string_view model, file.GetString("tokenizer.ggml.model"));
  if (model == "llama") {
    vocab.kind = VocabKind::kSpm;
  } else if (model == "gpt2") {
    vocab.kind = VocabKind::kBpe;
  } else {
    return UnimplementedError("tokenizer model '" + std::string(model) +
                              "' is not supported (supported: llama, gpt2)");
  }
  REPRISE_ASSIGN_OR_RETURN(std::string_view pre, file.GetStringOr("tokenizer.ggml.pre", ""));
  vocab.pre = std::string(pre);
  REPRISE_ASSIGN_OR_RETURN(auto tokens, file.GetStringArray("tokenizer.ggml.tokens"));
  vocab.tokens.assign(tokens.begin(), tokens.end());
  if (file.HasKey("tokenizer.ggml.scores")) {
    REPRISE_ASSIGN_OR_RETURN(vocab.scores, file.GetF32Array("tokenizer.ggml.scores"));
  }
  if (file.HasKey("tokenizer.ggml.token_type")) {
    REPRISE_ASSIGN_OR_RETURN(auto types, file.GetI32Array("tokenizer.ggml.token_type"));
    vocab.token_types.reserve(types.size());
    for (int32_t t : types) vocab.token_types.push_back(static_cast<TokenType>(t));
  }
  if (file.HasKey("tokenizer.ggml.merges")) {
    REPRISE_ASSIGN_OR_RETURN(auto merges, file.GetStringArray("tokenizer.ggml.merges"));
    vocab.merges.assign(merges.begin(), merges.end());
  }
  const size_t n = vocab.tokens.size();
  constexpr IdPolicy kReject = IdPolicy::kReject, kDrop = IdPolicy::kDrop;
  REPRISE_ASSIGN_OR_RETURN(vocab.bos_id,
                           ReadOptionalId(file, "tokenizer.ggml.bos_token_id", n, kReject));
  REPRISE_ASSIGN_OR_RETURN(vocab.eos_id,
                           ReadOptionalId(file, "tokenizer.ggml.eos_token_id", n, kReject));
  REPRISE_ASSIGN_OR_RETURN(vocab.eot_id,
                           ReadOptionalId(file, "tokenizer.ggml.eot_token_id", n, kDrop));
  REPRISE_ASSIGN_OR_RETURN(vocab.eom_id,
                           ReadOptionalId(file, "tokenizer.ggml.eom_token_id", n, kDrop));
  REPRISE_ASSIGN_OR_RETURN(vocab.unk_id,
                           ReadOptionalId(file, "tokenizer.ggml.unknown_token_id", n, kReject));
  REPRISE_ASSIGN_OR_RETURN(vocab.pad_id,
                           ReadOptionalId(file, "tokenizer.ggml.padding_token_id", n, kDrop));
  if (vocab.kind == VocabKind::kSpm) {
    // llama.cpp's defaults for "llama" vocabularies that do not name their special tokens.
    auto default_id = [&](std::optional<TokenId>& id, std::string_view key, TokenId fallback) {
      if (!id && !file.HasKey(key) && static_cast<size_t>(fallback) < n) id = fallback;
    };
    default_id(vocab.bos_id, "tokenizer.ggml.bos_token_id", 1);
    default_id(vocab.eos_id, "tokenizer.ggml.eos_token_id", 2);
    default_id(vocab.unk_id, "tokenizer.ggml.unknown_token_id", 0);
  }
  REPRISE_ASSIGN_OR_RETURN(vocab.add_bos, file.GetBoolOr("tokenizer.ggml.add_bos_token",
                                                         DefaultAddBos(vocab.kind, vocab.pre)));
  REPRISE_ASSIGN_OR_RETURN(vocab.add_eos, file.GetBoolOr("tokenizer.ggml.add_eos_token", false));
  REPRISE_ASSIGN_OR_RETURN(vocab.add_space_prefix, file.GetBoolOr("tokenizer.ggml.add_space_prefix",
                                                                  vocab.kind == VocabKind::kSpm));
  REPRISE_ASSIGN_OR_RETURN(std::string_view tmpl, file.GetStringOr("tokenizer.chat_template", ""));
  vocab.chat_template = std::string(tmpl);
  REPRISE_RETURN_IF_ERROR(vocab.Validate());
  return vocab;
}

void WriteVocabToGguf(const Vocab& vocab, gguf::GgufWriter& writer) {
  writer.SetString("tokenizer.ggml.model", vocab.kind == VocabKind::kSpm ? "llama" : "gpt2");
  if (!vocab.pre.empty()) writer.SetString("tokenizer.ggml.pre", vocab.pre);
  writer.SetStringArray("tokenizer.ggml.tokens", vocab.tokens);
  if (!vocab.scores.empty()) writer.SetF32Array("tokenizer.ggml.scores", vocab.scores);
  if (!vocab.token_types.empty()) {
    std::vector<int32_t> types;
    types.reserve(vocab.token_types.size());
    for (TokenType t : vocab.token_types) types.push_back(static_cast<int32_t>(t));
    writer.SetI32Array("tokenizer.ggml.token_type", types);
  }
  if (!vocab.merges.empty()) writer.SetStringArray("tokenizer.ggml.merges", vocab.merges);
  auto put_id = [&](std::string_view key, const std::optional<TokenId>& id) {
    if (id) writer.SetU32(key, static_cast<uint32_t>(*id));
  };
  put_id("tokenizer.ggml.bos_token_id", vocab.bos_id);
  put_id("tokenizer.ggml.eos_token_id", vocab.eos_id);
  put_id("tokenizer.ggml.eot_token_id", vocab.eot_id);
  put_id("tokenizer.ggml.eom_token_id", vocab.eom_id);
  put_id("tokenizer.ggml.unknown_token_id", vocab.unk_id);
  put_id("tokenizer.ggml.padding_token_id", vocab.pad_id);
  writer.SetBool("tokenizer.ggml.add_bos_token", vocab.add_bos);
  writer.SetBool("tokenizer.ggml.add_eos_token", vocab.add_eos);
  if (vocab.kind == VocabKind::kSpm) {
    writer.SetBool("tokenizer.ggml.add_space_prefix", vocab.add_space_prefix);
  }
  if (!vocab.chat_template.empty()) {
    writer.SetString("tokenizer.chat_template", vocab.chat_template);
  }
}

}  // namespace reprise::tokenizer
