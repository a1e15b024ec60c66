// libFuzzer target for the Hugging Face import path: safetensors parsing, config.json and
// tokenizer.json import, and the whole checkpoint import. The input holds three parts split
// at the first two 0xFF bytes (never part of valid JSON): config.json, tokenizer.json, then
// model.safetensors (raw bytes); they are written into a folder of their own and imported.
// Never crash, hang or let an exception escape; what the importer writes must be a GGUF
// model that our readers accept (a failure traps).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "base/file_util.h"
#include "base/logging.h"
#include "convert/hf_importer.h"
#include "convert/hf_tokenizer_import.h"
#include "convert/json_util.h"
#include "convert/safetensors_file.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace {

// One folder per fuzzing process, in /dev/shm when there is one: a RAM file system makes the
// many fsyncs of each input (SQLite, atomic writes) free. Removed at exit; the path is never
// destroyed, so that the exit handler can still read it.
const std::string& WorkDir() {
  static const std::string* dir = [] {
    std::error_code ec;
    const std::filesystem::path parent = std::filesystem::is_directory("/dev/shm", ec)
                                             ? std::filesystem::path("/dev/shm")
                                             : std::filesystem::temp_directory_path();
    auto* path = new std::string((parent / "reprise-convert-fuzz-XXXXXX").string());
    if (::mkdtemp(path->data()) == nullptr) std::abort();
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(WorkDir(), ignored);
    });
    return path;
  }();
  return *dir;
}

void Write(const std::string& path, std::string_view bytes) {
  if (!reprise::WriteFileAtomically(path, bytes).ok()) std::abort();
}

void Trap(bool failed) {
  if (failed) __builtin_trap();
}

}  // namespace

// Library warnings (e.g. a dropped special token id) would flood the output, once per input.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  reprise::SetLogLevel(reprise::LogLevel::kSilent);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t first = input.find('\xff');
  const size_t second = first == input.npos ? input.npos : input.find('\xff', first + 1);
  const std::string_view config_json = input.substr(0, first);
  const std::string_view tokenizer_json =
      first == input.npos ? std::string_view() : input.substr(first + 1, second - first - 1);
  const std::string_view safetensors =
      second == input.npos ? std::string_view() : input.substr(second + 1);

  const std::string& dir = WorkDir();
  std::error_code ec;
  std::filesystem::remove(dir + "/out.gguf", ec);
  Write(dir + "/config.json", config_json);
  Write(dir + "/tokenizer.json", tokenizer_json);
  Write(dir + "/model.safetensors", safetensors);

  auto st = reprise::convert::SafetensorsFile::Open(dir + "/model.safetensors");
  if (st.ok()) {
    for (const auto& [name, tensor] : st->tensors()) {
      if (!tensor.data.empty()) {
        volatile uint8_t last = tensor.data.back();
        (void)last;
      }
      (void)tensor.num_elements();
    }
  }

  auto config = reprise::convert::ParseJson(config_json, "config.json");
  if (config.ok()) {
    // The padded size comes from the input, bounded so that the harness stays small.
    int vocab_size = 300;
    if (config->is_object()) {
      auto it = config->find("vocab_size");
      if (it != config->end() && it->is_number_integer()) {
        const int64_t v = it->get<int64_t>();
        if (v > 0 && v <= 4096) vocab_size = static_cast<int>(v);
      }
    }
    auto vocab = reprise::convert::ImportHfTokenizer(dir, *config, vocab_size);
    if (vocab.ok()) (void)reprise::tokenizer::Tokenizer::Create(*std::move(vocab));
  }

  auto summary = reprise::convert::ImportHfModel(dir, dir + "/out.gguf", {});
  if (summary.ok()) {
    auto file = reprise::gguf::GgufFile::Open(dir + "/out.gguf");
    Trap(!file.ok());
    auto model_config = reprise::model::ModelConfig::FromGguf(*file);
    if (!model_config.ok()) {
      std::fprintf(stderr, "imported model rejected: %s\n",
                   model_config.error().ToString().c_str());
      __builtin_trap();
    }
    auto vocab = reprise::tokenizer::ReadVocabFromGguf(*file);
    if (!vocab.ok()) {
      std::fprintf(stderr, "imported vocabulary rejected: %s\n", vocab.error().ToString().c_str());
      __builtin_trap();
    }
  }
  return 0;
}
