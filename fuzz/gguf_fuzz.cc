// libFuzzer target for the GGUF parser: any byte string must parse or fail with a Status —
// never crash, hang or read out of bounds (run it under ASan/UBSan).
#include <cstddef>
#include <cstdint>
#include <span>

#include "base/logging.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"
#include "model/weight_check.h"
#include "tokenizer/vocab.h"

// Library warnings (e.g. a dropped special token id) would flood the output, once per input.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  reprise::SetLogLevel(reprise::LogLevel::kSilent);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = reprise::gguf::GgufFile::Parse(std::span<const uint8_t>(data, size));
  if (!file.ok()) return 0;
  // Everything reachable from a parsed file must be safe too.
  for (const auto& entry : file->metadata()) (void)entry.value.ToShortString();
  for (const auto& tensor : file->tensors()) {
    if (!tensor.data.empty()) {
      volatile uint8_t last = tensor.data.back();
      (void)last;
    }
  }
  (void)reprise::model::ModelConfig::FromGguf(*file);
  (void)reprise::model::CheckWeightsFinite(*file);
  (void)reprise::tokenizer::ReadVocabFromGguf(*file);
  return 0;
}
