// Tests' shorthand for a reuse session's request path.
#pragma once

#include <gtest/gtest.h>

#include <span>

#include "engine/reuse_session.h"

namespace reprise::engine {

// Prefills `segments` on `session` and stores the prompt's chunks (failures are test
// failures); returns the prefill (empty when it failed).
inline PrefillResult PrefillAndStore(ReuseSession& session,
                                     std::span<const PromptSegment> segments) {
  Result<PrefillResult> prefill = session.Prefill(segments);
  EXPECT_TRUE(prefill.ok()) << prefill.error().ToString();
  if (!prefill.ok()) return {};
  const Result<double> stored = session.StoreChunks(*prefill);
  EXPECT_TRUE(stored.ok()) << stored.error().ToString();
  return std::move(prefill).value();
}

}  // namespace reprise::engine
