#include "convert/llama2c_importer.h"

#include <sys/stat.h>

#include <cstring>
#include <filesystem>

#include "base/mapped_file.h"
#include "convert/tensor_encoder.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/vocab.h"

namespace reprise::convert {
namespace {

using tokenizer::TokenType;

struct Header {
  int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
};

Result<tokenizer::Vocab> ReadTokenizer(const std::string& path, int vocab_size) {
  REPRISE_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
  std::span<const uint8_t> bytes = file.data();
  size_t offset = 0;
  auto read = [&](void* out, size_t n, const char* field) -> Status {
    if (n > bytes.size() - offset) {
      return CorruptError(path + ": " + field + " at offset " + std::to_string(offset) +
                          " runs past the end of the file");
    }
    std::memcpy(out, bytes.data() + offset, n);
    offset += n;
    return Status::Ok();
  };
  uint32_t max_token_length;
  REPRISE_RETURN_IF_ERROR(read(&max_token_length, 4, "max_token_length"));
  tokenizer::Vocab vocab;
  vocab.kind = tokenizer::VocabKind::kSpm;
  for (int i = 0; i < vocab_size; ++i) {
    float score;
    uint32_t length;
    REPRISE_RETURN_IF_ERROR(read(&score, 4, "token score"));
    REPRISE_RETURN_IF_ERROR(read(&length, 4, "token length"));
    if (length > max_token_length || length > 1024) {
      return CorruptError(path + ": token " + std::to_string(i) + " has length " +
                          std::to_string(length) + " over max_token_length " +
                          std::to_string(max_token_length));
    }
    std::string text(length, '\0');
    REPRISE_RETURN_IF_ERROR(read(text.data(), length, "token text"));
    // llama2.c writes BOS/EOS with surrounding newlines and spaces as ' '; GGUF SPM vocabs
    // use the plain markers and U+2581.
    if (text == "\n<s>\n") text = "<s>";
    if (text == "\n</s>\n") text = "</s>";
    std::string piece;
    for (char c : text) {
      if (c == ' ') piece += "\xe2\x96\x81";
      else piece += c;
    }
    TokenType type = TokenType::kNormal;
    if (i == 0) type = TokenType::kUnknown;
    else if (piece == "<s>" || piece == "</s>") type = TokenType::kControl;
    else if (piece.size() == 6 && piece.compare(0, 3, "<0x") == 0 && piece[5] == '>')
      type = TokenType::kByte;
    vocab.tokens.push_back(std::move(piece));
    vocab.scores.push_back(score);
    vocab.token_types.push_back(type);
  }
  vocab.unk_id = 0;
  for (size_t i = 0; i < vocab.tokens.size(); ++i) {
    if (vocab.tokens[i] == "<s>") vocab.bos_id = static_cast<int32_t>(i);
    if (vocab.tokens[i] == "</s>") vocab.eos_id = static_cast<int32_t>(i);
  }
  vocab.add_bos = true;
  vocab.add_space_prefix = true;
  REPRISE_RETURN_IF_ERROR(vocab.Validate().WithContext(path));
  return vocab;
}

}  // namespace

Result<ImportSummary> ImportLlama2c(const std::string& model_path,
                                    const std::string& tokenizer_path, const std::string& out_path,
                                    const Llama2cImportOptions& options) {
  REPRISE_ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(model_path));
  std::span<const uint8_t> bytes = file.data();
  Header h;
  if (bytes.size() < sizeof(h)) return CorruptError(model_path + ": shorter than its header");
  std::memcpy(&h, bytes.data(), sizeof(h));
  const bool shared_classifier = h.vocab_size > 0;
  const int64_t vocab = h.vocab_size > 0 ? h.vocab_size : -static_cast<int64_t>(h.vocab_size);
  auto in_range = [](int64_t v, int64_t hi) { return v > 0 && v <= hi; };
  if (!in_range(h.dim, 1 << 16) || !in_range(h.hidden_dim, 1 << 18) ||
      !in_range(h.n_layers, 1024) || !in_range(h.n_heads, 1024) ||
      !in_range(h.n_kv_heads, 1024) || !in_range(vocab, 1 << 21) ||
      !in_range(h.seq_len, 1 << 22) || h.dim % h.n_heads != 0 || h.n_heads % h.n_kv_heads != 0 ||
      (h.dim / h.n_heads) % 2 != 0) {
    return CorruptError(model_path + ": header values out of range (dim " +
                        std::to_string(h.dim) + ", layers " + std::to_string(h.n_layers) +
                        ", heads " + std::to_string(h.n_heads) + "/" +
                        std::to_string(h.n_kv_heads) + ", vocab " + std::to_string(h.vocab_size) +
                        ")");
  }
  const uint64_t dim = static_cast<uint64_t>(h.dim);
  const uint64_t hidden = static_cast<uint64_t>(h.hidden_dim);
  const uint64_t layers = static_cast<uint64_t>(h.n_layers);
  const uint64_t head = dim / static_cast<uint64_t>(h.n_heads);
  const uint64_t kv_dim = head * static_cast<uint64_t>(h.n_kv_heads);
  const uint64_t v = static_cast<uint64_t>(vocab);
  const uint64_t seq = static_cast<uint64_t>(h.seq_len);
  // Floats in file order, including the unused RoPE tables (seq_len * head / 2, twice).
  const uint64_t floats = v * dim + layers * dim + layers * dim * dim + 2 * layers * dim * kv_dim +
                          layers * dim * dim + layers * dim + 3 * layers * dim * hidden + dim +
                          seq * head + (shared_classifier ? 0 : v * dim);
  const uint64_t expected = sizeof(Header) + floats * 4;
  if (bytes.size() != expected) {
    return CorruptError(model_path + ": " + std::to_string(bytes.size()) +
                        " bytes, but its header implies " + std::to_string(expected));
  }
  REPRISE_ASSIGN_OR_RETURN(tokenizer::Vocab vocab_data,
                           ReadTokenizer(tokenizer_path, static_cast<int>(vocab)));

