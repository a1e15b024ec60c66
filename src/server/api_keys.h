// API keys and the namespaces they map to (`--api-key KEY[:NAMESPACE]`). With no key
// configured every request is let in, into the default namespace; with keys, a request must
// carry one (`Authorization: Bearer KEY`, BearerToken) and reuses only its key's namespace's KV.
//
// Thread-safe after construction (read-only).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reprise/status.h"

namespace reprise::server {

// The token of an Authorization header that uses the Bearer scheme: the scheme matched
// without regard to case (RFC 7235), then one or more spaces or tabs, then the token (blanks
// around it dropped). nullopt for another scheme or no token.
std::optional<std::string_view> BearerToken(std::string_view authorization);

class ApiKeys {
 public:
  // `specs` as given on the command line; a key without a namespace gets `default_namespace`.
  // Errors: InvalidArgument (an empty key, a key given twice, a bad namespace name is the
  // engine's to refuse later).
  static Result<ApiKeys> Create(const std::vector<std::string>& specs,
                                const std::string& default_namespace);

  bool enabled() const { return !keys_.empty(); }

  // The namespace of the request whose Authorization header is `authorization`; nullopt when
  // keys are configured and it holds none of them. Compares in time independent of where
  // the keys differ.
  std::optional<std::string> NamespaceOf(std::string_view authorization) const;

 private:
  struct Key {
    std::string key;
    std::string name_space;
  };
  std::vector<Key> keys_;
  std::string default_namespace_;
};

}  // namespace reprise::server
