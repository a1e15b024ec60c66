#include "convert/safetensors_file.h"

#include <cstring>

#include "base/checked_math.h"
#include "convert/json_util.h"

namespace reprise::convert {

uint64_t SafetensorsTensor::num_elements() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

const SafetensorsTensor* SafetensorsFile::Find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

Result<SafetensorsFile> SafetensorsFile::Open(const std::string& path) {
  SafetensorsFile file;
  REPRISE_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::Open(path));
  file.mapped_ = std::make_unique<MappedFile>(std::move(mapped));
  std::span<const uint8_t> bytes = file.mapped_->data();
  if (bytes.size() < 8) return CorruptError(path + ": too short for a safetensors header");
  uint64_t header_bytes;
  std::memcpy(&header_bytes, bytes.data(), 8);
  if (header_bytes > bytes.size() - 8 || header_bytes > (uint64_t{100} << 20)) {
    return CorruptError(path + ": header length " + std::to_string(header_bytes) +
                        " exceeds the file");
  }
  const std::string_view header(reinterpret_cast<const char*>(bytes.data() + 8), header_bytes);
  REPRISE_ASSIGN_OR_RETURN(nlohmann::json json, ParseJson(header, path + " header"));
  if (!json.is_object()) return CorruptError(path + ": header is not a JSON object");
  const uint64_t data_start = 8 + header_bytes;
  const uint64_t data_size = bytes.size() - data_start;
  for (auto it = json.begin(); it != json.end(); ++it) {
    const std::string& name = it.key();
    const std::string what = path + " tensor '" + name + "'";
    if (name == "__metadata__") {
      if (!it->is_object()) continue;
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (m->is_string()) file.metadata_[m.key()] = m->get<std::string>();
      }
      continue;
    }
    REPRISE_ASSIGN_OR_RETURN(std::string dtype, RequiredJson<std::string>(*it, "dtype", what));
    REPRISE_ASSIGN_OR_RETURN(std::vector<uint64_t> shape,
                             RequiredJson<std::vector<uint64_t>>(*it, "shape", what));
    REPRISE_ASSIGN_OR_RETURN(std::vector<uint64_t> offsets,
                             RequiredJson<std::vector<uint64_t>>(*it, "data_offsets", what));
    SafetensorsTensor tensor;
    tensor.name = name;
    uint32_t element_bytes;
    if (dtype == "F32") {
      tensor.dtype = DType::kF32;
      element_bytes = 4;
    } else if (dtype == "F16") {
      tensor.dtype = DType::kF16;
      element_bytes = 2;
    } else if (dtype == "BF16") {
      tensor.dtype = DType::kBF16;
      element_bytes = 2;
    } else {
      return UnimplementedError(what + ": element type " + dtype +
                                " is not supported (F32, F16, BF16)");
    }
    if (offsets.size() != 2 || offsets[0] > offsets[1] || offsets[1] > data_size) {
      return CorruptError(what + ": data_offsets outside the file's " +
                          std::to_string(data_size) + " data bytes");
    }
    uint64_t elements = 1;
    for (uint64_t d : shape) {
      auto product = CheckedMul(elements, d);
      if (!product) return CorruptError(what + ": shape overflows");
      elements = *product;
    }
    auto expected = CheckedMul(elements, element_bytes);
    if (!expected || *expected != offsets[1] - offsets[0]) {
      return CorruptError(what + ": " + std::to_string(offsets[1] - offsets[0]) +
                          " data bytes for its shape of " + std::to_string(elements) +
                          " elements");
    }
    tensor.shape = std::move(shape);
    tensor.data = bytes.subspan(data_start + offsets[0], offsets[1] - offsets[0]);
    file.tensors_.emplace(name, std::move(tensor));
  }
  return file;
}

}  // namespace reprise::convert
