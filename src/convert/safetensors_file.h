// SafetensorsFile: a validated, memory-mapped view of a Hugging Face .safetensors file.
//
// Layout: an 8-byte little-endian header length N, N bytes of JSON mapping each tensor name
// to {dtype, shape, data_offsets: [begin, end)} relative to the data after the header, then
// the data. Offsets and sizes are checked against the file; views borrow from the mapping and
// live as long as the SafetensorsFile. Thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/mapped_file.h"
#include "base/status.h"

namespace reprise::convert {

struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::kF32;     // F32, F16 or BF16
  std::vector<uint64_t> shape;   // row-major, outermost first (PyTorch order)
  std::span<const uint8_t> data;
  uint64_t num_elements() const;
};

class SafetensorsFile {
 public:
  // Errors: NotFound, IoError, Corrupt (bad header, offsets outside the file, size mismatch),
  // Unimplemented (element types other than F32/F16/BF16).
  static Result<SafetensorsFile> Open(const std::string& path);

  const std::map<std::string, SafetensorsTensor>& tensors() const { return tensors_; }
  const SafetensorsTensor* Find(const std::string& name) const;
  // The "__metadata__" string map (e.g. tied-weight aliases).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  SafetensorsFile() = default;
  std::unique_ptr<MappedFile> mapped_;
  std::map<std::string, SafetensorsTensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace reprise::convert
