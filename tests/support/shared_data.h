// Finds the real trained models and workload texts of ../shared/data for tests.
//
// The folder is looked up in $REPRISE_DATA_DIR, then at the path fixed at configure time
// (the checkout's ../shared/data). Tests that need it skip with a clear message when absent:
//
//   REPRISE_REQUIRE_SHARED_FILE(path, "models/stories260K/stories260K.gguf");
#pragma once

#include <optional>
#include <string>

#include <gtest/gtest.h>

namespace reprise::testing_support {

// The shared data folder, or nullopt when it is not there.
std::optional<std::string> SharedDataDir();

// The absolute path of `relative` inside the shared data folder, or nullopt when missing.
std::optional<std::string> SharedDataFile(const std::string& relative);

}  // namespace reprise::testing_support

// Declares `std::string var` = the path of the shared data file, or skips the test.
#define REPRISE_REQUIRE_SHARED_FILE(var, relative)                                       \
  std::string var;                                                                       \
  do {                                                                                   \
    auto reprise_found_ = ::reprise::testing_support::SharedDataFile(relative);          \
    if (!reprise_found_) {                                                               \
      GTEST_SKIP() << "shared data file '" << (relative)                                 \
                   << "' not found (set REPRISE_DATA_DIR or provide ../shared/data)";    \
    }                                                                                    \
    var = *reprise_found_;                                                               \
  } while (false)
