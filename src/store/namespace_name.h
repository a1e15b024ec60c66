// Namespace names: which strings may name a namespace of the store (one app or API key).
//
// A valid name is non-empty, at most kMaxNamespaceNameBytes bytes of valid UTF-8 (no overlong
// forms, no surrogates, nothing above U+10FFFF) and holds no control character (U+0000 to
// U+001F, U+007F to U+009F). The store enforces this where a namespace is created (inserting
// chunks); rows that already carry other names stay listable and clearable.
//
// Pure function, thread-safe.
#pragma once

#include <cstddef>
#include <string_view>

#include "base/status.h"

namespace reprise::store {

inline constexpr size_t kMaxNamespaceNameBytes = 128;

// Ok, or InvalidArgument saying what is wrong with `name`.
Status ValidateNamespaceName(std::string_view name);

}  // namespace reprise::store
