#include "support/temp_dir.h"

#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace reprise::testing_support {

TempDir::TempDir() {
  std::string base = std::filesystem::temp_directory_path().string() + "/reprise_test_XXXXXX";
  if (::mkdtemp(base.data()) == nullptr) {
    std::perror("mkdtemp");
    std::abort();
  }
  path_ = base;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::add, ec);
  std::filesystem::remove_all(path_, ec);
}

}  // namespace reprise::testing_support
