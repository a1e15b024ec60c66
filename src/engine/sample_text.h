// A built-in English text for measurements that need real words rather than random token ids
// (the accuracy benchmark; later, activation calibration): a short children's story, the
// register of the trained test models, followed by plain expository prose. Written for this
// project; no licence strings attached.
#pragma once

#include <string_view>

namespace reprise::engine {

// About 3,000 characters (600-900 tokens with the usual vocabularies).
std::string_view SampleText();

}  // namespace reprise::engine
