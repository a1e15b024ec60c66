// TempDir: a fresh temporary folder for one test, removed with everything in it at the end.
#pragma once

#include <string>

namespace reprise::testing_support {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace reprise::testing_support
