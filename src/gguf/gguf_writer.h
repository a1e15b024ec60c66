// GgufWriter: builds a GGUF version 3 file (metadata, tensor directory, aligned data).
//
// Used by `reprise make-model` and the importers. Keys keep the order in which they were
// first set; setting a key again replaces its value. Tensors are written in the order added.
// The output loads in other GGUF readers (llama.cpp): little-endian, alignment 32 unless
// general.alignment says otherwise.
//
// Thread-compatible.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"
#include "gguf/gguf_types.h"

namespace reprise::gguf {

class GgufWriter {
 public:
  GgufWriter() = default;
  GgufWriter(const GgufWriter&) = delete;
  GgufWriter& operator=(const GgufWriter&) = delete;

  void SetU8(std::string_view key, uint8_t v);
  void SetU32(std::string_view key, uint32_t v);
  void SetI32(std::string_view key, int32_t v);
  void SetU64(std::string_view key, uint64_t v);
  void SetF32(std::string_view key, float v);
  void SetBool(std::string_view key, bool v);
  void SetString(std::string_view key, std::string_view v);
  void SetStringArray(std::string_view key, std::vector<std::string> v);
  void SetF32Array(std::string_view key, std::span<const float> v);
  void SetI32Array(std::string_view key, std::span<const int32_t> v);
  bool HasKey(std::string_view key) const;

  // Adds a tensor; `dims` in GGUF order (dims[0] = row length). `data` must hold exactly the
  // tensor's bytes. Errors: InvalidArgument (bad shape, size mismatch, duplicate name).
  Status AddTensor(std::string_view name, DType dtype, std::vector<uint64_t> dims,
                   std::vector<uint8_t> data);

  size_t num_tensors() const { return tensors_.size(); }

  // Writes the file atomically (temporary name, fsync, rename). Errors: IoError,
  // ResourceExhausted.
  Status WriteToFile(const std::string& path) const;

  // The bytes of the file, for tests and in-memory use.
  std::vector<uint8_t> WriteToBuffer() const;

 private:
  struct Entry {
    std::string key;
    ValueType type = ValueType::kUint8;
    std::vector<uint8_t> scalar;  // little-endian bytes of a scalar
    std::string str;
    ValueType array_type = ValueType::kUint8;
    std::vector<std::string> strings;
    std::vector<uint8_t> raw;  // numeric array payload
    uint64_t array_count = 0;
  };
  struct Tensor {
    std::string name;
    DType dtype;
    std::vector<uint64_t> dims;
    std::vector<uint8_t> data;
  };

  Entry& Slot(std::string_view key);
  void SetScalar(std::string_view key, ValueType type, const void* bytes, size_t size);
  uint64_t Alignment() const;
  template <typename Sink>
  void Emit(Sink& sink) const;

  std::vector<Entry> entries_;
  std::vector<Tensor> tensors_;
};

}  // namespace reprise::gguf
