#include "server/api_keys.h"

namespace reprise::server {
namespace {

// Equal in time that depends on the lengths only.
bool ConstantTimeEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

}  // namespace

Result<ApiKeys> ApiKeys::Create(const std::vector<std::string>& specs,
                                const std::string& default_namespace) {
  ApiKeys keys;
  keys.default_namespace_ = default_namespace;
  for (const std::string& spec : specs) {
    const size_t colon = spec.find(':');
    Key key{spec.substr(0, colon),
            colon == std::string::npos ? default_namespace : spec.substr(colon + 1)};
    if (key.key.empty()) return InvalidArgumentError("an API key must not be empty");
    if (key.name_space.empty()) {
      return InvalidArgumentError("the namespace after ':' of an API key must not be empty");
    }
    for (const Key& other : keys.keys_) {
      if (other.key == key.key) return InvalidArgumentError("an API key is given twice");
    }
    keys.keys_.push_back(std::move(key));
  }
  return keys;
}

std::optional<std::string> ApiKeys::NamespaceOf(std::string_view authorization) const {
  if (keys_.empty()) return default_namespace_;
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.substr(0, kBearer.size()) != kBearer) return std::nullopt;
  const std::string_view given = authorization.substr(kBearer.size());
  std::optional<std::string> found;
  for (const Key& key : keys_) {  // every key is compared, found or not
    if (ConstantTimeEqual(given, key.key) && !found) found = key.name_space;
  }
  return found;
}

}  // namespace reprise::server