  gguf::GgufWriter w;
  w.SetString("general.architecture", "llama");
  w.SetString("general.name", std::filesystem::path(model_path).stem().string());
  w.SetU32("llama.context_length", static_cast<uint32_t>(h.seq_len));
  w.SetU32("llama.embedding_length", static_cast<uint32_t>(h.dim));
  w.SetU32("llama.feed_forward_length", static_cast<uint32_t>(h.hidden_dim));
  w.SetU32("llama.block_count", static_cast<uint32_t>(h.n_layers));
  w.SetU32("llama.attention.head_count", static_cast<uint32_t>(h.n_heads));
  w.SetU32("llama.attention.head_count_kv", static_cast<uint32_t>(h.n_kv_heads));
  w.SetU32("llama.rope.dimension_count", static_cast<uint32_t>(head));
  w.SetF32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.SetF32("llama.rope.freq_base", 10000.0f);
  tokenizer::WriteVocabToGguf(vocab_data, w);
  const DType matrix_type = options.weight_type.value_or(DType::kF32);
  SetFileType(w, matrix_type);

  const float* cursor = reinterpret_cast<const float*>(bytes.data() + sizeof(Header));
  auto take = [&](uint64_t count) {
    std::span<const float> out(cursor, count);
    cursor += count;
    return out;
  };
  // The embedding, nine tensors per layer, the output norm and the classifier.
  const int64_t num_tensors = 3 + 9 * static_cast<int64_t>(layers);
  int64_t tensors_done = 0;
  auto report = [&] {
    ReportProgress(options.progress, "converting", tensors_done, num_tensors, "tensors");
  };
  auto layer_name = [](uint64_t l, const char* suffix) {
    return "blk." + std::to_string(l) + "." + suffix;
  };
  // Adds one [rows, row_length] matrix per layer from consecutive floats.
  auto add_per_layer = [&](const char* suffix, uint64_t rows, uint64_t row_length,
                           DType type) -> Status {
    for (uint64_t l = 0; l < layers; ++l) {
      std::vector<uint64_t> dims = row_length == 1 ? std::vector<uint64_t>{rows}
                                                   : std::vector<uint64_t>{row_length, rows};
      REPRISE_RETURN_IF_ERROR(
          AddEncodedTensor(w, layer_name(l, suffix), dims, take(rows * row_length), type));
      ++tensors_done;
      report();
    }
    return Status::Ok();
  };
  report();
  const std::span<const float> embedding = take(v * dim);
  REPRISE_RETURN_IF_ERROR(AddEncodedTensor(w, "token_embd.weight", {dim, v}, embedding,
                                           matrix_type));
  ++tensors_done;
  report();
  REPRISE_RETURN_IF_ERROR(add_per_layer("attn_norm.weight", dim, 1, DType::kF32));
  REPRISE_RETURN_IF_ERROR(add_per_layer("attn_q.weight", dim, dim, matrix_type));
  REPRISE_RETURN_IF_ERROR(add_per_layer("attn_k.weight", kv_dim, dim, matrix_type));
  REPRISE_RETURN_IF_ERROR(add_per_layer("attn_v.weight", kv_dim, dim, matrix_type));
  REPRISE_RETURN_IF_ERROR(add_per_layer("attn_output.weight", dim, dim, matrix_type));
  REPRISE_RETURN_IF_ERROR(add_per_layer("ffn_norm.weight", dim, 1, DType::kF32));
  REPRISE_RETURN_IF_ERROR(add_per_layer("ffn_gate.weight", hidden, dim, matrix_type));
  REPRISE_RETURN_IF_ERROR(add_per_layer("ffn_down.weight", dim, hidden, matrix_type));
  REPRISE_RETURN_IF_ERROR(add_per_layer("ffn_up.weight", hidden, dim, matrix_type));
  REPRISE_RETURN_IF_ERROR(AddEncodedTensor(w, "output_norm.weight", {dim}, take(dim),
                                           DType::kF32));
  take(seq * head);  // freq_cis_real and freq_cis_imag: recomputed at run time
  // Like llama.cpp's llama2.c converter, always write output.weight (a copy when shared).
  const std::span<const float> classifier = shared_classifier ? embedding : take(v * dim);
  REPRISE_RETURN_IF_ERROR(AddEncodedTensor(w, "output.weight", {dim, v}, classifier,
                                           matrix_type));
  tensors_done = num_tensors;  // with the output norm
  report();
  ReportProgress(options.progress, "writing the file", 0, 1, "files");
  REPRISE_RETURN_IF_ERROR(w.WriteToFile(out_path));
  ReportProgress(options.progress, "writing the file", 1, 1, "files");
  ImportSummary summary;
  summary.architecture = "llama";
  summary.num_tensors = static_cast<int>(w.num_tensors());
  summary.vocab_size = static_cast<int>(vocab);
  struct stat st;
  if (::stat(out_path.c_str(), &st) == 0) summary.file_bytes = static_cast<uint64_t>(st.st_size);
  return summary;
}

}  // namespace reprise::convert
