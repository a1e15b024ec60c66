#include "server/api_keys.h"

#include <cctype>

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

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

}  // namespace

std::optional<std::string_view> BearerToken(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer";
  auto blank_at = [&](size_t i) { return i < authorization.size() && IsBlank(authorization[i]); };
  size_t at = 0;
  while (blank_at(at)) ++at;
  if (authorization.size() - at < kScheme.size()) return std::nullopt;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[at + i])) != kScheme[i]) {
      return std::nullopt;
    }
  }
  at += kScheme.size();
  if (!blank_at(at)) return std::nullopt;  // "Bearerkey" is another scheme
  while (blank_at(at)) ++at;
  size_t end = authorization.size();
  while (end > at && IsBlank(authorization[end - 1])) --end;
  if (end == at) return std::nullopt;
  return authorization.substr(at, end - at);
}

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
  std::optional<std::string_view> given = BearerToken(authorization);
  if (!given) return std::nullopt;
  std::optional<std::string> found;
  for (const Key& key : keys_) {  // every key is compared, found or not
    if (ConstantTimeEqual(*given, key.key) && !found) found = key.name_space;
  }
  return found;
}

}  // namespace reprise::server
